/**
 * The shapes Medusa's payment module hands a provider and expects back (`@medusajs/types`,
 * `payment/provider`), written out structurally so the provider's signatures do not depend on
 * Medusa's declarations being installed.
 */

/** What the payment module passes as `context`. */
export interface MedusaProviderContext {
  /** The customer's account holder with this provider, when one exists. */
  account_holder?: { id?: string; data?: Record<string, unknown> };
  /** The customer, when known. */
  customer?: { id: string; email: string; first_name?: string | null; last_name?: string | null };
  /** Medusa's key for this call: the session id, the capture id, the refund id... */
  idempotency_key?: string;
}

/** Every provider call's input: the session's or payment's `data`, and the context. */
export interface MedusaProviderInput {
  /** What the provider returned last (initiate, authorize, capture, refund...). */
  data?: Record<string, unknown>;
  /** The call's context. */
  context?: MedusaProviderContext;
}

/** Input of `initiatePayment` and `updatePayment`. */
export interface MedusaAmountInput extends MedusaProviderInput {
  /** Medusa's amount in major units (`BigNumberInput`). */
  amount: unknown;
  /** ISO 4217 code, lower case. */
  currency_code: string;
}

/** Input of `refundPayment`. */
export interface MedusaRefundInput extends MedusaProviderInput {
  /** The refund's amount in major units (`BigNumberInput`). */
  amount: unknown;
}

/** What most provider calls return. */
export interface MedusaProviderOutput {
  /** Stored by Medusa on the session or payment, handed back on the next call. */
  data?: Record<string, unknown>;
}

/** Medusa's webhook payload (`ProviderWebhookPayload["payload"]`). */
export interface MedusaWebhookPayload {
  /** The parsed body. */
  data: Record<string, unknown>;
  /** The raw body. */
  rawData: string | Buffer;
  /** The request's headers. */
  headers: Record<string, unknown>;
}
