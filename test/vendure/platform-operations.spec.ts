// What both platform adapters (Vendure, Medusa) rest on, table-tested without the platforms: a
// refund sent at most once per payment by the plugin's record, and the card details a merchant
// sees (never the whole number).
import { describe, expect, it } from '@jest/globals';
import { cardDetailsOf, maskedPanOf } from '../../lib/core/api/card.details.js';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  RefundNotAllowedError,
} from '../../lib/core/api/payments.errors.js';
import type { PaymentRefund } from '../../lib/core/api/payments.types.js';
import { refundOnce } from '../../lib/core/settlement/refund.once.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';

const made: PaymentRefund = {
  refundId: 'ref_1',
  paymentId: 'pay_1',
  amount: '12345',
  status: 'success',
  refundedAt: '2026-11-27T10:00:00Z',
};
const lost = () =>
  new PaymentsConnectionError({
    operation: 'refundPayment',
    code: 'TIMEOUT',
    mayHaveBeenProcessed: true,
    attempts: 1,
    reason: 'timeout',
  });
const notSent = () =>
  new PaymentsConnectionError({
    operation: 'refundPayment',
    code: 'CONNECTION_FAILED',
    mayHaveBeenProcessed: false,
    attempts: 1,
    reason: 'connection refused',
  });
const refused = () => new RefundNotAllowedError({ operation: 'refundPayment', httpStatus: 400 });

describe('refundOnce: a payment refunded at most once, by the plugin record', () => {
  // Each row: what the first call does; then what a second call (the platform's retry) gets, and
  // how many calls reached the service in all.
  it.each([
    ['refunded, the platform failed to record it', 'refunded earlier', 1, () => Promise.resolve(made)],
    ['sent, its answer lost', 'unknown', 1, () => Promise.reject(lost())],
    ['refused by the service', 'refunded now', 2, () => Promise.reject(refused())],
    ['never sent', 'refunded now', 2, () => Promise.reject(notSent())],
    [
      'a 5xx (may have been processed)',
      'unknown',
      1,
      () => Promise.reject(new PaymentsApiError('X', { operation: 'refundPayment', httpStatus: 502 })),
    ],
  ] as const)('first call %s: the retry is %s, %i call(s)', async (_first, retry, calls, first) => {
    const store = new MemoryPaymentsStore();
    const sent: string[] = [];
    let answer: () => Promise<PaymentRefund> = first;
    const deps = {
      store,
      registration: undefined,
      refund: (id: string) => {
        sent.push(id);
        return answer();
      },
    };
    await refundOnce(deps, 'pay_1').catch(() => undefined);
    answer = () => Promise.resolve(made);
    const again = await refundOnce(deps, 'pay_1');
    const seen = again.kind === 'unknown' ? 'unknown' : again.earlier ? 'refunded earlier' : 'refunded now';
    expect(seen).toBe(retry);
    if (again.kind === 'refunded') expect(again.refund.refundId).toBe('ref_1');
    expect(sent).toHaveLength(calls);
    await store.close?.();
  });

  it('reads the markers an earlier version kept: a refund made is answered, one whose answer was lost is unknown', async () => {
    const store = new MemoryPaymentsStore();
    const sent: string[] = [];
    const refund = (id: string) => (sent.push(id), Promise.resolve(made));
    // A platform refund recorded by the earlier version: its claim done, the details in a binding.
    await store.claim('refund-once:shop/pay_1', 'old', 60_000);
    await store.saveBinding(
      'refund-once-details:shop/pay_1',
      { paymentId: 'pay_1', amount: '12345', developerTrackingId: 'ref_old', createdAt: '2026-11-01T10:00:00Z' },
      60_000,
    );
    await store.markDone('refund-once:shop/pay_1', 'old', 60_000);
    expect(await refundOnce({ store, registration: 'shop', refund }, 'pay_1')).toMatchObject({
      kind: 'refunded',
      earlier: true,
      refund: { refundId: 'ref_old', amount: '12345', refundedAt: '2026-11-01T10:00:00Z' },
    });
    // A duplicate's refund sent by the earlier version, its answer lost: its marker still held.
    await store.claim('refund:pay_2', 'old-attempt', 60_000);
    expect(await refundOnce({ store, registration: 'shop', refund }, 'pay_2')).toMatchObject({ kind: 'unknown' });
    expect(sent).toEqual([]);
    // Carried over: the record answers from now on, the old markers no longer asked.
    expect(await store.findRefund('shop/pay_1')).toMatchObject({ state: 'refunded', refund: { refundId: 'ref_old' } });
  });

  it('sends at most three calls the service never got, then says to refund by hand', async () => {
    const store = new MemoryPaymentsStore();
    const sent: string[] = [];
    const deps = { store, registration: undefined, refund: (id: string) => (sent.push(id), Promise.reject(notSent())) };
    for (let i = 0; i < 3; i++) await expect(refundOnce(deps, 'pay_1')).rejects.toThrow(/CONNECTION_FAILED|refused/);
    await expect(refundOnce(deps, 'pay_1')).rejects.toThrow(/by hand/);
    expect(sent).toHaveLength(3);
  });

  it('another registration (merchant account) has its own record', async () => {
    const store = new MemoryPaymentsStore();
    const refund = () => Promise.resolve(made);
    await refundOnce({ store, registration: 'a', refund }, 'pay_1');
    const other = await refundOnce({ store, registration: 'b', refund }, 'pay_1');
    expect(other).toMatchObject({ kind: 'refunded', earlier: false });
  });
});

describe('card details: what a merchant sees of the card', () => {
  it.each([
    ['450921**1119', '450921**1119'],
    ['4509 21** **** 1119', '450921******1119'],
    ['4509211234561119', '**1119'],
    ['4509-2112-3456-1119', '**1119'],
    ['1119', '**1119'],
    ['**1119', '**1119'],
    ['4509211**1119', '**1119'],
    ['', undefined],
    ['12', undefined],
    [undefined, undefined],
    [4509211234561119, undefined],
  ])('pan %p shows as %p', (pan, shown) => {
    expect(maskedPanOf(pan)).toBe(shown);
  });

  it('brand, masked number and approval code from verify details; empty and odd values left out', () => {
    expect(
      cardDetailsOf({ pan: '450921**1119', payment_system: 'VISA', approval_code: '182848', name: 'A B' }),
    ).toEqual({ cardBrand: 'VISA', maskedPan: '450921**1119', approvalCode: '182848' });
    expect(cardDetailsOf({ pan: '', payment_system: '', approval_code: '' })).toEqual({});
    expect(cardDetailsOf({ payment_system: '<script>', approval_code: 'a b' })).toEqual({});
    expect(cardDetailsOf(undefined)).toEqual({});
  });
});
