/**
 * Input and output shapes of the four operations, in camelCase. On the wire they travel in
 * snake_case (see `wire.mapper.ts`).
 */

/** Input of `generatePayment`: the spec's request fields in camelCase. */
export interface GeneratePaymentInput {
  /**
   * Amount to pay, in millimes (1 dinar = 1000 millimes): a string of ASCII digits such as
   * `'12500'` or a positive safe integer. Decimals, signs and exponents are refused; use
   * `toMillimes('12.5')` to convert from dinars.
   */
  amount: string | number;
  /** Absolute http(s) URL the customer is sent to after success. Defaults to the module's `successLink`. */
  successLink?: string;
  /** Absolute http(s) URL the customer is sent to after failure. Defaults to the module's `failLink`. */
  failLink?: string;
  /**
   * Absolute http(s) URL that receives the payment confirmation. Leave unset to let the plugin
   * fill in its own signed webhook URL (when `webhook.publicUrl` and `webhook.secret` are set).
   */
  webhook?: string;
  /** Your own identifier of the order; echoed back, not checked by the service. */
  developerTrackingId?: string;
  /** Session timeout in seconds (service default: 1200). Defaults to the module's `sessionTimeoutSecs`. */
  sessionTimeoutSecs?: number;
  /** Whether card payments are accepted (service default: false). Defaults to the module's `acceptCard`. */
  acceptCard?: boolean;
  /** Image shown on the payment page (service default: the merchant portal's). Defaults to the module's `imageUrl`. */
  imageUrl?: string;
}

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
  /** Refunded amount as the service wrote it (the spec does not state its unit). */
  amount: string;
  /** Status of the refund; the spec shows `"success"`. */
  status: string;
  /** ISO 8601 UTC timestamp of the refund. */
  refundedAt: string;
}

/** Result of `cancelPayment`. */
export interface PaymentCancellation {
  /** Identifier of the cancelled payment. */
  paymentId: string;
  /** Status after cancellation; the spec shows `"cancelled"`. */
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
  /** Status of the binding; the spec shows `"active"` and no other value. */
  status: string;
  /** ISO 8601 UTC timestamp of creation. */
  createdAt: string;
}

/** The four operations, shared by `PaymentsService` (Nest) and `createPaymentsClient` (Express). */
export interface PaymentsOperations {
  /** Creates a payment and returns the link to redirect the customer to. */
  generatePayment(input: GeneratePaymentInput): Promise<GeneratedPayment>;
  /** Refunds a completed standard payment. Never retried automatically once it may have been sent. */
  refundPayment(paymentId: string): Promise<PaymentRefund>;
  /** Cancels a pre-authorized payment and releases the reserved funds. */
  cancelPayment(paymentId: string): Promise<PaymentCancellation>;
  /** Lists the card bindings of one customer. */
  listBindings(clientId: string): Promise<CardBinding[]>;
}
