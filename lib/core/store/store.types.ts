/**
 * The values the store keeps and the plugin exchanges with it: bindings, queue entries, outcome
 * records and the results of the store's operations. The store's methods are in `store.ports.ts`.
 */

/** What the plugin recorded about a payment when it generated it. */
export interface PaymentBinding {
  /** The payment's id, as the service assigned it. */
  paymentId: string;
  /** Amount in millimes, as sent at generation. */
  amount: string;
  /** Tracking id sent at generation, if any. */
  developerTrackingId?: string;
  /** ISO 8601 time of generation. */
  createdAt: string;
  /** ISO 8601 time the checkout session ends (generation + `sessionTimeoutSecs`), when known. */
  sessionEndsAt?: string;
}

/** A payment whose outcome the plugin has not seen yet, queued for reconciliation. */
export interface PendingPayment extends PaymentBinding {
  /** How many times reconciliation has verified it so far. */
  checks: number;
  /**
   * Set while the payment is in the pending lane (a webhook or a return found it pending: it is
   * re-checked within seconds, not at its session's end): the lane's checks done so far.
   */
  rechecks?: number;
}

/**
 * Result of {@link ClaimStore.claim}:
 * - `claimed`: the caller owns the key until it marks it done, releases it or the lease expires;
 * - `done`: the key was already handled;
 * - `busy`: someone else holds an unexpired claim.
 */
export type ClaimOutcome = 'claimed' | 'done' | 'busy';

/**
 * What a verified status means for the shop (one mapping, in `payment.outcome.ts`):
 * `confirmed` (paid), `failed`, `expired`, `authorized` (a pre-authorization holds the amount),
 * `pending` (not settled yet: checked again later), `mismatch` (the service's amount or tracking
 * id differs from what the plugin sent: never confirmed, logged as an error), `duplicate` (paid,
 * but another payment of the same order, its tracking id, had settled it: a second charge).
 */
export type PaymentOutcome = 'confirmed' | 'failed' | 'expired' | 'authorized' | 'pending' | 'mismatch' | 'duplicate';

/** Which path led to an outcome. */
export type OutcomeSource = 'webhook' | 'return' | 'reconciliation';

/** What became of the handlers of an outcome: `none` when no handler had to run (pending). */
export type HandlerResult = 'succeeded' | 'failed' | 'none';

/** What happened to one payment, as the plugin saw it (the record of outcomes). */
export interface OutcomeRecord {
  /** The payment. */
  paymentId: string;
  /** The outcome the verified status maps to. */
  outcome: PaymentOutcome;
  /** The service's status as sent by `verify_payment` (e.g. `SUCCESS`). */
  status: string;
  /** The path of the latest attempt. */
  source: OutcomeSource;
  /** Result of the handlers on the latest attempt. */
  handlers: HandlerResult;
  /** Attempts so far (each verify that led to running, or trying to run, the handlers). */
  attempts: number;
  /** Verified amount in millimes, when the service sent one. */
  amount?: string;
  /** Verified tracking id, when the service sent one. */
  developerTrackingId?: string;
  /** The latest error (handler failure, mismatch), short and free of secrets. */
  lastError?: string;
  /** ISO 8601 time of the latest update. */
  updatedAt: string;
  /** With outcome `duplicate`: the payment that settled the order before this one. */
  settledBy?: string;
  /** With outcome `duplicate`: the refund made by `duplicates: { refund: true }`, once the service answered it. */
  refund?: DuplicateRefund;
  /** With outcome `duplicate` and `duplicates: { refund: true }`: where its automatic refund stands. */
  refundState?: DuplicateRefundState;
  /** With outcome `duplicate`: refund calls sent so far (at most 3: `MAX_REFUND_TRIES` of the settlement rules). */
  refundTries?: number;
  /** With outcome `duplicate`: why its automatic refund was not made (yet), short and free of secrets. */
  refundError?: string;
}

/**
 * Where the automatic refund of a duplicate stands (docs/confirmations.md, One order, one charge):
 * - `sending`: the call is on its way (or the attempt that sent it stopped before recording its answer);
 * - `refunded`: the service answered the refund (`refund` holds it);
 * - `refused`: the service refused it (a 4xx such as `REFUND_NOT_ALLOWED`): refund it by hand if it must be;
 * - `retry`: the call never reached the service, or the service turned it away unprocessed (a 429):
 *   tried again on the next attempt, at most 3 calls in all;
 * - `unknown`: the call was sent but its answer was lost (a timeout, a reset, a 5xx, an unreadable
 *   answer): the service may have refunded it. Never sent again: a person checks at the service;
 * - `failed`: 3 calls never reached the service: not refunded; refund it by hand.
 */
export type DuplicateRefundState = 'sending' | 'refunded' | 'refused' | 'retry' | 'unknown' | 'failed';

/** The refund of a duplicate payment, as the service answered it. */
export interface DuplicateRefund {
  /** The service's id of the refund. */
  refundId: string;
  /** The refunded amount as the service wrote it. */
  amount: string;
  /** The service's refund status. */
  status: string;
  /** ISO 8601 time of the refund. */
  refundedAt: string;
}

/**
 * A payment's refund as the plugin sent it: one record per payment, whatever asked for the refund
 * (the automatic refund of a duplicate, a platform's refund of an order), by which the service's
 * refund is sent at most once. Written by compare-and-set on `owner` ({@link RefundLedger.swapRefund}).
 */
export interface RefundRecord {
  /** The payment refunded. */
  paymentId: string;
  /** The attempt that wrote it (a random id per call sent): the next write must name it. */
  owner: string;
  /**
   * Where the refund stands (the states of {@link DuplicateRefundState}): `sending` while the call
   * is on its way, and for good when the attempt stopped before recording its answer.
   */
  state: DuplicateRefundState;
  /** Refund calls sent so far. */
  tries: number;
  /** The refund the service answered, once it did. */
  refund?: DuplicateRefund;
  /** Why the last call failed, short and free of secrets. */
  error?: string;
  /** ISO 8601 time of the write. */
  updatedAt: string;
}

/** Result of {@link RefundLedger.swapRefund}. */
export interface RefundSwap {
  /** Whether the record was written. */
  swapped: boolean;
  /** The record that holds after the call: the one written, or the one that stopped the write. */
  held: RefundRecord | undefined;
}

/** Which payment settled an order (its tracking id): the first successful one the plugin confirmed. */
export interface OrderSettlement {
  /** The payment that settled the order. */
  paymentId: string;
  /** Its verified amount in millimes. */
  amount: string;
}

/**
 * An order's open checkout: the payment `generatePayment` opened last for the order (its
 * tracking id, or the caller's idempotency key), which a second call with the same request
 * answers instead of opening another.
 */
export interface OrderCheckout {
  /** The payment. */
  paymentId: string;
  /** Its checkout link. */
  link: string;
  /** Amount in millimes. */
  amount: string;
  /** What else the request fixed (links, session, card options), compared as a whole. */
  fingerprint: string;
  /** ISO 8601 time the checkout session ends. */
  sessionEndsAt: string;
  /** Earlier payments of the order with another amount or request, newest first (at most 20). */
  superseded?: string[];
}

/** What `OrderLedger.openCheckout` asks: the order's lock, and where the found payment's cancellation is noted. */
export interface CheckoutOpen {
  /** The order. */
  orderKey: string;
  /** A unique id of this call: the lock's owner. */
  owner: string;
  /** The lock's lease, ms: after this long it frees itself (a crashed caller does not hold the order). */
  leaseMs: number;
  /**
   * The order-ledger key of a payment's cancellation note, less the payment id at its end: the
   * note is the settlement of order `cancellationPrefix + paymentId`, naming that payment.
   */
  cancellationPrefix: string;
}

/** What the store knows of an open payment's fate: what decides whether its link may be answered again. */
export interface CheckoutStanding {
  /** The outcome of the payment's outcome record; `undefined` when it has none (nothing learnt yet). */
  outcome: PaymentOutcome | undefined;
  /** Whether a cancellation of it is noted (see {@link CheckoutOpen.cancellationPrefix}). */
  cancelled: boolean;
}

/** The answer of `OrderLedger.openCheckout`. */
export interface CheckoutOpening {
  /** The order's lock: `claimed` (this caller holds it), `busy` (another caller does) or `done`. */
  lock: ClaimOutcome;
  /** The order's open checkout, or `undefined`. */
  checkout?: OrderCheckout;
  /**
   * The standing of the checkout's payment, when the store read it in the same step; `undefined`
   * with no checkout, or when the store could not (the caller then reads it: `getOutcome` and
   * the cancellation note).
   */
  standing?: CheckoutStanding;
}

/** What `OrderLedger.closeCheckout` writes before it frees the order: its new checkout. */
export interface CheckoutSave {
  /** The checkout, replacing the order's. */
  checkout: OrderCheckout;
  /** How long to keep it (its session, at least), ms. */
  ttlMs: number;
}

/** A page request of `listOutcomes` (the client's, and the store's `OutcomeLog`). */
export interface OutcomeQuery {
  /** Only records whose handlers ended so (e.g. `failed`, to retry them). */
  handlers?: HandlerResult;
  /** Only records of this outcome. */
  outcome?: PaymentOutcome;
  /** Page size: 1 to 500. Default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of outcome records, newest update first. */
export interface OutcomePage {
  /** The records of this page. */
  items: OutcomeRecord[];
  /** Pass as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

/** Result of {@link ClaimStore.findBindingAndClaim}. */
export interface BindingClaim {
  /** The token's binding, or `undefined` when unknown or expired. */
  binding: PaymentBinding | undefined;
  /**
   * The claim of the event key, present only when the binding names the payment asked about;
   * absent when there is no binding or it names another payment (then nothing was claimed).
   */
  claim?: ClaimOutcome;
}

/**
 * What {@link ClaimStore.finishOutcome} writes once an attempt at a payment's outcome is over:
 * the claim, the reconciliation queue and the outcome record, together.
 */
export interface OutcomeFinish {
  /** The claimed key, e.g. `outcome:<paymentId>`. */
  eventKey: string;
  /** The attempt that holds the claim. */
  owner: string;
  /**
   * `done`: the outcome is handled (or needed no handler): mark the claim done for `doneTtlMs`
   * if `owner` still holds it, and remove the payment from the reconciliation queue (whether or
   * not the claim was still held). `release`: give the claim up if `owner` holds it (the payment
   * is still pending, or a handler failed), so that the next attempt runs it; the queue is left.
   */
  claim: 'done' | 'release';
  /** How long a done marker is remembered, in ms (used with `claim: 'done'`). */
  doneTtlMs: number;
  /** The payment's new outcome record (it replaces the old one), without `attempts`. */
  record: Omit<OutcomeRecord, 'attempts'>;
  /**
   * Added to the `attempts` of the payment's current record (0 when it has none, or it expired)
   * to make the saved record's: 1 for an attempt that ran (or tried to run) handlers, 0 for a
   * check that found the payment still pending.
   */
  attemptsAdded: number;
  /** How long the record is kept, in ms. */
  recordTtlMs: number;
}

/** Runs a statement inside a database transaction: what a `PaymentsTransaction` offers. */
export interface TransactionQuery {
  /** Runs `text` with `params` bound as `$1`, `$2`, ... inside the transaction. */
  query(text: string, params?: unknown[]): Promise<TransactionRows>;
}

/** What {@link TransactionQuery.query} resolves to. */
export interface TransactionRows {
  /** The rows the statement returned. */
  rows: unknown[];
}
