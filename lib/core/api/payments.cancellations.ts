import { orderLedgerOf, type PaymentsStore } from '../store/index.js';

/**
 * A cancelled payment, remembered in the store for checkout reuse: after `cancelPayment` released a
 * pre-authorization, its link must never answer the order's next `generatePayment` (the customer
 * would land on a cancelled payment). The note is written to the order ledger, which every
 * instance sharing the store reads, under a key of its own: a control character starts it, and
 * tracking ids (the ledger's other keys) cannot contain one. Kept apart from the payment's outcome
 * record on purpose: that record is replaced whole when an attempt at the outcome ends, which
 * would drop a note written while a `payment.authorized` handler (one that cancels) was running.
 */

/** The order ledger's key of a payment's cancellation, per registration (merchant account). */
export function cancellationKey(registration: string | undefined, paymentId: string): string {
  return `\u001fcancelled/${registration ?? ''}/${paymentId}`;
}

/**
 * Notes that `paymentId` was cancelled (after the service confirmed it); nothing with a store
 * without an order ledger (it reuses no checkout).
 * @param ttlMs how long the note is kept (it must outlive the payment's open checkout)
 */
export async function noteCancellation(
  store: PaymentsStore,
  registration: string | undefined,
  paymentId: string,
  ttlMs: number,
): Promise<void> {
  await orderLedgerOf(store)?.settleOrder(cancellationKey(registration, paymentId), { paymentId, amount: '0' }, ttlMs);
}

/** Whether the store holds a note that `paymentId` was cancelled (a store without an order ledger: never). */
export async function isCancelled(
  store: PaymentsStore,
  registration: string | undefined,
  paymentId: string,
): Promise<boolean> {
  const held = await orderLedgerOf(store)?.findOrderSettlement(cancellationKey(registration, paymentId));
  return held?.paymentId === paymentId;
}
