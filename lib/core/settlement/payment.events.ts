import type { OutcomeSource, PaymentOutcome } from '../store/payments.store.js';
import type { VerifiedPayment } from '../api/payments.types.js';

/** Names of the events the plugin emits. */
export const PaymentEvents = {
  /** The service verified the payment as paid (`SUCCESS`). Payload: {@link PaymentConfirmedEvent}. */
  CONFIRMED: 'payment.confirmed',
  /** The service verified the payment as failed (`FAILURE`, `SYSTEM_FAILURE`). Payload: {@link PaymentFailedEvent}. */
  FAILED: 'payment.failed',
  /** The session ended unpaid (`EXPIRED`). Payload: {@link PaymentExpiredEvent}. */
  EXPIRED: 'payment.expired',
  /** A pre-authorization holds the amount (`PREAUTH_SUCCESS`); capture or cancel it. Payload: {@link PaymentAuthorizedEvent}. */
  AUTHORIZED: 'payment.authorized',
  /** The service's amount or tracking id differs from what the plugin sent: never confirmed. Payload: {@link PaymentMismatchEvent}. */
  MISMATCH: 'payment.mismatch',
  /** `capturePayment` succeeded. Payload: {@link PaymentCapturedEvent}. */
  CAPTURED: 'payment.captured',
  /** `refundPayment` succeeded. Payload: {@link PaymentRefundedEvent}. */
  REFUNDED: 'payment.refunded',
  /** `cancelPayment` succeeded. Payload: {@link PaymentCancelledEvent}. */
  CANCELLED: 'payment.cancelled',
} as const;

/** One of the event names in {@link PaymentEvents}. */
export type PaymentEventName = (typeof PaymentEvents)[keyof typeof PaymentEvents];

/**
 * What every outcome event carries. The amount and tracking id are the service's verified ones;
 * they were checked against what the plugin sent (or what the caller expected) before a
 * confirmation is emitted.
 */
export class PaymentOutcomeEvent {
  /**
   * @param outcome what the verified status means
   * @param verification the service's verify answer this outcome rests on
   * @param source which path led here: `webhook`, `return` or `reconciliation`
   * @param registration the module registration's `name` (several merchant accounts), if any
   * @param occurredAt when the plugin learned the outcome
   */
  constructor(
    readonly outcome: PaymentOutcome,
    readonly verification: VerifiedPayment,
    readonly source: OutcomeSource,
    readonly registration: string | undefined,
    readonly occurredAt: Date = new Date(),
  ) {}

  /** The payment. */
  get paymentId(): string {
    return this.verification.paymentId;
  }

  /** Verified amount in millimes. */
  get amount(): string {
    return this.verification.amount;
  }

  /** Verified tracking id (your order id), if any. */
  get developerTrackingId(): string | undefined {
    return this.verification.developerTrackingId;
  }

  /** The service's status as sent, e.g. `SUCCESS`. */
  get status(): string {
    return this.verification.status;
  }

  /** A plain copy for logs and queues (the getters are not own properties). */
  toJSON(): Record<string, unknown> {
    return {
      outcome: this.outcome,
      paymentId: this.paymentId,
      amount: this.amount,
      developerTrackingId: this.developerTrackingId,
      status: this.status,
      source: this.source,
      registration: this.registration,
      occurredAt: this.occurredAt.toISOString(),
    };
  }
}

/** Emitted once per payment when the service verifies it as paid. */
export class PaymentConfirmedEvent extends PaymentOutcomeEvent {}
/** Emitted once per payment when the service verifies it as failed. */
export class PaymentFailedEvent extends PaymentOutcomeEvent {}
/** Emitted once per payment when its session ended unpaid. */
export class PaymentExpiredEvent extends PaymentOutcomeEvent {}
/** Emitted once per pre-authorization when the service holds the amount. */
export class PaymentAuthorizedEvent extends PaymentOutcomeEvent {}

/** Emitted when the service's account of a payment differs from what the plugin sent or the caller expected. */
export class PaymentMismatchEvent extends PaymentOutcomeEvent {
  /**
   * @param verification the service's verify answer
   * @param source which path found it
   * @param registration the module registration's name, if any
   * @param problems what differs, e.g. `amount 100 instead of 12500`
   */
  constructor(
    verification: VerifiedPayment,
    source: OutcomeSource,
    registration: string | undefined,
    readonly problems: readonly string[],
  ) {
    super('mismatch', verification, source, registration);
  }
}

/** Emitted after `capturePayment` succeeded. */
export class PaymentCapturedEvent {
  /**
   * @param paymentId the captured payment
   * @param amount captured amount in millimes, when the service said
   * @param capturedAt ISO 8601 time of the capture, when the service said
   * @param status the service's status, e.g. `confirmed`
   * @param registration the module registration's `name` (several merchant accounts), if any
   */
  constructor(
    readonly paymentId: string,
    readonly amount: string | undefined,
    readonly capturedAt: string | undefined,
    readonly status: string,
    readonly registration?: string,
  ) {}
}

/** Emitted after `refundPayment` succeeded. */
export class PaymentRefundedEvent {
  /**
   * @param paymentId the refunded payment
   * @param refundId the service's id of the refund
   * @param amount the refunded amount as the service wrote it
   * @param refundedAt ISO 8601 time of the refund
   * @param registration the module registration's `name` (several merchant accounts), if any
   */
  constructor(
    readonly paymentId: string,
    readonly refundId: string,
    readonly amount: string,
    readonly refundedAt: string,
    readonly registration?: string,
  ) {}
}

/** Emitted after `cancelPayment` succeeded. */
export class PaymentCancelledEvent {
  /**
   * @param paymentId the cancelled payment
   * @param cancelledAt ISO 8601 time of the cancellation
   * @param registration the module registration's `name` (several merchant accounts), if any
   */
  constructor(
    readonly paymentId: string,
    readonly cancelledAt: string,
    readonly registration?: string,
  ) {}
}

/** Any event the plugin emits: an outcome's, or a capture's, refund's or cancellation's. */
export type PaymentEvent = PaymentOutcomeEvent | PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent;
