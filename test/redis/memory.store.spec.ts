import { describe, expect, it } from '@jest/globals';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PendingPayment } from '../../lib/core/store/store.types.js';
import { describeStoreContract } from '../support/store-contract.js';

describeStoreContract(
  'MemoryPaymentsStore',
  async () => {
    const store = new MemoryPaymentsStore();
    return { store, cleanup: () => store.close() };
  },
  {
    story: true,
    storyRetention: async (story) => {
      const store = new MemoryPaymentsStore({ story });
      return { store, cleanup: () => store.close() };
    },
  },
);

describe('MemoryPaymentsStore bounds', () => {
  const DAY_MS = 86_400_000;

  it('keeps at most maxEvents delivery records through 50 000 distinct deliveries', async () => {
    const store = new MemoryPaymentsStore({ maxEvents: 1000 });
    let largest = 0;
    let handled = 0;
    // Tallied rather than asserted per iteration: 100 000 expect() calls would dominate the run.
    for (let i = 0; i < 50_000; i++) {
      const claimed = await store.claim(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
      const done = await store.markDone(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
      if (claimed === 'claimed' && done) handled++;
      largest = Math.max(largest, store.size);
    }
    expect(handled).toBe(50_000);
    expect(largest).toBeLessThanOrEqual(1000);
    expect(store.size).toBeLessThanOrEqual(1000);
    // Least recently used go first: the newest are still remembered, the oldest were evicted
    // (the documented price of the bound: a very late duplicate would run again).
    await expect(store.claim('payment.confirmed:49999', 'late', DAY_MS)).resolves.toBe('done');
    await expect(store.claim('payment.confirmed:0', 'late', DAY_MS)).resolves.toBe('claimed');
    await store.close();
  });

  it('keeps at most maxBindings bindings, on top of maxEvents records', async () => {
    const store = new MemoryPaymentsStore({ maxBindings: 500, maxEvents: 200 });
    for (let i = 0; i < 5000; i++) {
      await store.saveBinding(
        `token-${i}`,
        { paymentId: `pay-${i}`, amount: '1000', createdAt: new Date(0).toISOString() },
        DAY_MS,
      );
      await store.claim(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
      await store.markDone(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
    }
    expect(store.size).toBeLessThanOrEqual(700);
    expect((await store.findBinding('token-4999'))?.paymentId).toBe('pay-4999');
    await expect(store.findBinding('token-0')).resolves.toBeUndefined();
    await store.close();
  });

  it('never evicts a claim in progress, however many confirmations are handled meanwhile', async () => {
    const store = new MemoryPaymentsStore({ maxEvents: 100 });
    await expect(store.claim('payment.confirmed:slow', 'first', DAY_MS)).resolves.toBe('claimed');
    for (let i = 0; i < 1000; i++) {
      await store.claim(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
      await store.markDone(`payment.confirmed:${i}`, `owner-${i}`, DAY_MS);
    }
    // A concurrent duplicate of the slow one must still be told it is busy.
    await expect(store.claim('payment.confirmed:slow', 'duplicate', DAY_MS)).resolves.toBe('busy');
    await expect(store.markDone('payment.confirmed:slow', 'first', DAY_MS)).resolves.toBe(true);
    expect(store.size).toBeLessThanOrEqual(100);
    await store.close();
  });

  it('keeps at most maxRateLimits rate-limit slots, the least recently taken going first', async () => {
    const store = new MemoryPaymentsStore({ maxRateLimits: 100 });
    for (let i = 0; i < 1000; i++) await expect(store.rateLimits.take(`unsigned:${i}`, DAY_MS)).resolves.toBe(true);
    expect(store.size).toBe(100);
    await expect(store.rateLimits.take('unsigned:999', DAY_MS)).resolves.toBe(false);
    await expect(store.rateLimits.take('unsigned:0', DAY_MS)).resolves.toBe(true);
    await store.close();
  });

  it('takes from a queue of maxPending entries, earliest due first, after evictions and 5 000 moves of one entry', async () => {
    const store = new MemoryPaymentsStore({ maxPending: 100 });
    const entry = (paymentId: string): PendingPayment => ({
      paymentId,
      amount: '1000',
      createdAt: new Date(0).toISOString(),
      checks: 0,
    });
    // 300 queued into 100 places: the first 200 are evicted and must not come back from the due index.
    for (let i = 0; i < 300; i++) await store.schedulePending(entry(`p${i}`), 1_000 + (i % 7));
    // One entry moved 5 000 times (each move leaves a stale due time behind), finally due last.
    for (let i = 0; i < 5_000; i++) await store.schedulePending(entry('p299'), 2_000 + i);
    const taken = (await store.takeDuePending(10_000, 1_000, DAY_MS)).map((t) => t.paymentId);
    const expected = Array.from({ length: 99 }, (_, k) => 200 + k)
      .sort((a, b) => (a % 7) - (b % 7) || a - b)
      .map((i) => `p${i}`);
    expect(taken).toEqual([...expected, 'p299']);
    await expect(store.takeDuePending(10_000, 1_000, DAY_MS)).resolves.toEqual([]);
    await expect(store.countPending()).resolves.toBe(100);
  });

  it('keeps its data on close (a store passed in may serve another app, or the same app again)', async () => {
    const store = new MemoryPaymentsStore();
    await store.saveBinding('t', { paymentId: 'p', amount: '1', createdAt: new Date(0).toISOString() }, DAY_MS);
    await store.claim('e', 'o', DAY_MS);
    expect(store.size).toBe(2);
    await store.close();
    expect(store.size).toBe(2);
    await expect(store.findBinding('t')).resolves.toMatchObject({ paymentId: 'p' });
  });
});

describe('MemoryPaymentsStore on an injected clock', () => {
  // A clock the test moves: lru-cache would otherwise reuse a reading of it for a real millisecond.
  const manual = () => {
    let now = 1_800_000_000_000;
    const clock = { now: () => now, setTimeout: () => undefined as never, clearTimeout: () => undefined };
    return { clock, advance: (ms: number) => (now += ms) };
  };

  it('holds entries in proportion to the retention window, not to the time served: expired ones are swept as it writes', async () => {
    // A shop of 500 payments a day for 120 days, each leaving a 7-day binding and a 30-day done
    // marker, order settlement and outcome record, under caps it never reaches: what is held must
    // follow the windows (7 × 500 + 3 × 30 × 500), not the 120 days' 240 000 entries.
    const DAY_MS = 86_400_000;
    const PER_DAY = 500;
    const { clock, advance } = manual();
    const store = new MemoryPaymentsStore({ clock, maxOutcomes: 1_000_000 });
    const bindingTtl = 7 * DAY_MS;
    const doneTtl = 30 * DAY_MS;
    let largest = 0;
    for (let day = 0; day < 120; day++) {
      for (let i = 0; i < PER_DAY; i++) {
        const n = day * PER_DAY + i;
        await store.saveBinding(`token-${n}`, { paymentId: `pay-${n}`, amount: '1000', createdAt: '' }, bindingTtl);
        await store.claim(`outcome:pay-${n}`, 'owner', 60_000);
        await store.settleOrder(`order-${n}`, { paymentId: `pay-${n}`, amount: '1000' }, doneTtl);
        await store.finishOutcome({
          eventKey: `outcome:pay-${n}`,
          owner: 'owner',
          claim: 'done',
          doneTtlMs: doneTtl,
          record: {
            paymentId: `pay-${n}`,
            outcome: 'confirmed',
            status: 'SUCCESS',
            source: 'webhook',
            handlers: 'succeeded',
            updatedAt: '',
          },
          attemptsAdded: 1,
          recordTtlMs: doneTtl,
        });
      }
      largest = Math.max(largest, store.size);
      advance(DAY_MS);
    }
    const window = 7 * PER_DAY + 3 * 30 * PER_DAY;
    // A sweep runs once as many writes as there were entries after the last one (up to two
    // entries a write): at most three windows' worth between sweeps.
    expect(largest).toBeLessThanOrEqual(3 * window);
    expect(store.size).toBeLessThanOrEqual(3 * window);
    // Live entries stay: the newest binding, an outcome record of 29 days ago.
    await expect(store.findBinding('token-59999')).resolves.toMatchObject({ paymentId: 'pay-59999' });
    await expect(store.getOutcome(`pay-${91 * PER_DAY}`)).resolves.toMatchObject({ outcome: 'confirmed' });
    await store.close();
  });

  it('sees a lease, a binding and a rate limit expire the moment its clock passes them, within one real millisecond', async () => {
    const { clock, advance } = manual();
    const store = new MemoryPaymentsStore({ clock });
    await store.saveBinding(
      'token-1',
      { paymentId: 'pay-1', amount: '1000', createdAt: new Date(clock.now()).toISOString() },
      1_000,
    );
    await expect(store.claim('payment.confirmed:pay-1', 'first', 1_000)).resolves.toBe('claimed');
    await expect(store.rateLimits.take('slot', 1_000)).resolves.toBe(true);
    await expect(store.findBinding('token-1')).resolves.toBeDefined();
    advance(1_001);
    await expect(store.findBinding('token-1')).resolves.toBeUndefined();
    await expect(store.claim('payment.confirmed:pay-1', 'second', 1_000)).resolves.toBe('claimed');
    await expect(store.rateLimits.take('slot', 1_000)).resolves.toBe(true);
    await store.close();
  });
});
