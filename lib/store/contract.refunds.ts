import { randomUUID } from 'node:crypto';
import type { PaymentsStore, RefundLedger, RefundRecord } from '../core/index.js';
import { refundLedgerOf } from '../core/store/index.js';
import { LONG_MS, PAST_SHORT_MS, SHORT_MS, sleep, type ContractContext } from './contract.support.js';

/** The contract of the refund ledger: one record per payment, written by compare-and-set on its owner. */
export function describeRefunds(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  describe('refunds (one record per payment, compare-and-set on its owner)', () => {
    const ledger = (): RefundLedger => refundLedgerOf(store);
    const key = () => `registration/pay_${randomUUID()}`;
    const record = (overrides: Partial<RefundRecord> = {}): RefundRecord => ({
      paymentId: `pay_${randomUUID()}`,
      owner: `owner-${randomUUID()}`,
      state: 'sending',
      tries: 1,
      updatedAt: '2030-01-01T00:00:00.000Z',
      ...overrides,
    });

    it('writes a record only where none is held, then only for its owner, and keeps it field for field', async () => {
      const k = key();
      expect(await ledger().findRefund(k)).toBeUndefined();
      const sending = record();
      expect(await ledger().swapRefund(k, sending, undefined, LONG_MS)).toEqual({ swapped: true, held: sending });
      expect(await ledger().findRefund(k)).toEqual(sending);
      // Another attempt that read nothing, or names another owner, writes nothing and is told what holds.
      const other = record({ paymentId: sending.paymentId });
      expect(await ledger().swapRefund(k, other, undefined, LONG_MS)).toEqual({ swapped: false, held: sending });
      expect(await ledger().swapRefund(k, other, 'someone-else', LONG_MS)).toEqual({ swapped: false, held: sending });
      // The owner writes the answer.
      const refunded: RefundRecord = {
        ...sending,
        state: 'refunded',
        refund: { refundId: 'ref_1', amount: '12500', status: 'success', refundedAt: '2030-01-01T00:00:01.000Z' },
        updatedAt: '2030-01-01T00:00:01.000Z',
      };
      expect(await ledger().swapRefund(k, refunded, sending.owner, LONG_MS)).toEqual({ swapped: true, held: refunded });
      expect(await ledger().findRefund(k)).toEqual(refunded);
      const failed = record({ state: 'retry', tries: 2, error: 'connect ECONNREFUSED "x" é' });
      expect(await ledger().swapRefund(k, failed, refunded.owner, LONG_MS)).toMatchObject({ swapped: true });
      expect(await ledger().findRefund(k)).toEqual(failed);
    });

    it('lets exactly one of 20 concurrent attempts start a payment’s refund', async () => {
      const k = key();
      const attempts = Array.from({ length: 20 }, () => record());
      const swaps = await Promise.all(attempts.map((a) => ledger().swapRefund(k, a, undefined, LONG_MS)));
      const won = swaps.filter((s) => s.swapped);
      expect(won).toHaveLength(1);
      const winner = won[0].held;
      expect(swaps.every((s) => s.held?.owner === winner?.owner)).toBe(true);
      expect((await ledger().findRefund(k))?.owner).toBe(winner?.owner);
    });

    it('keeps payments apart, whatever characters their keys hold', async () => {
      const keys = [key(), `{${key()}}`, `${key()} :é/ü`, `${key()}}{`];
      const records = keys.map(() => record());
      for (const [i, k] of keys.entries()) await ledger().swapRefund(k, records[i], undefined, LONG_MS);
      for (const [i, k] of keys.entries()) expect(await ledger().findRefund(k)).toEqual(records[i]);
    });

    it('forgets a record once its TTL has passed: it is none, for reads and writes', async () => {
      const k = key();
      const first = record();
      await ledger().swapRefund(k, first, undefined, SHORT_MS);
      await sleep(PAST_SHORT_MS);
      expect(await ledger().findRefund(k)).toBeUndefined();
      expect(await ledger().swapRefund(k, record(), first.owner, LONG_MS)).toMatchObject({ swapped: false });
      const next = record();
      expect(await ledger().swapRefund(k, next, undefined, LONG_MS)).toEqual({ swapped: true, held: next });
    });
  });
}
