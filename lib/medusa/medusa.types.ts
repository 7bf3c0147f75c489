import type { MedusaSessionStatus, MedusaWebhookAction } from './medusa.status.js';

/**
 * The shapes Medusa's payment module hands a provider and expects back (`@medusajs/types`,
 * `payment/provider`), written out structurally so the provider's signatures do not depend on
 * Medusa's declarations being installed.
 */

/** The customer's account holder with this provider, as Medusa passes it. */
export interface MedusaAccountHolderRef {
  /** Medusa's id of the account holder. */
  id?: string;
  /** What the provider returned when it was created (`{ id }`: the service's `client_id`). */
  data?: Record<string, unknown>;
}

/** The customer, as Medusa passes it. */
export interface MedusaCustomerRef {
  /** Medusa's customer id. */
  id: string;
  /** The customer's email. */
  email: string;
}

/** What the payment module passes as `context`. */
export interface MedusaProviderContext {
  /** The customer's account holder with this provider, when one exists. */
  account_holder?: MedusaAccountHolderRef;
  /** The customer, when known. */
  customer?: MedusaCustomerRef;
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

/** What `initiatePayment` returns. */
export interface MedusaInitiateResult {
  /** The service's payment id. */
  id: string;
  /** Always `pending`: nothing is paid yet. */
  status: MedusaSessionStatus;
  /** The session's data (`MedusaPaymentData`: the checkout `link`, the payment id, the millimes). */
  data: Record<string, unknown>;
}

/** What `authorizePayment`, `getPaymentStatus` and `updatePayment` return. */
export interface MedusaStatusResult {
  /** The session's status from the verified outcome; absent when unchanged (`updatePayment`). */
  status?: MedusaSessionStatus;
  /** The session's data. */
  data: Record<string, unknown>;
}

/** What `authorizePayment` and `getPaymentStatus` return. */
export interface MedusaSessionResult {
  /** The session's status from the verified outcome. */
  status: MedusaSessionStatus;
  /** The session's data. */
  data: Record<string, unknown>;
}

/** The data of a webhook action: which session, and the verified amount in major units. */
export interface MedusaWebhookData {
  /** Medusa's payment session id (the payment's verified tracking id). */
  session_id: string;
  /** The verified amount in dinars, e.g. `'12.345'`. */
  amount: string;
}

/** What `getWebhookActionAndData` returns. */
export interface MedusaWebhookResult {
  /** What Medusa should do, from the verified outcome. */
  action: MedusaWebhookAction;
  /** The session and amount; absent when the delivery names no payment of this provider. */
  data?: MedusaWebhookData;
}

/** An account holder or a payment method as the provider returns it. */
export interface MedusaProviderRecord {
  /** Its id: the customer's id (account holder) or the binding id (payment method). */
  id: string;
  /** What Medusa stores with it. */
  data?: Record<string, unknown>;
}
