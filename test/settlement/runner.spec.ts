import { SharedClock, SYSTEM_CLOCK } from '../../lib/core/time/time.clock.js';
/**
 * The settlement runner without HTTP: an in-memory store and a verify function the test answers.
 * It owns a payment's claim from claim to finish; these tests watch the claim, the verify calls,
 * the handlers and the outcome record for each kind of result.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { PaymentsRateLimitedError } from '../../lib/core/api/payments.errors.js';
import type { VerifiedPayment } from '../../lib/core/api/payments.types.js';
import type { PaymentsLogger } from '../../lib/core/common/payments.logger.js';
import type { PaymentEvent, PaymentEventName, PaymentOutcomeEvent } from '../../lib/core/settlement/payment.events.js';
import type { SettleResult, TokenLookup, UnboundTokenPolicy } from '../../lib/core/settlement/settlement.request.js';
import { outcomeKey } from '../../lib/core/settlement/settlement.attempt.js';
import { UnboundTokens } from '../../lib/core/settlement/settlement.gate.js';
import { SettlementRunner } from '../../lib/core/settlement/settlement.runner.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const LEASE_MS = 300;

interface Harness {
  runner: SettlementRunner;
  store: PaymentsStore;
  verifies: string[];
  events: Array<[PaymentEventName, PaymentEvent]>;
  logs: string[];
  answer(status: string, extra?: Partial<VerifiedPayment>): void;
  fail(error: Error): void;
}

const open: SettlementRunner[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.drain()));
});

function harness(
  options: {
    store?: PaymentsStore;
    handler?: (name: PaymentEventName, event: PaymentEvent) => Promise<void>;
    clock?: SharedClock;
    unbound?: UnboundTokenPolicy;
  } = {},
): Harness {
  const store = options.store ?? new MemoryPaymentsStore();
  const verifies: string[] = [];
  const events: Array<[PaymentEventName, PaymentEvent]> = [];
  const logs: string[] = [];
  let next: () => Promise<VerifiedPayment> = () => Promise.reject(new Error('no answer set'));
  const logger: PaymentsLogger = {
    log: () => undefined,
    warn: (m) => logs.push(`warn ${m}`),
    error: (m) => logs.push(`error ${m}`),
  };
  const runner = new SettlementRunner(
    {
      leaseMs: LEASE_MS,
      doneTtlMs: 60_000,
      recordTtlMs: 60_000,
      clock: options.clock ?? new SharedClock(SYSTEM_CLOCK),
      unbound: options.unbound ?? new UnboundTokens(store, 30, logger),
    },
    store,
    { verify: (id) => (verifies.push(id), next()) },
    logger,
  );
  runner.setHandlers(
    outcomeHandlers(async (name, event) => {
      events.push([name, event]);
      await options.handler?.(name, event);
    }),
  );
  open.push(runner);
  return {
    runner,
    store,
    verifies,
    events,
    logs,
    answer: (status, extra = {}) =>
      (next = async () => ({ paymentId: 'pay_1', status, amount: '12500', developerTrackingId: 'order-7', ...extra })),
    fail: (error) => (next = () => Promise.reject(error)),
  };
}

const bound = { amount: '12500', developerTrackingId: 'order-7', origin: 'binding' as const };
const settle = (h: Harness, extra: { expected?: typeof bound; token?: TokenLookup } = { expected: bound }) =>
  h.runner.settle({ paymentId: 'pay_1', source: 'webhook', ...extra });

describe('SettlementRunner', () => {
  it('a paid payment: one verify, the handlers once, marked done; a duplicate runs nothing and costs no verify', async () => {
    const h = harness();
    h.answer('SUCCESS');
    expect(await settle(h)).toMatchObject({ kind: 'handled', outcome: 'confirmed' });
    expect(await settle(h)).toEqual({ kind: 'duplicate' });
    expect(h.verifies).toEqual(['pay_1']);
    expect(h.events.map(([name]) => name)).toEqual(['payment.confirmed']);
    expect(await h.store.getOutcome('pay_1')).toMatchObject({
      outcome: 'confirmed',
      handlers: 'succeeded',
      attempts: 1,
      source: 'webhook',
    });
    expect(await h.store.claim(outcomeKey('pay_1'), 'someone', 1000)).toBe('done');
  });

  it("a webhook to an instance that has not measured the shared time yet: its record is dated on the store's clock, not its own", async () => {
    const HOUR = 3_600_000;
    const ahead = { ...SYSTEM_CLOCK, now: () => Date.now() + HOUR };
    const h = harness({ clock: new SharedClock(ahead, async () => Date.now()) });
    h.answer('SUCCESS');
    expect(await settle(h)).toMatchObject({ kind: 'handled', outcome: 'confirmed' });
    const record = await h.store.getOutcome('pay_1');
    expect(Math.abs(Date.parse(record!.updatedAt) - Date.now())).toBeLessThan(60_000);
    expect(h.events[0][0]).toBe('payment.confirmed');
    expect(Math.abs((h.events[0][1] as PaymentOutcomeEvent).occurredAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('concurrent settles of one payment: the handlers run once, the others find it busy, one verify', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const h = harness({ handler: () => gate });
    h.answer('SUCCESS');
    const first = settle(h);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const others = await Promise.all([settle(h), settle(h), h.runner.settle({ paymentId: 'pay_1', source: 'return' })]);
    expect(others.map((r) => r.kind)).toEqual(['busy', 'busy', 'busy']);
    release();
    expect((await first).kind).toBe('handled');
    expect(h.verifies).toHaveLength(1);
    expect(h.events).toHaveLength(1);
  });

  it('a throwing handler: released and recorded as failed, so the next path runs it again', async () => {
    let fails = true;
    const h = harness({
      handler: async () => {
        if (fails) throw new Error('the shop database is down');
      },
    });
    h.answer('SUCCESS');
    expect(await settle(h)).toMatchObject({
      kind: 'handlers-failed',
      outcome: 'confirmed',
      error: 'Error: the shop database is down',
    });
    expect(await h.store.getOutcome('pay_1')).toMatchObject({
      handlers: 'failed',
      lastError: 'Error: the shop database is down',
      attempts: 1,
    });
    fails = false;
    expect((await settle(h)).kind).toBe('handled');
    expect(await h.store.getOutcome('pay_1')).toMatchObject({ handlers: 'succeeded', attempts: 2 });
  });

  it('pending: released, recorded as pending, no handler, no attempt counted', async () => {
    const h = harness();
    h.answer('PENDING');
    expect((await settle(h)).kind).toBe('pending');
    expect(h.events).toEqual([]);
    expect(await h.store.getOutcome('pay_1')).toMatchObject({ outcome: 'pending', handlers: 'none', attempts: 0 });
    expect(await h.store.claim(outcomeKey('pay_1'), 'someone', 1000)).toBe('claimed');
  });

  it('a mismatch against what the plugin recorded: never confirmed, payment.mismatch emitted, marked done', async () => {
    const h = harness();
    h.answer('SUCCESS', { amount: '1' });
    expect(await settle(h)).toMatchObject({ kind: 'mismatch', problems: ['amount 1 instead of 12500'] });
    expect(h.events.map(([name]) => name)).toEqual(['payment.mismatch']);
    expect(await h.store.getOutcome('pay_1')).toMatchObject({ outcome: 'mismatch', handlers: 'none' });
    expect(await settle(h)).toEqual({ kind: 'duplicate' });
  });

  it('the service rate-limits verify: released, and the result says how long every path should pause', async () => {
    const h = harness();
    h.fail(new PaymentsRateLimitedError({ operation: 'verifyPayment', httpStatus: 429, retryAfterSecs: 12 }));
    expect(await settle(h)).toMatchObject({ kind: 'verify-failed', rateLimitedSecs: 12, retryAfterSecs: 12 });
    expect(await h.store.claim(outcomeKey('pay_1'), 'someone', 1000)).toBe('claimed');
  });

  it('the store cannot be reached: store-unavailable, no verify', async () => {
    const store = new MemoryPaymentsStore();
    store.claim = () => Promise.reject(new Error('ECONNREFUSED'));
    const h = harness({ store });
    h.answer('SUCCESS');
    expect(await settle(h)).toEqual({ kind: 'store-unavailable', error: 'Error: ECONNREFUSED' });
    expect(h.verifies).toEqual([]);
  });

  describe('by a webhook token', () => {
    const token: TokenLookup = {
      id: 'nonce_1',
      expected: { amount: '12500', origin: 'token', trackingMatches: () => true, identifiesPayment: true },
      amount: '12500',
      expiresAt: Date.now() + 60_000,
    };
    /** A policy for tokens without a binding that answers `admit` with `gate` and is told every result. */
    const policy = (
      gate: () => Promise<number | undefined>,
      settled: (r: SettleResult) => Promise<void> = async () => undefined,
    ): UnboundTokenPolicy => ({ admit: gate, settled: (_paymentId, _token, r) => settled(r) });

    it('its binding says what to expect; the lookup and the claim are one step', async () => {
      const h = harness();
      await h.store.saveBinding(
        'nonce_1',
        { paymentId: 'pay_1', amount: '99000', createdAt: new Date().toISOString() },
        60_000,
      );
      h.answer('SUCCESS');
      // The binding (99000), not the token's fallback (12500), is what the answer is checked against.
      expect(await settle(h, { token })).toMatchObject({ kind: 'mismatch' });
    });

    it('a binding of another payment: foreign, nothing claimed, no verify', async () => {
      const h = harness();
      await h.store.saveBinding(
        'nonce_1',
        { paymentId: 'pay_other', amount: '12500', createdAt: new Date().toISOString() },
        60_000,
      );
      h.answer('SUCCESS');
      expect(await settle(h, { token })).toEqual({
        kind: 'foreign',
        problems: ['webhook token was issued for another payment'],
      });
      expect(h.verifies).toEqual([]);
      expect(await h.store.claim(outcomeKey('pay_1'), 'someone', 1000)).toBe('claimed');
    });

    it('no binding: the gate runs after the claim; over the limit, rate-limited, released, no verify', async () => {
      const calls: string[] = [];
      const store = new MemoryPaymentsStore();
      const h = harness({
        store,
        unbound: policy(async () => {
          calls.push(`gate while claim is ${await store.claim(outcomeKey('pay_1'), 'probe', 1000)}`);
          return 30;
        }),
      });
      h.answer('SUCCESS');
      const result = await settle(h, { token });
      expect(result).toEqual({ kind: 'rate-limited', retryAfterSecs: 30 });
      expect(calls).toEqual(['gate while claim is busy']);
      expect(h.verifies).toEqual([]);
      expect(await h.store.claim(outcomeKey('pay_1'), 'someone', 1000)).toBe('claimed');
    });

    it('no binding, under the limit: verified against the token, then told the result', async () => {
      const told: string[] = [];
      const h = harness({
        unbound: policy(
          async () => undefined,
          async (r) => void told.push(r.kind),
        ),
      });
      h.answer('SUCCESS');
      expect((await settle(h, { token })).kind).toBe('handled');
      expect(told).toEqual(['handled']);
    });
  });

  it('handlers slower than the lease: the claim is renewed, so a redelivery meanwhile finds it busy', async () => {
    let release!: () => void;
    const h = harness({ handler: () => new Promise<void>((resolve) => (release = resolve)) });
    h.answer('SUCCESS');
    const first = settle(h);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 3));
    expect((await settle(h)).kind).toBe('busy');
    release();
    expect((await first).kind).toBe('handled');
    expect(h.events).toHaveLength(1);
  });

  it('a process frozen past its lease whose handler then fails: the record of the attempt that took the claim meanwhile stands', async () => {
    // The frozen process's timers never fire (no renewal lands); its monotonic time runs on.
    const frozen = { ...SYSTEM_CLOCK, setTimeout: () => ({}), clearTimeout: () => undefined };
    const store = new MemoryPaymentsStore();
    let release!: (error: Error) => void;
    const stalled = harness({
      store,
      clock: new SharedClock(frozen),
      handler: () => new Promise<void>((_resolve, reject) => (release = reject)),
    });
    const other = harness({ store });
    stalled.answer('SUCCESS');
    other.answer('SUCCESS');
    const first = settle(stalled);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));
    expect(await settle(other)).toMatchObject({ kind: 'handled', outcome: 'confirmed' });
    release(new Error('the shop database went away during the freeze'));
    expect(await first).toMatchObject({ kind: 'handlers-failed' });
    expect(await store.getOutcome('pay_1')).toMatchObject({ handlers: 'succeeded', source: 'webhook' });
    expect(await store.getOutcome('pay_1')).not.toHaveProperty('lastError');
  });

  it('drain() waits for settlements in flight', async () => {
    let release!: () => void;
    const h = harness({ handler: () => new Promise<void>((resolve) => (release = resolve)) });
    h.answer('SUCCESS');
    const first = settle(h);
    let drained = false;
    const draining = h.runner.drain().then(() => (drained = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(drained).toBe(false);
    release();
    await draining;
    expect((await first).kind).toBe('handled');
  });
});
