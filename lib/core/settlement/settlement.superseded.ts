import { normalizeMillimes } from '../api/index.js';
import type { OrderCheckout, OrderSettlement } from '../store/index.js';

/**
 * Two tabs of one order, the cart changed between them: `generatePayment` opened a payment for
 * the new cart and recorded the open one as superseded (payments.checkout.ts). This is what a
 * successful payment is, given the order's checkout: one pure function, table-tested in
 * test/settlement/superseded.spec.ts, carried out by the order screen (settlement.duplicates.ts).
 *
 * - A superseded payment (paid for a cart the order no longer has) never settles the order: while
 *   nobody settled it, it is a `mismatch` that waits for a person (recorded, `payment.mismatch`,
 *   never `payment.confirmed`), whether the current cart's payment is paid later or never. Once
 *   another payment settled the order, it is a duplicate of that one as any other (refunded with
 *   `duplicates.refund`: it is the old cart's charge).
 * - The order's current payment is never refunded automatically when the order was settled by a
 *   payment of another cart (a superseded one, or another amount): a duplicate, held for a person.
 * - Everything else is decided by the order rule as ever (`orderVerdict`, settlement.orders.ts).
 */
export type CheckoutVerdict =
  { kind: 'order'; refundable: boolean } | { kind: 'superseded'; current: Pick<OrderCheckout, 'paymentId' | 'amount'> };

/** Whether the order's checkout lists `paymentId` among the payments a newer cart's payment replaced. */
export function isSuperseded(paymentId: string, checkout: OrderCheckout | undefined): boolean {
  return checkout !== undefined && checkout.paymentId !== paymentId && (checkout.superseded ?? []).includes(paymentId);
}

/**
 * What a successful payment of an order is, given the order's checkout (see {@link CheckoutVerdict}).
 * @param paymentId the payment that verified `SUCCESS`
 * @param checkout the order's open checkout (its current payment, the superseded ones), when the store has it
 * @param held the order's settlement as the store answers it: `undefined` when nobody settled the order
 */
export function checkoutVerdict(
  paymentId: string,
  checkout: OrderCheckout | undefined,
  held: OrderSettlement | undefined,
): CheckoutVerdict {
  if (checkout === undefined) return { kind: 'order', refundable: true };
  if (isSuperseded(paymentId, checkout) && held === undefined)
    return { kind: 'superseded', current: { paymentId: checkout.paymentId, amount: checkout.amount } };
  const anotherCart =
    checkout.paymentId === paymentId &&
    held !== undefined &&
    held.paymentId !== paymentId &&
    (isSuperseded(held.paymentId, checkout) || !sameAmount(held.amount, checkout.amount));
  return { kind: 'order', refundable: !anotherCart };
}

/** Why the order's current payment was not refunded automatically (the event's `refundError`). */
export function heldRefundReason(paymentId: string, checkout: OrderCheckout, held: OrderSettlement): string {
  return `not refunded automatically: ${paymentId} is the order's current payment (${checkout.amount}), and the order was settled by payment ${held.paymentId} of another cart (${held.amount}); refund one of them by hand`;
}

/** The problem a superseded payment is reported with (its `payment.mismatch`). */
export function supersededProblem(paymentId: string, current: Pick<OrderCheckout, 'paymentId' | 'amount'>): string {
  return `payment ${paymentId} was superseded by payment ${current.paymentId} (${current.amount}) of the same order, the cart having changed: paid for the old cart, never confirmed; refund it, or settle the order by hand`;
}

function sameAmount(a: string, b: string): boolean {
  return (normalizeMillimes(a) ?? a) === (normalizeMillimes(b) ?? b);
}
