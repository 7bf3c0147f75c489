import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPaymentsClient } from '../../lib/express/index.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { AheadClock } from '../support/clock-ahead.js';
import { quietLogger } from '../support/outcome-kit.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

// An instance that starts while the store is down has never measured its offset to the store's
// clock: it reads its own, which may be an hour off. The store then comes back between the pass's
// sync (which failed) and its queue read (which works). Found by the simulation (seed 23997): the
// pass took every entry due within the hour and wrote them back due an hour late, so nothing
// reconciled them within the stated bound.

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

let sandbox: PaymentsSandbox;
beforeAll(async () => {
  sandbox = await PaymentsSandbox.start();
});
afterAll(() => sandbox.close());

/**
 * A memory store whose clock does not answer while `clockDown` (its other calls do: it just came
 * back); after `refusals` readings refused, it answers again.
 */
function storeWithClock(refusals = Number.POSITIVE_INFINITY): {
  store: PaymentsStore;
  raw: MemoryPaymentsStore;
  setClockDown(down: boolean): void;
} {
  const raw = new MemoryPaymentsStore();
  let clockDown = true;
  const refuse = () => {
    if (--refusals <= 0) clockDown = false;
    return Promise.reject(new Error('store down'));
  };
  const store = new Proxy(raw, {
    get(target, key, receiver) {
      if (key === 'now') return () => (clockDown ? refuse() : target.now());
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, raw, setClockDown: (down) => void (clockDown = down) };
}

describe("an instance that never reached the store's clock", () => {
  it('takes nothing from the queue and claims nothing until the clock answers; then its time is the store’s', async () => {
    const { store, raw, setClockDown } = storeWithClock();
    const realNow = Date.now();
    // A payment another instance queued, due in 30 minutes of the store's time.
    const paymentId = 'pay_clock_unknown';
    const dueAt = realNow + 30 * MINUTE_MS;
    await raw.schedulePending(
      { paymentId, amount: '12500', createdAt: new Date(realNow).toISOString(), checks: 0 },
      dueAt,
    );
    // This instance's clock is an hour ahead of the store's.
    const clock = new AheadClock();
    clock.ahead(HOUR_MS);
    const logs: string[] = [];
    const client = createPaymentsClient({
      ...sandbox.options(),
      store,
      clock,
      logger: quietLogger(logs),
      reconciliation: { enabled: false },
    });
    client.setHandlers(outcomeHandlers(async () => undefined));
    const verifies = () => sandbox.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/')).length;
    try {
      expect(await client.runReconciliation()).toEqual({ checked: 0, settled: 0 });
      await expect(client.reconcilePayment(paymentId)).rejects.toMatchObject({ name: 'PaymentsStoreUnavailableError' });
      expect(verifies()).toBe(0);
      expect(logs.some((line) => line.includes("the store's clock is out of reach"))).toBe(true);

      // The clock answers: the instance reads the store's time, an hour behind its own.
      setClockDown(false);
      expect(await client.runReconciliation()).toEqual({ checked: 0, settled: 0 });
      expect(verifies()).toBe(0);
      // The entry is still due when it was: not taken, not moved.
      expect(await raw.takeDuePending(dueAt - MINUTE_MS, 10, MINUTE_MS)).toEqual([]);
      expect((await raw.takeDuePending(dueAt + MINUTE_MS, 10, MINUTE_MS)).map((e) => e.paymentId)).toEqual([paymentId]);
    } finally {
      await client.close();
    }
  });

  // Found by the simulation (seed 2487): generatePayment read its times on its own clock (the
  // store's clock out of reach), the store came back before the first write, and the entry was
  // written as it was, due an hour late: nothing reconciled the payment within the stated bound.
  it('records a payment generated before its clock reached the store’s on the store’s time, the store back by its first write', async () => {
    const { store, raw } = storeWithClock(2);
    const clock = new AheadClock();
    clock.ahead(HOUR_MS);
    const client = createPaymentsClient({
      ...sandbox.options(),
      store,
      clock,
      logger: quietLogger([]),
      reconciliation: { enabled: false },
    });
    try {
      const before = Date.now();
      const { paymentId } = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-unsynced' });
      const entry = await raw.findPending(paymentId);
      expect(entry).toBeDefined();
      expect(Math.abs(Date.parse(entry?.createdAt ?? '') - before)).toBeLessThan(MINUTE_MS);
    } finally {
      await client.close();
    }
  });
});
