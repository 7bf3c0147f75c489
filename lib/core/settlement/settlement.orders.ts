import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsValidationError,
  RefundNotAllowedError,
} from '../api/index.js';
import { assertNever } from '../common/index.js';
import type { DuplicateRefund, DuplicateRefundState, OrderSettlement, RefundRecord } from '../store/index.js';
import type { HandledOutcome } from './settlement.decision.js';

/**
 * One order, one charge: the rules, as pure functions (table-tested in
 * test/settlement/orders.spec.ts). An order is a payment's tracking id; the first successful
 * payment the plugin confirms settles it, and every later successful one is a duplicate. The
 * order screen (settlement.duplicates.ts) carries them out against the store. The keys an order's
 * records are kept under (its checkout, its settlement) are named here too, once for every reader:
 * the checkout desk that opens the order, the order screen that settles it, the desk's pages.
 */

/** The order key of a request: its idempotency key, else its tracking id, else none. */
export function checkoutKey(
  idempotencyKey: string | undefined,
  trackingId: string | undefined,
  registration?: string,
): string | undefined {
  // Each merchant account (registration) has its own orders: another account's open payment is
  // another service's, and its link would be no payment at this one.
  const account = registration === undefined ? '' : `${registration}/`;
  if (idempotencyKey !== undefined) return `${account}key:${idempotencyKey}`;
  return trackingId === undefined ? undefined : `${account}order:${trackingId}`;
}

/** The order ledger's key of an order's settlement: the tracking id, per registration (merchant account). */
export function orderLedgerKey(registration: string | undefined, trackingId: string): string {
  return registration === undefined ? trackingId : `${registration}/${trackingId}`;
}

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
 * Refund calls sent for one duplicate at most. Only the first may be one the service acted on:
 * a second or third is sent only after calls it cannot have acted on (nothing sent, a 429).
 */
export const MAX_REFUND_TRIES = 3;

/** Where a duplicate's refund stands, as its outcome record says. */
export interface RefundSoFar {
  /** The refund the service answered, when it did. */
  refund?: DuplicateRefund;
  /** Its state; absent when no refund was tried. */
  refundState?: DuplicateRefundState;
  /** Refund calls sent so far. */
  refundTries?: number;
}

/**
 * What to do about refunding a duplicate: `call` the service's refund (the store's refund marker
 * then decides whether this attempt may send it), `unknown` (an earlier attempt sent it and
 * stopped before its answer was recorded: never again), `settled` (an earlier attempt settled it:
 * refunded, refused, unknown or failed; never again), or `none` (no refund is wanted).
 * @param wanted whether this duplicate is to be refunded: `duplicates.refund`, and not a held
 *   pre-authorization (nothing was charged, and the service refunds no hold; it is released with
 *   `cancelPayment`), nor a payment a person must choose to refund
 * @param recorded what the payment's outcome record says of its refund from earlier attempts
 */
export function refundPlan(
  wanted: boolean,
  recorded: RefundSoFar | undefined,
): 'none' | 'call' | 'unknown' | 'settled' {
  if (recorded?.refund !== undefined) return 'settled';
  if (recorded?.refundState === undefined) return wanted ? 'call' : 'none';
  switch (recorded.refundState) {
    case 'retry':
      return wanted && (recorded.refundTries ?? 0) < MAX_REFUND_TRIES ? 'call' : 'settled';
    case 'sending':
      return 'unknown';
    case 'refunded':
    case 'refused':
    case 'unknown':
    case 'failed':
      return 'settled';
    default:
      return assertNever(recorded.refundState);
  }
}

/**
 * Whether a refund call may be sent now, by the payment's refund record (the plugin's own, one per
 * payment whatever asked for the refund): `send` when no call was sent, or every call sent was one
 * the service cannot have acted on (`retry`) or refused (`refused`: nothing was refunded), fewer
 * than {@link MAX_REFUND_TRIES} in all; else `held`: refunded, `sending` (on its way, or its
 * attempt stopped before recording the answer), `unknown` (sent, its answer lost: never sent
 * again), or out of calls.
 * @param record the record as read, `undefined` when the payment has none
 */
export function refundStart(record: Pick<RefundRecord, 'state' | 'tries'> | undefined): 'send' | 'held' {
  if (record === undefined) return 'send';
  switch (record.state) {
    case 'retry':
    case 'refused':
      return record.tries < MAX_REFUND_TRIES ? 'send' : 'held';
    case 'sending':
    case 'unknown':
    case 'refunded':
    case 'failed':
      return 'held';
    default:
      return assertNever(record.state);
  }
}

/**
 * What a failed refund call says: `refused` (the service answered no: `REFUND_NOT_ALLOWED`,
 * another 4xx, bad input), `not-sent` (the service cannot have acted on it: the request never
 * left, or a 429 turned it away), or `unknown` (it was sent and its answer was lost: a timeout, a
 * reset, a 5xx, an unreadable answer, anything else). The service's documentation does not say
 * that it refuses a second refund of one payment, nor what verify answers after a refund: an
 * `unknown` refund must never be sent again.
 */
export function refundFailure(error: unknown): 'refused' | 'not-sent' | 'unknown' {
  if (error instanceof RefundNotAllowedError || error instanceof PaymentsValidationError) return 'refused';
  if (error instanceof PaymentsConnectionError) return error.mayHaveBeenProcessed ? 'unknown' : 'not-sent';
  if (error instanceof PaymentsApiError) {
    if (error.httpStatus === 429) return 'not-sent';
    return error.httpStatus >= 400 && error.httpStatus < 500 ? 'refused' : 'unknown';
  }
  return 'unknown';
}

/**
 * The refund's state after a failed call.
 * @param failure what the failure says ({@link refundFailure})
 * @param tries refund calls sent so far, this one included
 */
export function refundStateAfter(
  failure: 'refused' | 'not-sent' | 'unknown',
  tries: number,
): Extract<DuplicateRefundState, 'refused' | 'retry' | 'unknown' | 'failed'> {
  switch (failure) {
    case 'refused':
      return 'refused';
    case 'unknown':
      return 'unknown';
    case 'not-sent':
      return tries < MAX_REFUND_TRIES ? 'retry' : 'failed';
    default:
      return assertNever(failure);
  }
}
