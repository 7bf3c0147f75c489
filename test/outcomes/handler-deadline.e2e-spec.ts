// A handler that never returns: after `handlers.timeoutMs` (on the engine's clock, moved here by
// hand) its attempt stops renewing the payment's claim and ends as a failed run (recorded,
// released, re-checked later like any failed handler), the handler's promise is abandoned with an
// error logged when it ends, and `close()` returns instead of waiting for it for ever.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { MemoryPaymentsStore, type Clock, type ClaimOutcome } from '../../lib/store/index.js';
import type { ClockTimer } from '../../lib/core/time/time.clock.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

/** A clock that moves only when told: timers fire in order as `advance` passes their time. */
class ManualClock implements Clock {
  #now = Date.UTC(2026, 0, 1);
  #next = 1;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): ClockTimer {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { id } as unknown as ClockTimer;
  }
  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer !== undefined) this.#timers.delete((timer as unknown as { id: number }).id);
  }
  /** Moves time forward by `ms`, firing each timer due on the way (and letting what it started run). */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await ioTurn();
      const due = [...this.#timers.entries()].filter(([, t]) => t.at <= target).sort(([, a], [, b]) => a.at - b.at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].fn();
    }
    this.#now = target;
    await ioTurn();
  }
}
const ioTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A memory store that notes who claimed what, and when (on the test's clock). */
class NotingStore extends MemoryPaymentsStore {
  readonly claimCalls: Array<{ key: string; owner: string; at: number }> = [];
  readonly #clock: Clock;
  constructor(clock: Clock) {
    super();
    this.#clock = clock;
  }
  override claim(key: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    this.claimCalls.push({ key, owner, at: this.#clock.now() });
    return super.claim(key, owner, leaseMs);
  }
}

const LEASE_MS = 3_000;
const DEADLINE_MS = 5_000;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** A client whose confirmation handler never returns unless the test settles it. */
async function hangingShop(handlers: { timeoutMs?: number } = { timeoutMs: DEADLINE_MS }, reconcile = false) {
  const sandbox = await PaymentsSandbox.start();
  open.push(sandbox);
  const clock = new ManualClock();
  const store = new NotingStore(clock);
  const errors: string[] = [];
  const client: PaymentsClient = createPaymentsClient(
    sandbox.options({
      clock,
      store,
      reconciliation: { enabled: reconcile },
      webhook: { leaseMs: LEASE_MS },
      handlers,
      logger: { log: () => undefined, warn: () => undefined, error: (m: string) => void errors.push(m) },
    }),
  );
  // Closed with the clock moving, so that handlers still hanging at the end are cut off too.
  open.push({
    close: async () => {
      let closed = false;
      const closing = client.close().then(() => void (closed = true));
      while (!closed) await clock.advance(1_000);
      await closing;
    },
  });
  const calls: Array<{ fail(error: Error): void }> = [];
  let started: () => void = () => undefined;
  createWebhookRouter({
    client,
    onPaymentConfirmed: () =>
      new Promise<void>((_resolve, reject) => {
        calls.push({ fail: reject });
        started();
      }),
  });
  const handlerStarted = () => new Promise<void>((resolve) => (started = resolve));
  const { paymentId } = await client.generatePayment({ amount: '7000', developerTrackingId: 'order-hang' });
  await sandbox.completePayment(paymentId, { requireDelivery: false });
  return { client, clock, store, errors, calls, handlerStarted, paymentId };
}

describe('a handler that never returns', () => {
  it('is cut off at handlers.timeoutMs: the claim is no longer renewed, the run fails, and it runs again later', async () => {
    const shop = await hangingShop({ timeoutMs: DEADLINE_MS }, true);
    const running = shop.handlerStarted();
    const first = shop.client.reconcilePayment(shop.paymentId);
    await running;
    // The attempt running the handlers: the holder of the payment's claim.
    const { owner } = shop.store.claimCalls.filter((c) => c.key.includes(shop.paymentId)).at(-1)!;
    const startedAt = shop.clock.now();

    await shop.clock.advance(DEADLINE_MS);
    await expect(first).resolves.toMatchObject({
      handled: false,
      error: expect.stringContaining(`did not finish within ${DEADLINE_MS} ms`),
    });
    // Renewed while it ran (every third of the lease), then never again.
    expect(shop.store.claimCalls.filter((c) => c.owner === owner && c.at > startedAt).length).toBeGreaterThan(0);
    await shop.clock.advance(4 * LEASE_MS);
    expect(shop.store.claimCalls.filter((c) => c.owner === owner && c.at > startedAt + DEADLINE_MS)).toEqual([]);
    const record = await shop.store.getOutcome(shop.paymentId);
    expect(record).toMatchObject({ handlers: 'failed' });
    // The usual failure path: re-checked soon (the reconciliation sweep), the handlers run again (and hang again).
    expect(shop.calls.length).toBeGreaterThanOrEqual(2);

    // The abandoned handler ends late: its error is logged, nothing else happens.
    shop.calls[0].fail(new Error('the late failure of an abandoned handler'));
    await shop.clock.advance(DEADLINE_MS);
    expect(shop.errors).toContainEqual(expect.stringContaining('the late failure of an abandoned handler'));
    expect(shop.errors.join('\n')).toContain(shop.paymentId);
  });

  it('does not hold close() for ever: it returns once the deadline has passed', async () => {
    const shop = await hangingShop();
    const running = shop.handlerStarted();
    void shop.client.reconcilePayment(shop.paymentId);
    await running;
    let closed = false;
    const closing = shop.client.close().then(() => void (closed = true));
    await shop.clock.advance(DEADLINE_MS - 1);
    expect(closed).toBe(false);
    await shop.clock.advance(1);
    await closing;
    expect(closed).toBe(true);
  });

  it('has a default deadline of 60 s', async () => {
    const shop = await hangingShop({});
    const running = shop.handlerStarted();
    const first = shop.client.reconcilePayment(shop.paymentId);
    await running;
    await shop.clock.advance(60_000);
    await expect(first).resolves.toMatchObject({ handled: false, error: expect.stringContaining('60000 ms') });
  });
});
