import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsValidationError,
  RefundNotAllowedError,
} from '../api/index.js';
import type { DuplicateRefund, OrderSettlement } from '../store/index.js';
import type { HandledOutcome } from './settlement.decision.js';

/**
 * One order, one charge: the rules, as pure functions (table-tested in
 * test/settlement/orders.spec.ts). An order is a payment's tracking id; the first successful
 * payment the plugin confirms settles it, and every later successful one is a duplicate. The
 * order screen (settlement.duplicates.ts) carries them out against the store.
 */

/**
 * How the order screen treats a payment of each handled outcome before its handlers run.
 * `settle`: a paid payment (`confirmed`) settles its order, the first one wins, and a later one is
 * a duplicate. `check`: a held pre-authorization (`authorized`) is a duplicate when another payment
 * already settled its order (capturing it would be a second charge), but never settles the order
 * itself: a hold may be cancelled, and the order must stay payable then. `none`: nothing was
 * charged or held (`failed`, `expired`).
 */
export function orderScreenOf(outcome: HandledOutcome): 'settle' | 'check' | 'none' {
  switch (outcome) {
    case 'confirmed':
      return 'settle';
    case 'authorized':
      return 'check';
    case 'failed':
    case 'expired':
      return 'none';
    default: {
      const unknown: never = outcome;
      return unknown;
    }
  }
}

/** What a successful payment is for its order. */
export type OrderVerdict = { kind: 'confirm' } | { kind: 'duplicate'; settledBy: OrderSettlement };

/**
 * Whether a successful payment confirms its order or is a duplicate of the payment that did.
 * @param paymentId the payment about to be confirmed
 * @param trackingId its verified tracking id (the order); without one, no order: confirmed as ever
 * @param held the order's settlement as the store answers it (after this payment's own attempt to
 *   settle it, or a read): `undefined` when nobody settled the order yet
 */
export function orderVerdict(
  paymentId: string,
  trackingId: string | undefined,
  held: OrderSettlement | undefined,
): OrderVerdict {
  if (trackingId === undefined || held === undefined || held.paymentId === paymentId) return { kind: 'confirm' };
  return { kind: 'duplicate', settledBy: held };
}

/**
 * What to do about refunding a duplicate: `call` the service's refund, `recorded` (an earlier
 * attempt refunded it: never again), or `none` (automatic refunds are off, or the duplicate is a
 * held pre-authorization: nothing was charged, and the service refunds no hold; it is released
 * with `cancelPayment`).
 * @param wanted `duplicates.refund`
 * @param recorded the refund the payment's outcome record holds from an earlier attempt
 * @param held whether the duplicate is a pre-authorization (verified `PREAUTH_SUCCESS`)
 */
export function refundPlan(
  wanted: boolean,
  recorded: DuplicateRefund | undefined,
  held = false,
): 'none' | 'call' | 'recorded' {
  if (recorded !== undefined) return 'recorded';
  return wanted && !held ? 'call' : 'none';
}

/**
 * What a failed automatic refund means. `retry`: the service may not have been reached, or failed
 * on its side (a connection error, a timeout, a 429, a 5xx, an unreadable answer): the duplicate is
 * handled again later and the refund tried again; the service refuses a second refund of one
 * payment, so a retry after a refund that did go through cannot refund twice. `final`: the service
 * refused it (`REFUND_NOT_ALLOWED`, another 4xx, bad input): the event says why, for a refund by hand.
 */
export function refundFailure(error: unknown): 'retry' | 'final' {
  if (error instanceof RefundNotAllowedError || error instanceof PaymentsValidationError) return 'final';
  if (error instanceof PaymentsConnectionError) return 'retry';
  if (error instanceof PaymentsApiError)
    return error.httpStatus >= 400 && error.httpStatus < 500 && error.httpStatus !== 429 ? 'final' : 'retry';
  return error instanceof PaymentsError ? 'final' : 'retry';
}
