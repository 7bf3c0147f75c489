import type { GeneratePaymentInput } from './payment.fields.js';
import type { OutcomeSource, PaymentOutcome } from '../store/index.js';

/**
 * Input and output shapes of the operations, in camelCase. On the wire they travel in
 * snake_case (see `wire.mapper.ts`).
 */

// The input of `generatePayment` is derived from the field table, where each field is declared once.
export type { GeneratePaymentInput, PaymentDestination } from './payment.fields.js';
/** Result of `generatePayment`. */
export interface GeneratedPayment {
  /** Identifier of the new payment; keep it to refund or cancel later. */
  paymentId: string;
  /** Checkout link to redirect the customer to. */
  link: string;
  /** Echo of the tracking id, when one was sent. */
  developerTrackingId?: string;
}

/** Result of `refundPayment`. */
export interface PaymentRefund {
  /** Identifier of the refund. */
  refundId: string;
  /** Identifier of the refunded payment. */
  paymentId: string;
  /** Refunded amount as the service wrote it (the service does not document its unit). */
  amount: string;
  /** Status of the refund; the service documents `"success"`. */
  status: string;
  /** ISO 8601 UTC timestamp of the refund. */
  refundedAt: string;
}

/** Result of `cancelPayment`. */
export interface PaymentCancellation {
  /** Identifier of the cancelled payment. */
  paymentId: string;
  /** Status after cancellation; the service documents `"cancelled"`. */
  status: string;
  /** ISO 8601 UTC timestamp of the cancellation. */
  cancelledAt: string;
}

/** A card binding of a customer, as listed by `listBindings`. */
export interface CardBinding {
  /** Identifier of the binding (UUID form). */
  bindingId: string;
  /** Your identifier of the customer, given when the binding was created. */
  clientId: string;
  /** Last four digits of the card. */
  cardLastFour: string;
  /** Card network name. */
  cardBrand: string;
  /** Status of the binding; the service documents `"active"` and no other value. */
  status: string;
  /** ISO 8601 UTC timestamp of creation. */
  createdAt: string;
}

/**
 * The statuses `verify_payment` is documented to send (docs/service-facts.md §1). Any other string
 * may arrive too and is kept as sent: it is never taken for paid.
 */
export type KnownPaymentStatus = 'SUCCESS' | 'PENDING' | 'EXPIRED' | 'FAILURE' | 'PREAUTH_SUCCESS' | 'SYSTEM_FAILURE';

/** Result of `verifyPayment`: the service's own account of a payment, the only proof of payment. */
export interface VerifiedPayment {
  /** The payment asked about. */
  paymentId: string;
  /**
   * The `payment_id` the service's answer named, when it named one (the documented answer does
   * not). An answer naming another payment than {@link VerifiedPayment.paymentId} is a mismatch,
   * never a confirmation.
   */
  answeredPaymentId?: string;
  /** The service's status as sent; paid only when `SUCCESS`. */
  status: KnownPaymentStatus | (string & {});
  /** Amount in millimes as a digit string (the service sends a JSON number here). */
  amount: string;
  /** The tracking id the service has for the payment, if any. */
  developerTrackingId?: string;
  /** Payment type, e.g. `card`. */
  type?: string;
  /** The service's details object as sent (card mask, approval code, binding id...). */
  details?: Readonly<Record<string, unknown>>;
}

/** Result of `capturePayment`. */
export interface PaymentCapture {
  /** The captured payment. */
  paymentId: string;
  /** The service's status, e.g. `confirmed` (an older page shows `SUCCESS`). */
  status: string;
  /** Captured amount in millimes, when the service says. */
  amount?: string;
  /** ISO 8601 time of the capture, when the service says. */
  capturedAt?: string;
}

/** The outcome `reconcilePayment` found (see `PaymentOutcome`). */
export interface ReconcileResult {
  /** The payment. */
  paymentId: string;
  /**
   * The status the service sent. When another path was handling the payment and did not finish
   * within the return's short wait (`outcome` is then `pending`): the last status recorded for
   * it, or `''` when none is known yet. Never a status the service did not send.
   */
  status: string;
  /** What the status means for the shop. */
  outcome: PaymentOutcome;
  /** Whether this call ran the outcome's handlers (false when another path already had, or none had to run). */
  handled: boolean;
  /** Why the handlers failed, when they ran and one threw (the payment is not settled: its handlers run again later). */
  error?: string;
  /**
   * With outcome `duplicate`: the payment that settled the order (the same tracking id) before
   * this one. Tell the customer the order is already paid and this second charge is being handled.
   */
  settledBy?: string;
}

/** Options of `generatePayment` beyond the request's fields. */
export interface GenerateOptions {
  /**
   * The checkout this payment is for, when your order ids are not unique per payment attempt:
   * a second call with the same key (same amount and request, session still open) answers the
   * first call's payment, as a second call with the same `developerTrackingId` does without a key
   * (`orders.reuseOpenPayment`). A new key opens a new payment; payments of one tracking id are
   * still one order when they succeed (the later ones are `payment.duplicate`). Default: none.
   */
  idempotencyKey?: string;
}

/** What `reconcilePayment`'s caller expects of a payment (e.g. from its order). */
export interface ReconcileExpectation {
  /** Amount in millimes (digit string or positive safe integer). */
  amount?: string | number;
  /** The tracking id the payment was generated with. */
  developerTrackingId?: string;
}

/** Options of `reconcilePayment`. */
export interface ReconcileOptions {
  /**
   * What you expect (e.g. from your order): a verified amount or tracking id that differs is never
   * confirmed. Default: what the plugin recorded at generation, when its store still has it.
   */
  expected?: ReconcileExpectation;
  /** Which path this is, for the events and the record. Default `return`. */
  source?: OutcomeSource;
}

/** The operations shared by `PaymentsService` (Nest) and `createPaymentsClient` (Express). */
export interface PaymentsOperations {
  /** Creates a payment and returns the link to redirect the customer to. */
  generatePayment(input: GeneratePaymentInput, options?: GenerateOptions): Promise<GeneratedPayment>;
  /** Reads a payment from the service (`GET /api/v2/verify_payment/{id}`). Safe to retry; rate-limited by the service. */
  verifyPayment(paymentId: string): Promise<VerifiedPayment>;
  /** Captures a pre-authorized payment, all or part (`POST /api/v2/confirm_payment`). */
  capturePayment(paymentId: string, options?: { amount?: string | number }): Promise<PaymentCapture>;
  /**
   * Verifies a payment and, when its status is final, runs its outcome's handlers exactly as a
   * webhook would (one claim for every path: whichever comes first runs them, once).
   */
  reconcilePayment(paymentId: string, options?: ReconcileOptions): Promise<ReconcileResult>;
  /** Refunds a completed standard payment. Never retried automatically once it may have been sent. */
  refundPayment(paymentId: string): Promise<PaymentRefund>;
  /** Cancels a pre-authorized payment and releases the reserved funds. */
  cancelPayment(paymentId: string): Promise<PaymentCancellation>;
  /** Lists the card bindings of one customer. */
  listBindings(clientId: string): Promise<CardBinding[]>;
}
