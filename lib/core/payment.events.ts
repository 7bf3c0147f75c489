/** Names of the events the plugin emits. */
export const PaymentEvents = {
  /** A payment was confirmed through an authenticated webhook. Payload: {@link PaymentConfirmedEvent}. */
  CONFIRMED: 'payment.confirmed',
  /** A refund succeeded through `refundPayment`. Payload: {@link PaymentRefundedEvent}. */
  REFUNDED: 'payment.refunded',
  /** A cancellation succeeded through `cancelPayment`. Payload: {@link PaymentCancelledEvent}. */
  CANCELLED: 'payment.cancelled',
} as const;

/** One of the event names in {@link PaymentEvents}. */
export type PaymentEventName = (typeof PaymentEvents)[keyof typeof PaymentEvents];

/** Emitted once per payment when the service confirms it through the signed webhook. */
export class PaymentConfirmedEvent {
  /**
   * @param paymentId the confirmed payment
   * @param amount amount in millimes, as recorded when the plugin generated the payment
   * @param developerTrackingId tracking id recorded at generation (your order id), if any
   * @param receivedAt when the webhook arrived
   * @param payload the webhook's body as received (parsed JSON or form fields; `{}` when none)
   * @param query the webhook's query parameters, without the plugin's own token
   */
  constructor(
    readonly paymentId: string,
    readonly amount: string,
    readonly developerTrackingId: string | undefined,
    readonly receivedAt: Date,
    readonly payload: Readonly<Record<string, unknown>>,
    readonly query: Readonly<Record<string, unknown>>,
  ) {}
}

/** Emitted after `refundPayment` succeeded. */
export class PaymentRefundedEvent {
  /**
   * @param paymentId the refunded payment
   * @param refundId the service's id of the refund
   * @param amount the refunded amount as the service wrote it
   * @param refundedAt ISO 8601 time of the refund
   */
  constructor(
    readonly paymentId: string,
    readonly refundId: string,
    readonly amount: string,
    readonly refundedAt: string,
  ) {}
}

/** Emitted after `cancelPayment` succeeded. */
export class PaymentCancelledEvent {
  /**
   * @param paymentId the cancelled payment
   * @param cancelledAt ISO 8601 time of the cancellation
   */
  constructor(
    readonly paymentId: string,
    readonly cancelledAt: string,
  ) {}
}
