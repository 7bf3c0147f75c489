import { randomUUID } from 'node:crypto';
import {
  BasicPaymentsStore,
  type OutcomeFinish,
  type OutcomeRecord,
  type PaymentsStore,
  type PendingPayment,
} from '../core/index.js';
import { binding, type ContractContext, LONG_MS, PAST_SHORT_MS, SHORT_MS, sleep } from './contract.support.js';

/**
 * The store as a custom one built on {@link BasicPaymentsStore} over the same backend would be:
 * its basic methods, and the base class's combined operations made of them.
 */
export class OverBasicMethods extends BasicPaymentsStore {
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

/** The contract of the combined operations (`findBindingAndClaim`, `finishOutcome`), through the store's own and through `BasicPaymentsStore`'s. */
export function describeCombined(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  const { key, owner, options } = c;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  const views: Array<[string, (s: PaymentsStore) => PaymentsStore]> = [
    ['its own combined operations', (s: PaymentsStore) => s],
    ['BasicPaymentsStore over its basic methods', (s: PaymentsStore): PaymentsStore => new OverBasicMethods(s)],
  ];
  for (const [how, view] of views)
    describe(`combined operations, through ${how}`, () => {
      const outcomeRecord = (
        paymentId: string,
        overrides: Partial<OutcomeRecord> = {},
      ): Omit<OutcomeRecord, 'attempts'> => ({
        paymentId,
        outcome: 'confirmed',
        status: 'SUCCESS',
        source: 'webhook',
        handlers: 'succeeded',
        amount: '12500',
        updatedAt: '2025-01-02T03:04:05.000Z',
        ...overrides,
      });
      const finish = (
        k: string,
        me: string,
        paymentId: string,
        overrides: Partial<OutcomeFinish> = {},
      ): OutcomeFinish => ({
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
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, me, LONG_MS)).resolves.toStrictEqual({
          binding: saved,
          claim: 'claimed',
        });
        // The same owner again gets its claim back (a resent command, a renewal); another is busy.
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, me, LONG_MS)).resolves.toStrictEqual({
          binding: saved,
          claim: 'claimed',
        });
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({
          binding: saved,
          claim: 'busy',
        });
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({
          binding: saved,
          claim: 'done',
        });
      });

      it('findBindingAndClaim claims nothing without a binding, or for a binding of another payment', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        const k = key();
        await expect(s.findBindingAndClaim(randomUUID(), saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({
          binding: undefined,
        });
        await store.saveBinding(token, saved, LONG_MS);
        await expect(s.findBindingAndClaim(token, `pay_${randomUUID()}`, k, owner(), LONG_MS)).resolves.toStrictEqual({
          binding: saved,
        });
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
        await expect(s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)).resolves.toStrictEqual({
          binding: undefined,
        });
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
        await store.saveBinding(token, saved, LONG_MS);
        await expect(s.findBindingAndClaim(token, saved.paymentId, key(), owner(), 0)).rejects.toBeInstanceOf(
          RangeError,
        );
      });

      it('findBindingAndClaim grants exactly one of 30 concurrent attempts', async () => {
        const s = view(store);
        const token = randomUUID();
        const saved = binding();
        const k = key();
        await store.saveBinding(token, saved, LONG_MS);
        const outcomes = await Promise.all(
          Array.from({ length: 30 }, () => s.findBindingAndClaim(token, saved.paymentId, k, owner(), LONG_MS)),
        );
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
          {
            ...outcomeRecord(entry.paymentId, { outcome: 'confirmed', handlers: 'failed', lastError: 'Error: down' }),
            attempts: 2,
          },
          LONG_MS,
        );
        await store.claim(k, me, LONG_MS);
        const record = outcomeRecord(entry.paymentId, {
          developerTrackingId: 'order-42',
          updatedAt: '2025-01-02T03:05:00.000Z',
        });
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
        const pendingRecord = outcomeRecord(entry.paymentId, {
          outcome: 'pending',
          status: 'PENDING',
          handlers: 'none',
        });
        await expect(
          s.finishOutcome(
            finish(k, me, entry.paymentId, { claim: 'release', record: pendingRecord, attemptsAdded: 0 }),
          ),
        ).resolves.toBe(false);
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

      const badTtls: Array<[string, Partial<OutcomeFinish>]> = [
        ['doneTtlMs', { doneTtlMs: 0 }],
        ['recordTtlMs', { recordTtlMs: Number.NaN }],
      ];
      for (const [field, bad] of badTtls)
        it(`finishOutcome refuses a bad ${field} and writes nothing`, async () => {
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
          await s.finishOutcome(
            finish(k, me, paymentId, { claim: 'release', record: outcomeRecord(paymentId, { handlers: 'failed' }) }),
          );
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
              record: {
                paymentId,
                outcome: 'confirmed',
                status: 'SUCCESS',
                source: 'webhook',
                handlers: 'failed',
                updatedAt: new Date().toISOString(),
              },
              attemptsAdded: 1,
              recordTtlMs: LONG_MS,
            }),
          ),
        );
        await expect(store.getOutcome(paymentId)).resolves.toMatchObject({ attempts: 20 });
      });
    });
  }
}
