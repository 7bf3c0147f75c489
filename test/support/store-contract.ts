import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { orderLedgerOf, type OrderLedger, type PaymentsStore } from '../../lib/core/store/store.ports.js';
import type { OrderCheckout, OutcomeFinish, OutcomeRecord, PaymentBinding, PendingPayment } from '../../lib/core/store/store.types.js';
import { BasicPaymentsStore } from '../../lib/core/store/store.base.js';
import { describeRateLimiterContract } from './rate-limit-contract.js';

/** A store under test and how to dispose of it (close connections, delete its keys). */
export interface StoreFixture {
  /** A fresh store, or one whose keys cannot collide with other tests' (ids are random). */
  store: PaymentsStore;
  /** Called after each test. */
  cleanup: () => Promise<void>;
}

/** Resolves after `ms` milliseconds; the expiry tests need real time to pass. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// Short TTLs against real waits: long enough that a round trip to a local Redis (well under a
// millisecond) cannot outlast them before the first check, short enough to keep the suite quick.
const SHORT_MS = 60;
const PAST_SHORT_MS = 160;
const LONG_MS = 60_000;

const binding = (overrides: Partial<PaymentBinding> = {}): PaymentBinding => ({
  paymentId: `pay_${randomUUID()}`,
  amount: '12500',
  developerTrackingId: 'order-42',
  createdAt: '2025-01-02T03:04:05.000Z',
  ...overrides,
});

/**
 * The store as a custom one built on {@link BasicPaymentsStore} over the same backend would be:
 * its basic methods, and the base class's combined operations made of them.
 */
class OverBasicMethods extends BasicPaymentsStore {
  constructor(private readonly store: PaymentsStore) {
    super();
  }
  saveBinding(...a: Parameters<PaymentsStore['saveBinding']>) {
    return this.store.saveBinding(...a);
  }
  findBinding(...a: Parameters<PaymentsStore['findBinding']>) {
    return this.store.findBinding(...a);
  }
  claim(...a: Parameters<PaymentsStore['claim']>) {
    return this.store.claim(...a);
  }
  markDone(...a: Parameters<PaymentsStore['markDone']>) {
    return this.store.markDone(...a);
  }
  release(...a: Parameters<PaymentsStore['release']>) {
    return this.store.release(...a);
  }
  schedulePending(...a: Parameters<PaymentsStore['schedulePending']>) {
    return this.store.schedulePending(...a);
  }
  takeDuePending(...a: Parameters<PaymentsStore['takeDuePending']>) {
    return this.store.takeDuePending(...a);
  }
  findPending(...a: Parameters<PaymentsStore['findPending']>) {
    return this.store.findPending(...a);
  }
  removePending(...a: Parameters<PaymentsStore['removePending']>) {
    return this.store.removePending(...a);
  }
  countPending() {
    return this.store.countPending();
  }
  saveOutcome(...a: Parameters<PaymentsStore['saveOutcome']>) {
    return this.store.saveOutcome(...a);
  }
  getOutcome(...a: Parameters<PaymentsStore['getOutcome']>) {
    return this.store.getOutcome(...a);
  }
  listOutcomes(...a: Parameters<PaymentsStore['listOutcomes']>) {
    return this.store.listOutcomes(...a);
  }
}

/** What a store promises beyond the contract every store meets. */
export interface StoreContractOptions {
  /**
   * Its combined operations are one atomic step each (every shipped store), so that even attempts
   * that do not hold the claim, finishing at once, are each counted. Default true; false for a
   * store whose combined operations are BasicPaymentsStore's, which count right the attempts
   * that hold the claim (tested for every store), as the core makes them.
   */
  atomicCombinedOperations?: boolean;
}

/**
 * The behaviour every {@link PaymentsStore} must have, as jest tests. Keys and owners are random
 * per test, so stores may share a backend between tests.
 * @param name shown in the suite's title
 * @param makeStore creates the store for one test
 * @param options see {@link StoreContractOptions}
 */
export function describeStoreContract(name: string, makeStore: () => Promise<StoreFixture>, options: StoreContractOptions = {}): void {
  describe(`${name} satisfies the PaymentsStore contract`, () => {
    let store: PaymentsStore;
    let cleanup: (() => Promise<void>) | undefined;
    const key = () => `payment.confirmed:${randomUUID()}`;
    const owner = () => `owner-${randomUUID()}`;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await cleanup?.();
      cleanup = undefined;
    });

    describe('bindings', () => {
      it('finds a saved binding, field for field', async () => {
        const token = randomUUID();
        const saved = binding();
        await store.saveBinding(token, saved, LONG_MS);
        await expect(store.findBinding(token)).resolves.toStrictEqual(saved);
      });

      it('keeps an absent developerTrackingId absent', async () => {
        const token = randomUUID();
        const { developerTrackingId: _omitted, ...withoutTracking } = binding();
        await store.saveBinding(token, withoutTracking, LONG_MS);
        const found = await store.findBinding(token);
        expect(found).toStrictEqual(withoutTracking);
        expect(found && 'developerTrackingId' in found).toBe(false);
      });

      it('answers undefined for an unknown token', async () => {
        await expect(store.findBinding(randomUUID())).resolves.toBeUndefined();
      });

      it('stores a copy: changing the saved object afterwards changes nothing', async () => {
        const token = randomUUID();
        const saved = binding({ amount: '1000' });
        await store.saveBinding(token, saved, LONG_MS);
        saved.amount = '999999';
        expect((await store.findBinding(token))?.amount).toBe('1000');
      });

      it('returns a copy: changing a found binding does not change the stored one', async () => {
        const token = randomUUID();
        await store.saveBinding(token, binding({ amount: '1000' }), LONG_MS);
        const first = await store.findBinding(token);
        expect(first).toBeDefined();
        first!.amount = '999999';
        expect((await store.findBinding(token))?.amount).toBe('1000');
      });

      it('replaces the binding when a token is saved again', async () => {
        const token = randomUUID();
        await store.saveBinding(token, binding({ paymentId: 'first' }), LONG_MS);
        await store.saveBinding(token, binding({ paymentId: 'second' }), LONG_MS);
        expect((await store.findBinding(token))?.paymentId).toBe('second');
      });

      it('keeps bindings of different tokens apart', async () => {
        const [a, b] = [randomUUID(), randomUUID()];
        await store.saveBinding(a, binding({ paymentId: 'pay-a' }), LONG_MS);
        await store.saveBinding(b, binding({ paymentId: 'pay-b' }), LONG_MS);
        expect((await store.findBinding(a))?.paymentId).toBe('pay-a');
        expect((await store.findBinding(b))?.paymentId).toBe('pay-b');
      });

      it('forgets a binding once its TTL has passed', async () => {
        const token = randomUUID();
        const saved = binding();
        await store.saveBinding(token, saved, SHORT_MS);
        await expect(store.findBinding(token)).resolves.toStrictEqual(saved);
        await sleep(PAST_SHORT_MS);
        await expect(store.findBinding(token)).resolves.toBeUndefined();
      });

      it('does not mix bindings with delivery records of the same id', async () => {
        const id = randomUUID();
        await store.saveBinding(id, binding(), LONG_MS);
        await expect(store.claim(id, owner(), LONG_MS)).resolves.toBe('claimed');
        expect(await store.findBinding(id)).toBeDefined();
      });
    });

    describe('claims', () => {
      it('is idempotent for the same owner (a resent claim gets its claim back)', async () => {
        const k = key();
        const me = owner();
        await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
        await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
        await expect(store.claim(k, me, LONG_MS)).resolves.toBe('done');
      });

      it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses a lease or TTL of %p', async (bad) => {
        await expect(store.claim(key(), owner(), bad)).rejects.toBeInstanceOf(RangeError);
        await expect(store.saveBinding(randomUUID(), binding(), bad)).rejects.toBeInstanceOf(RangeError);
      });

      it('grants the first claim and answers busy to another owner', async () => {
        const k = key();
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
      });

      it('keeps claims of different events apart', async () => {
        const [a, b] = [key(), key()];
        await expect(store.claim(a, owner(), LONG_MS)).resolves.toBe('claimed');
        await expect(store.claim(b, owner(), LONG_MS)).resolves.toBe('claimed');
      });

      it('accepts event keys with separators, spaces and non-ASCII characters', async () => {
        const k = `payment.confirmed:${randomUUID()}:a b/c*?[ü€]`;
        const me = owner();
        await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
      });

      it('lets the owner mark the event done, after which every claim answers done', async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
        await expect(store.claim(k, me, LONG_MS)).resolves.toBe('done');
      });

      it('answers false to a second markDone of a done event', async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await store.markDone(k, me, LONG_MS);
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
      });

      it('refuses markDone by another owner and leaves the claim with its holder', async () => {
        const k = key();
        const holder = owner();
        await store.claim(k, holder, LONG_MS);
        await expect(store.markDone(k, owner(), LONG_MS)).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
      });

      it('refuses markDone of an event nobody claimed, and records nothing', async () => {
        const k = key();
        await expect(store.markDone(k, owner(), LONG_MS)).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      });

      it('lets the owner release the claim, so that a redelivery can claim it', async () => {
        const k = key();
        const first = owner();
        await store.claim(k, first, LONG_MS);
        await expect(store.release(k, first)).resolves.toBeUndefined();
        const second = owner();
        await expect(store.claim(k, second, LONG_MS)).resolves.toBe('claimed');
        // The released owner no longer holds anything.
        await expect(store.markDone(k, first, LONG_MS)).resolves.toBe(false);
        await expect(store.markDone(k, second, LONG_MS)).resolves.toBe(true);
      });

      it('ignores release by another owner', async () => {
        const k = key();
        const holder = owner();
        await store.claim(k, holder, LONG_MS);
        await store.release(k, owner());
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
      });

      it('ignores release of a done event, even by its owner', async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await store.markDone(k, me, LONG_MS);
        await store.release(k, me);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
      });

      it('resolves release of an event nobody claimed', async () => {
        await expect(store.release(key(), owner())).resolves.toBeUndefined();
      });

      it('lets another owner claim once the lease expired, and then refuses the old owner', async () => {
        const k = key();
        const crashed = owner();
        await expect(store.claim(k, crashed, SHORT_MS)).resolves.toBe('claimed');
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await sleep(PAST_SHORT_MS);
        const next = owner();
        await expect(store.claim(k, next, LONG_MS)).resolves.toBe('claimed');
        await expect(store.markDone(k, crashed, LONG_MS)).resolves.toBe(false);
        await store.release(k, crashed);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, next, LONG_MS)).resolves.toBe(true);
      });

      it('refuses markDone by an owner whose lease expired even when nobody took over', async () => {
        const k = key();
        const slow = owner();
        await store.claim(k, slow, SHORT_MS);
        await sleep(PAST_SHORT_MS);
        await expect(store.markDone(k, slow, LONG_MS)).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      });

      it('forgets that an event is done once the done TTL has passed', async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await store.markDone(k, me, SHORT_MS);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
        await sleep(PAST_SHORT_MS);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      });

      it('grants exactly one of 50 concurrent claims of one event', async () => {
        const k = key();
        const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.claim(k, owner(), LONG_MS)));
        expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'busy')).toHaveLength(49);
      });

      it('answers done to every one of 20 concurrent claims of a done event', async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await store.markDone(k, me, LONG_MS);
        const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.claim(k, owner(), LONG_MS)));
        expect(new Set(outcomes)).toEqual(new Set(['done']));
      });

      it('lets exactly one of concurrent owners mark done after a lease race', async () => {
        const k = key();
        const owners = Array.from({ length: 10 }, owner);
        const outcomes = await Promise.all(owners.map((o) => store.claim(k, o, LONG_MS)));
        const done = await Promise.all(owners.map((o) => store.markDone(k, o, LONG_MS)));
        expect(done.filter(Boolean)).toHaveLength(1);
        expect(done.indexOf(true)).toBe(outcomes.indexOf('claimed'));
      });
    });

    describe.each([
      ['its own combined operations', (s: PaymentsStore) => s],
      ['BasicPaymentsStore over its basic methods', (s: PaymentsStore): PaymentsStore => new OverBasicMethods(s)],
    ])('combined operations, through %s', (_how, view) => {
      const outcomeRecord = (paymentId: string, overrides: Partial<OutcomeRecord> = {}): Omit<OutcomeRecord, 'attempts'> => ({
        paymentId,
        outcome: 'confirmed',
        status: 'SUCCESS',
        source: 'webhook',
        handlers: 'succeeded',
        amount: '12500',
        updatedAt: '2025-01-02T03:04:05.000Z',
        ...overrides,
      });
      const finish = (k: string, me: string, paymentId: string, overrides: Partial<OutcomeFinish> = {}): OutcomeFinish => ({
        eventKey: k,
        owner: me,
        claim: 'done',
        doneTtlMs: LONG_MS,
        record: outcomeRecord(paymentId),
        attemptsAdded: 1,
        recordTtlMs: LONG_MS,
        ...overrides,
      });

      it('findBindingAndClaim claims when the binding names the payment, and answers like claim()', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        const k = key();
        const me = owner();
        await store.saveBinding(token, saved, LONG_MS);
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, me, LONG_MS)).resolves.toStrictEqual({ binding: saved, claim: 'claimed' });
        // The same owner again gets its claim back (a resent command, a renewal); another is busy.
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, me, LONG_MS)).resolves.toStrictEqual({ binding: saved, claim: 'claimed' });
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({ binding: saved, claim: 'busy' });
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({ binding: saved, claim: 'done' });
      });

      it('findBindingAndClaim claims nothing without a binding, or for a binding of another payment', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        const k = key();
        await expect(s.findBindingAndClaim(randomUUID(), saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({ binding: undefined });
        await store.saveBinding(token, saved, LONG_MS);
        await expect(s.findBindingAndClaim(token, `pay_${randomUUID()}`, k, owner(), LONG_MS)).resolves.toStrictEqual({ binding: saved });
        // Nothing was claimed: a claim by anyone still succeeds.
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      });

      it('findBindingAndClaim ignores an expired binding and refuses a bad lease', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        await store.saveBinding(token, saved, SHORT_MS);
        await sleep(PAST_SHORT_MS);
        const k = key();
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({ binding: undefined });
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
        await store.saveBinding(token, saved, LONG_MS);
        await expect(s.findBindingAndClaim(token, saved.paymentId, key(), owner(), 0)).rejects.toBeInstanceOf(RangeError);
      });

      it('findBindingAndClaim grants exactly one of 30 concurrent attempts', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        const k = key();
        await store.saveBinding(token, saved, LONG_MS);
        const outcomes = await Promise.all(Array.from({ length: 30 }, () => s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)));
        expect(outcomes.filter((o) => o.claim === 'claimed')).toHaveLength(1);
        expect(outcomes.filter((o) => o.claim === 'busy')).toHaveLength(29);
      });

      it('finishOutcome done: marks done, leaves the queue, saves the record with attempts counted', async () => {
        const s = view(store);
        const k = key();
        const me = owner();
        const entry: PendingPayment = { ...binding(), checks: 1 };
        await store.schedulePending(entry, Date.now() + LONG_MS);
        await store.saveOutcome(
          { ...outcomeRecord(entry.paymentId, { outcome: 'confirmed', handlers: 'failed', lastError: 'Error: down' }), attempts: 2 },
          LONG_MS,
        );
        await store.claim(k, me, LONG_MS);
        const record = outcomeRecord(entry.paymentId, { developerTrackingId: 'order-42', updatedAt: '2025-01-02T03:05:00.000Z' });
        await expect(s.finishOutcome(finish(k, me, entry.paymentId, { record }))).resolves.toBe(true);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
        await expect(store.findPending(entry.paymentId)).resolves.toBeUndefined();
        await expect(store.getOutcome(entry.paymentId)).resolves.toStrictEqual({ ...record, attempts: 3 });
      });

      it('finishOutcome done by an owner who lost the claim: no done marker, but queue and record written', async () => {
        const s = view(store);
        const k = key();
        const holder = owner();
        const entry: PendingPayment = { ...binding(), checks: 0 };
        await store.schedulePending(entry, Date.now() + LONG_MS);
        await store.claim(k, holder, LONG_MS);
        await expect(s.finishOutcome(finish(k, owner(), entry.paymentId))).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
        await expect(store.findPending(entry.paymentId)).resolves.toBeUndefined();
        await expect(store.getOutcome(entry.paymentId)).resolves.toMatchObject({ attempts: 1 });
      });

      it('finishOutcome release: frees the claim, keeps the queue, counts a pending check as no attempt', async () => {
        const s = view(store);
        const k = key();
        const me = owner();
        const entry: PendingPayment = { ...binding(), checks: 0 };
        await store.schedulePending(entry, Date.now() + LONG_MS);
        await store.claim(k, me, LONG_MS);
        const pendingRecord = outcomeRecord(entry.paymentId, { outcome: 'pending', status: 'PENDING', handlers: 'none' });
        await expect(s.finishOutcome(finish(k, me, entry.paymentId, { claim: 'release', record: pendingRecord, attemptsAdded: 0 }))).resolves.toBe(false);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
        await expect(store.findPending(entry.paymentId)).resolves.toStrictEqual(entry);
        await expect(store.getOutcome(entry.paymentId)).resolves.toStrictEqual({ ...pendingRecord, attempts: 0 });
        await store.removePending(entry.paymentId);
      });

      it('finishOutcome release by another owner leaves the holder its claim', async () => {
        const s = view(store);
        const k = key();
        const holder = owner();
        await store.claim(k, holder, LONG_MS);
        await s.finishOutcome(finish(k, owner(), `pay_${randomUUID()}`, { claim: 'release', attemptsAdded: 1 }));
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
      });

      it('finishOutcome counts attempts from zero over an expired record', async () => {
        const s = view(store);
        const paymentId = `pay_${randomUUID()}`;
        await store.saveOutcome({ ...outcomeRecord(paymentId), attempts: 7 }, SHORT_MS);
        await sleep(PAST_SHORT_MS);
        await s.finishOutcome(finish(key(), owner(), paymentId, { claim: 'release' }));
        await expect(store.getOutcome(paymentId)).resolves.toMatchObject({ attempts: 1 });
      });

      it('finishOutcome keeps a record with special characters field for field, and lists it', async () => {
        const s = view(store);
        const paymentId = `pay_${randomUUID()}`;
        const record = outcomeRecord(paymentId, {
          handlers: 'failed',
          developerTrackingId: 'ordre-ü€/"\\',
          lastError: 'AggregateError: 1 of 2 handler(s) failed: "quoted" \\ / ü',
          updatedAt: '2996-01-01T00:00:00.000Z',
        });
        await s.finishOutcome(finish(key(), owner(), paymentId, { claim: 'release', record }));
        await expect(store.getOutcome(paymentId)).resolves.toStrictEqual({ ...record, attempts: 1 });
        const page = await store.listOutcomes({ handlers: 'failed', limit: 500 });
        expect(page.items.find((r) => r.paymentId === paymentId)).toStrictEqual({ ...record, attempts: 1 });
      });

      it.each([
        ['doneTtlMs', { doneTtlMs: 0 }],
        ['recordTtlMs', { recordTtlMs: Number.NaN }],
      ])('finishOutcome refuses a bad %s and writes nothing', async (_name, bad) => {
        const s = view(store);
        const k = key();
        const me = owner();
        const paymentId = `pay_${randomUUID()}`;
        await store.claim(k, me, LONG_MS);
        await expect(s.finishOutcome(finish(k, me, paymentId, bad))).rejects.toBeInstanceOf(RangeError);
        await expect(store.getOutcome(paymentId)).resolves.toBeUndefined();
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
      });

      it('finishOutcome counts every one of 10 concurrent attempts that each claim the payment in turn', async () => {
        const s = view(store);
        const paymentId = `pay_${randomUUID()}`;
        const k = key();
        // As redeliveries do: each waits for the claim, then finishes and releases it, and the
        // next one claims as soon as it can, while the previous one may still be finishing.
        const attempt = async () => {
          const me = owner();
          while ((await store.claim(k, me, LONG_MS)) !== 'claimed') await sleep(2);
          await s.finishOutcome(finish(k, me, paymentId, { claim: 'release', record: outcomeRecord(paymentId, { handlers: 'failed' }) }));
        };
        await Promise.all(Array.from({ length: 10 }, attempt));
        await expect(store.getOutcome(paymentId)).resolves.toMatchObject({ attempts: 10 });
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      });
    });

    // Not registered at all for a store that does not promise it (rather than skipped).
    if (options.atomicCombinedOperations !== false) {
      describe("combined operations, atomicity of the store's own", () => {
        it('finishOutcome counts every one of 20 concurrent attempts on one payment', async () => {
          expect(typeof store.finishOutcome).toBe('function'); // each of the plugin's stores has it
          const paymentId = `pay_${randomUUID()}`;
          const k = key();
          await Promise.all(
            Array.from({ length: 20 }, () =>
              store.finishOutcome({
                eventKey: k,
                owner: owner(),
                claim: 'release',
                doneTtlMs: LONG_MS,
                record: { paymentId, outcome: 'confirmed', status: 'SUCCESS', source: 'webhook', handlers: 'failed', updatedAt: new Date().toISOString() },
                attemptsAdded: 1,
                recordTtlMs: LONG_MS,
              }),
            ),
          );
          await expect(store.getOutcome(paymentId)).resolves.toMatchObject({ attempts: 20 });
        });
      });
    }

    describeRateLimiterContract(() => store.rateLimits);

    describe('orders (one confirmation per order, one payment per checkout)', () => {
      const order = () => `order-${randomUUID()}`;
      const ledger = (): OrderLedger => {
        const found = orderLedgerOf(store);
        if (!found) throw new Error(`${name} has no order ledger`);
        return found;
      };
      const paid = (paymentId = `pay_${randomUUID()}`, amount = '12500') => ({ paymentId, amount });

      it('records the first payment that settles an order, and answers it to every later one', async () => {
        const o = order();
        const first = paid();
        expect(await ledger().findOrderSettlement(o)).toBeUndefined();
        expect(await ledger().settleOrder(o, first, LONG_MS)).toEqual(first);
        expect(await ledger().settleOrder(o, paid(undefined, '9000'), LONG_MS)).toEqual(first);
        expect(await ledger().settleOrder(o, first, LONG_MS)).toEqual(first);
        expect(await ledger().findOrderSettlement(o)).toEqual(first);
      });

      it('keeps orders apart, whatever characters their keys hold', async () => {
        const keys = [order(), `{${order()}}`, `${order()} :é/ü`, `${order()}}{`];
        const payments = keys.map(() => paid());
        for (const [i, k] of keys.entries()) expect(await ledger().settleOrder(k, payments[i], LONG_MS)).toEqual(payments[i]);
        for (const [i, k] of keys.entries()) expect(await ledger().findOrderSettlement(k)).toEqual(payments[i]);
      });

      it('lets exactly one of 30 concurrent payments settle one order, and tells every one the same', async () => {
        const o = order();
        const payments = Array.from({ length: 30 }, () => paid());
        const answers = await Promise.all(payments.map((p) => ledger().settleOrder(o, p, LONG_MS)));
        const winner = answers[0];
        expect(payments.map((p) => p.paymentId)).toContain(winner.paymentId);
        expect(answers.every((a) => a.paymentId === winner.paymentId)).toBe(true);
      });

      it('forgets a settlement once its TTL has passed, so another payment can settle the order', async () => {
        if (store instanceof BasicPaymentsStore) return; // its claim-based default expires the same way; timing covered once
        const o = order();
        await ledger().settleOrder(o, paid(), SHORT_MS);
        await sleep(PAST_SHORT_MS);
        expect(await ledger().findOrderSettlement(o)).toBeUndefined();
        const next = paid();
        expect(await ledger().settleOrder(o, next, LONG_MS)).toEqual(next);
      });

      it('saves an open checkout field for field, replaces it, and forgets it after its TTL', async () => {
        // BasicPaymentsStore keeps no checkout by default (generatePayment then opens a payment per call).
        if (store instanceof BasicPaymentsStore) return;
        const o = order();
        const checkout: OrderCheckout = {
          paymentId: `pay_${randomUUID()}`,
          link: 'https://pay.example.com/pay/1?x="y"',
          amount: '12500',
          fingerprint: '{"successLink":"https://shop.example.com/ok"}',
          sessionEndsAt: '2030-01-01T00:00:00.000Z',
        };
        expect(await ledger().findCheckout(o)).toBeUndefined();
        await ledger().saveCheckout(o, checkout, LONG_MS);
        expect(await ledger().findCheckout(o)).toEqual(checkout);
        const next = { ...checkout, paymentId: `pay_${randomUUID()}`, amount: '9000', superseded: [checkout.paymentId] };
        await ledger().saveCheckout(o, next, SHORT_MS);
        expect(await ledger().findCheckout(o)).toEqual(next);
        await sleep(PAST_SHORT_MS);
        expect(await ledger().findCheckout(o)).toBeUndefined();
      });

      it('keeps an order settled apart from its checkout', async () => {
        if (store instanceof BasicPaymentsStore) return;
        const o = order();
        const first = paid();
        await ledger().saveCheckout(o, { ...first, link: 'https://pay.example.com/l', fingerprint: '', sessionEndsAt: '2030-01-01T00:00:00.000Z' }, LONG_MS);
        expect(await ledger().findOrderSettlement(o)).toBeUndefined();
        await ledger().settleOrder(o, first, LONG_MS);
        expect((await ledger().findCheckout(o))?.paymentId).toBe(first.paymentId);
      });
    });

    describe('health', () => {
      it('answers ping when it has one', async () => {
        if (store.ping) await expect(store.ping()).resolves.toBeUndefined();
      });
    });

    describe('reconciliation queue', () => {
      const pending = (overrides: Partial<PendingPayment> = {}): PendingPayment => ({ ...binding(), checks: 0, ...overrides });

      it('finds a queued payment, field for field, and counts it', async () => {
        const entry = pending({ sessionEndsAt: '2025-01-02T03:24:05.000Z', checks: 2 });
        const before = await store.countPending();
        await store.schedulePending(entry, Date.now() + LONG_MS);
        await expect(store.findPending(entry.paymentId)).resolves.toStrictEqual(entry);
        await expect(store.countPending()).resolves.toBe(before + 1);
        await store.removePending(entry.paymentId);
        await expect(store.findPending(entry.paymentId)).resolves.toBeUndefined();
        await expect(store.countPending()).resolves.toBe(before);
      });

      it('keeps one entry per payment: scheduling again replaces it', async () => {
        const entry = pending();
        await store.schedulePending(entry, Date.now() + LONG_MS);
        await store.schedulePending({ ...entry, checks: 3 }, Date.now() + LONG_MS);
        expect((await store.findPending(entry.paymentId))?.checks).toBe(3);
        await store.removePending(entry.paymentId);
      });

      it('takes only due entries, oldest due first, at most limit', async () => {
        // A time far in the future keeps other tests' entries (due at real now) out of the way.
        const base = Date.now() + 1000 * LONG_MS;
        const [a, b, c] = [pending(), pending(), pending()];
        await store.schedulePending(b, base + 2);
        await store.schedulePending(a, base + 1);
        await store.schedulePending(c, base + 1000);
        const taken = await store.takeDuePending(base + 10, 1, LONG_MS);
        expect(taken.map((t) => t.paymentId)).toEqual([a.paymentId]);
        expect(taken[0]).toStrictEqual(a);
        const next = await store.takeDuePending(base + 10, 10, LONG_MS);
        expect(next.map((t) => t.paymentId)).toContain(b.paymentId);
        expect(next.map((t) => t.paymentId)).not.toContain(c.paymentId);
        for (const e of [a, b, c]) await store.removePending(e.paymentId);
      });

      it('hides a taken entry for the lease, then offers it again (a crashed taker loses nothing)', async () => {
        const base = Date.now() + 2000 * LONG_MS;
        const entry = pending();
        await store.schedulePending(entry, base);
        expect((await store.takeDuePending(base, 10, 1000)).map((t) => t.paymentId)).toContain(entry.paymentId);
        expect((await store.takeDuePending(base + 999, 10, 1000)).map((t) => t.paymentId)).not.toContain(entry.paymentId);
        expect((await store.takeDuePending(base + 1000, 10, 1000)).map((t) => t.paymentId)).toContain(entry.paymentId);
        await store.removePending(entry.paymentId);
      });

      it('gives each due entry to exactly one of 10 concurrent takers', async () => {
        const base = Date.now() + 3000 * LONG_MS;
        const entries = Array.from({ length: 20 }, () => pending());
        for (const e of entries) await store.schedulePending(e, base);
        const takes = await Promise.all(Array.from({ length: 10 }, () => store.takeDuePending(base, 5, LONG_MS)));
        const ids = takes
          .flat()
          .map((t) => t.paymentId)
          .filter((id) => entries.some((e) => e.paymentId === id));
        expect(ids).toHaveLength(20);
        expect(new Set(ids).size).toBe(20);
        for (const e of entries) await store.removePending(e.paymentId);
      });

      it('resolves removePending of an unknown payment', async () => {
        await expect(store.removePending(`pay_${randomUUID()}`)).resolves.toBeUndefined();
      });
    });

    describe('outcome records', () => {
      const record = (overrides: Partial<OutcomeRecord> = {}): OutcomeRecord => ({
        paymentId: `pay_${randomUUID()}`,
        outcome: 'confirmed',
        status: 'SUCCESS',
        source: 'webhook',
        handlers: 'succeeded',
        attempts: 1,
        amount: '12500',
        developerTrackingId: 'order-42',
        updatedAt: '2025-01-02T03:04:05.000Z',
        ...overrides,
      });

      it('gets a saved record field for field, and replaces it when saved again', async () => {
        const saved = record({ lastError: 'Error: handler down', handlers: 'failed' });
        await store.saveOutcome(saved, LONG_MS);
        await expect(store.getOutcome(saved.paymentId)).resolves.toStrictEqual(saved);
        const { lastError: _gone, ...replaced } = { ...saved, handlers: 'succeeded' as const, attempts: 2 };
        await store.saveOutcome(replaced, LONG_MS);
        await expect(store.getOutcome(saved.paymentId)).resolves.toStrictEqual(replaced);
      });

      it('answers undefined for an unknown payment', async () => {
        await expect(store.getOutcome(`pay_${randomUUID()}`)).resolves.toBeUndefined();
      });

      it('forgets a record once its TTL has passed', async () => {
        const saved = record();
        await store.saveOutcome(saved, SHORT_MS);
        await sleep(PAST_SHORT_MS);
        await expect(store.getOutcome(saved.paymentId)).resolves.toBeUndefined();
      });

      it('lists newest first, filters, and pages through every match exactly once', async () => {
        // A distinctive year keeps other tests' records out of the filtered pages' way.
        const marker = randomUUID();
        const saved = Array.from({ length: 7 }, (_, i) =>
          record({ updatedAt: `2999-01-01T00:00:0${i}.000Z`, handlers: i % 2 === 0 ? 'failed' : 'succeeded', lastError: marker }),
        );
        for (const r of saved) await store.saveOutcome(r, LONG_MS);
        const seen: OutcomeRecord[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listOutcomes({ handlers: 'failed', limit: 2, cursor });
          seen.push(...page.items);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        const mine = seen.filter((r) => r.lastError === marker);
        expect(mine.map((r) => r.updatedAt)).toEqual([
          '2999-01-01T00:00:06.000Z',
          '2999-01-01T00:00:04.000Z',
          '2999-01-01T00:00:02.000Z',
          '2999-01-01T00:00:00.000Z',
        ]);
        expect(seen.every((r) => r.handlers === 'failed')).toBe(true);
        expect(new Set(seen.map((r) => r.paymentId)).size).toBe(seen.length);
      });

      it('does not list a record once its TTL has passed', async () => {
        const marker = randomUUID();
        const short = record({ updatedAt: '2998-06-01T00:00:00.000Z', outcome: 'expired', lastError: marker });
        const kept = record({ updatedAt: '2998-06-01T00:00:00.000Z', outcome: 'expired', lastError: marker });
        await store.saveOutcome(short, SHORT_MS);
        await store.saveOutcome(kept, LONG_MS);
        const listed = async () => {
          const seen: OutcomeRecord[] = [];
          let cursor: string | undefined;
          do {
            const page = await store.listOutcomes({ outcome: 'expired', limit: 500, cursor });
            seen.push(...page.items);
            cursor = page.nextCursor;
          } while (cursor !== undefined);
          return seen.filter((r) => r.lastError === marker).map((r) => r.paymentId);
        };
        expect((await listed()).sort()).toEqual([short.paymentId, kept.paymentId].sort());
        await sleep(PAST_SHORT_MS);
        expect(await listed()).toEqual([kept.paymentId]);
      });

      it('orders records updated at the same time by payment id, across pages, and filters by outcome', async () => {
        const marker = randomUUID();
        const at = '2997-03-03T03:03:03.000Z';
        const ids = Array.from({ length: 5 }, () => `pay_${randomUUID()}`);
        for (const id of ids) await store.saveOutcome(record({ paymentId: id, updatedAt: at, outcome: 'authorized', lastError: marker }), LONG_MS);
        await store.saveOutcome(record({ updatedAt: at, outcome: 'failed', lastError: marker }), LONG_MS);
        const seen: OutcomeRecord[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listOutcomes({ outcome: 'authorized', limit: 2, cursor });
          expect(page.items.length).toBeLessThanOrEqual(2);
          seen.push(...page.items);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        expect(seen.every((r) => r.outcome === 'authorized')).toBe(true);
        expect(seen.filter((r) => r.lastError === marker).map((r) => r.paymentId)).toEqual([...ids].sort());
      });

      it('refuses a foreign cursor and a non-positive limit', async () => {
        await expect(store.listOutcomes({ cursor: 'not-a-cursor' })).rejects.toThrow(RangeError);
        await expect(store.listOutcomes({ limit: 0 })).rejects.toThrow(RangeError);
      });
    });
  });
}
