/**
 * Two tabs of one order, the cart changed between them: what a successful payment is, given the
 * order's checkout (its current payment and the superseded ones) and the order's settlement.
 */
import { describe, expect, it } from '@jest/globals';
import {
  checkoutVerdict,
  supersededProblem,
  type CheckoutVerdict,
} from '../../lib/core/settlement/settlement.duplicates.js';
import type { OrderCheckout, OrderSettlement } from '../../lib/core/store/store.types.js';

// Payment B (2000) is the order's current payment; A (1000) and Z (500) were superseded.
const checkout: OrderCheckout = {
  paymentId: 'pay_B',
  link: 'https://pay.example/B',
  amount: '2000',
  fingerprint: 'f',
  sessionEndsAt: '2030-01-01T00:00:00.000Z',
  superseded: ['pay_A', 'pay_Z'],
};
const byA: OrderSettlement = { paymentId: 'pay_A', amount: '1000' };
const byB: OrderSettlement = { paymentId: 'pay_B', amount: '2000' };
const byOtherSameCart: OrderSettlement = { paymentId: 'pay_X', amount: '2000' };
const byOtherCart: OrderSettlement = { paymentId: 'pay_X', amount: '1500' };
// What each payment was verified for.
const AMOUNTS: Record<string, string> = {
  pay_A: '1000',
  pay_B: '2000',
  pay_Z: '500',
  pay_X: '2000',
  pay_Q: '2000',
  pay_R: '1500',
};
const superseded: CheckoutVerdict = { kind: 'superseded', current: { paymentId: 'pay_B', amount: '2000' } };
const order = (refundable: boolean): CheckoutVerdict => ({ kind: 'order', refundable });

const rows: Array<{
  name: string;
  paymentId: string;
  checkout: OrderCheckout | undefined;
  held: OrderSettlement | undefined;
  verdict: CheckoutVerdict;
}> = [
  {
    name: 'no checkout known: the order rule, as ever',
    paymentId: 'pay_A',
    checkout: undefined,
    held: undefined,
    verdict: order(true),
  },
  {
    name: 'no checkout known, settled by another payment of its amount: refundable (a double charge)',
    paymentId: 'pay_X',
    checkout: undefined,
    held: byB,
    verdict: order(true),
  },
  {
    name: 'no checkout known, settled by a payment of another amount: not refunded (it may be a changed cart’s current payment)',
    paymentId: 'pay_A',
    checkout: undefined,
    held: byB,
    verdict: order(false),
  },
  {
    name: 'no checkout known, settled by itself: the order rule',
    paymentId: 'pay_A',
    checkout: undefined,
    held: byA,
    verdict: order(true),
  },
  {
    name: 'the current payment, order unsettled: the order rule (it confirms)',
    paymentId: 'pay_B',
    checkout,
    held: undefined,
    verdict: order(true),
  },
  {
    name: 'the current payment, settled by itself: the order rule',
    paymentId: 'pay_B',
    checkout,
    held: byB,
    verdict: order(true),
  },
  {
    name: 'superseded, order unsettled: superseded (a mismatch, never confirmed)',
    paymentId: 'pay_A',
    checkout,
    held: undefined,
    verdict: superseded,
  },
  {
    name: 'an older superseded one, order unsettled: superseded',
    paymentId: 'pay_Z',
    checkout,
    held: undefined,
    verdict: superseded,
  },
  {
    name: 'superseded, the current payment settled the order: a duplicate, refundable (the old cart)',
    paymentId: 'pay_A',
    checkout,
    held: byB,
    verdict: order(true),
  },
  {
    name: 'superseded, it settled the order itself before the cart changed: the order rule (it confirms)',
    paymentId: 'pay_A',
    checkout,
    held: byA,
    verdict: order(true),
  },
  {
    name: 'superseded, another superseded one settled the order: a duplicate, refundable',
    paymentId: 'pay_Z',
    checkout,
    held: byA,
    verdict: order(true),
  },
  {
    name: 'the current payment, a superseded one settled the order: a duplicate, never refunded automatically',
    paymentId: 'pay_B',
    checkout,
    held: byA,
    verdict: order(false),
  },
  {
    name: 'the current payment, another payment of another amount settled it: never refunded automatically',
    paymentId: 'pay_B',
    checkout,
    held: byOtherCart,
    verdict: order(false),
  },
  {
    name: 'the current payment, another payment of the same amount settled it: refundable (a second charge of this cart)',
    paymentId: 'pay_B',
    checkout,
    held: byOtherSameCart,
    verdict: order(true),
  },
  {
    name: 'a payment the checkout does not list, order unsettled: the order rule',
    paymentId: 'pay_Q',
    checkout,
    held: undefined,
    verdict: order(true),
  },
  {
    name: 'a payment the checkout does not list (its write did not land), settled by one of another amount: not refunded',
    paymentId: 'pay_R',
    checkout,
    held: byB,
    verdict: order(false),
  },
  {
    name: 'a payment the checkout does not list, settled by the current one: refundable',
    paymentId: 'pay_Q',
    checkout,
    held: byB,
    verdict: order(true),
  },
  {
    name: 'a checkout without superseded payments: the order rule',
    paymentId: 'pay_A',
    checkout: { ...checkout, superseded: undefined },
    held: undefined,
    verdict: order(true),
  },
  {
    name: 'amounts compare as millimes',
    paymentId: 'pay_B',
    checkout,
    held: { paymentId: 'pay_X', amount: '02000' },
    verdict: order(true),
  },
];

describe('checkoutVerdict(): a superseded payment never settles an order; the current one is never refunded for another cart', () => {
  it.each(rows)('$name', ({ paymentId, checkout: found, held, verdict }) => {
    expect(checkoutVerdict(paymentId, found, held, AMOUNTS[paymentId])).toEqual(verdict);
  });
});

describe('supersededProblem(): what a person does about a superseded payment', () => {
  const current = { paymentId: 'pay_B', amount: '2000' };
  it.each([
    ['a payment: refund it', false, /paid for the old cart, never confirmed; refund it/],
    [
      'a hold: release it (nothing was taken)',
      true,
      /held for the old cart, never authorized for the order; release the hold \(cancelPayment\)/,
    ],
  ])('%s', (_what, hold, says) => {
    const problem = supersededProblem('pay_A', current, hold);
    expect(problem).toMatch(/^payment pay_A was superseded by payment pay_B \(2000\) of the same order/);
    expect(problem).toMatch(says);
    expect(problem.includes('refund it')).toBe(!hold);
  });
});
