import type { PaymentOutcome } from '../core/store/index.js';

/** Medusa's `PaymentSessionStatus` values (`@medusajs/framework/utils`), as the provider returns them. */
export type MedusaSessionStatus =
  'authorized' | 'captured' | 'pending' | 'requires_more' | 'error' | 'canceled' | 'pending_authorization';

/** Medusa's `PaymentActions` values, as `getWebhookActionAndData` returns them. */
export type MedusaWebhookAction =
  | 'authorized'
  | 'captured'
  | 'failed'
  | 'pending'
  | 'requires_more'
  | 'canceled'
  | 'not_supported'
  | 'pending_authorization';

/** What one verified outcome means to Medusa: a payment session's status and a webhook's action. */
export interface MedusaOutcome {
  /** Returned by `authorizePayment` and `getPaymentStatus`. */
  status: MedusaSessionStatus;
  /** Returned by `getWebhookActionAndData`. */
  action: MedusaWebhookAction;
}

/**
 * The one table from the outcome `verify_payment` decided (through the core's settlement) to
 * Medusa's vocabulary. `SUCCESS` is money taken: `captured` (Medusa then records the capture
 * without calling `capturePayment`). A held pre-authorization is `authorized`. Pending stays
 * `pending`, which never completes a cart. A failed payment is `error` / `failed`; an expired
 * session (no payment expected) `canceled`. A verified amount or tracking id that differs from what
 * the session asked for never settles: `error` / `failed`, and the core logs it.
 */
const MEDUSA_OUTCOMES: Readonly<Record<PaymentOutcome, MedusaOutcome>> = Object.freeze({
  confirmed: { status: 'captured', action: 'captured' },
  authorized: { status: 'authorized', action: 'authorized' },
  pending: { status: 'pending', action: 'pending' },
  failed: { status: 'error', action: 'failed' },
  expired: { status: 'canceled', action: 'canceled' },
  mismatch: { status: 'error', action: 'failed' },
  // A second charge of a session another payment already settled: the money was taken (captured),
  // but nothing in Medusa is to complete again; `payment.duplicate` reports it for a refund.
  duplicate: { status: 'captured', action: 'not_supported' },
});

/** Medusa's status and action for a verified outcome. */
export function medusaOutcomeOf(outcome: PaymentOutcome): MedusaOutcome {
  return MEDUSA_OUTCOMES[outcome];
}
