/**
 * The one table from a sandbox payment's state to the `result.status` that `verify_payment`
 * answers (and that webhooks carry), so the API, the webhooks and the settlement results can
 * never disagree about what a payment "is".
 *
 * Values come from the public docs (docs/service-facts.md §1): `SUCCESS`, `PENDING`, `EXPIRED`,
 * `FAILURE`, and from public clients `PREAUTH_SUCCESS` and `SYSTEM_FAILURE`. Two mappings are the
 * sandbox's choice, because no public page shows them:
 *
 * - a refunded payment still verifies as `SUCCESS`: the payment did succeed, and the refund is a
 *   record of its own (refund_payment answers it); a reconciler must not re-read it as unpaid;
 * - a cancelled pre-authorization verifies as `EXPIRED`, the documented value meaning "no payment
 *   expected": never paid, never held. What the real service answers is unknown (`CANCELLED` is
 *   not a documented value, so the sandbox does not invent it).
 *
 * `SYSTEM_FAILURE` is never produced by the state machine; inject it with a fault if needed.
 */
/**
 * States of a sandbox payment. The spec names only "completed" (here `paid`), "pre-authorized"
 * and "cancelled"; the sandbox adds `pending` (created, not yet paid), `failed` (customer
 * declined), `expired` (session timed out), `refunded` (the service's documentation does not show the state after a
 * refund; a distinct one so a second refund is refused) and `captured` (a pre-authorization
 * captured with confirm_payment, in full or in part). What verify_payment answers for each is in
 * `sandbox.status.ts`.
 */
export type SandboxPaymentState =
  'pending' | 'paid' | 'failed' | 'expired' | 'refunded' | 'preauthorized' | 'captured' | 'cancelled';

/** Every `result.status` value the public docs and clients name, in the order the docs list them. */
export const SANDBOX_VERIFY_STATUSES = [
  'SUCCESS',
  'PENDING',
  'EXPIRED',
  'FAILURE',
  'PREAUTH_SUCCESS',
  'SYSTEM_FAILURE',
] as const;

/** A `result.status` value of verify_payment (and the `status` of a webhook). */
export type SandboxVerifyStatus = (typeof SANDBOX_VERIFY_STATUSES)[number];

const STATUS_OF_STATE: Readonly<Record<SandboxPaymentState, SandboxVerifyStatus>> = Object.freeze({
  pending: 'PENDING',
  paid: 'SUCCESS',
  refunded: 'SUCCESS',
  captured: 'SUCCESS',
  failed: 'FAILURE',
  expired: 'EXPIRED',
  preauthorized: 'PREAUTH_SUCCESS',
  cancelled: 'EXPIRED',
});

/** The verify status of a payment in `state`. */
export function verifyStatusOf(state: SandboxPaymentState): SandboxVerifyStatus {
  return STATUS_OF_STATE[state];
}

/**
 * Statuses that trigger a webhook: the outcomes the customer causes on the checkout page (paid,
 * held, declined). The docs describe success and failure webhooks only; an expiry happens with no
 * one on the page, and public clients re-check pending payments on a schedule instead of waiting
 * for one (moodle-paygw_flouci reconcile task), so the sandbox sends none for `EXPIRED`.
 */
export function isWebhookStatus(status: SandboxVerifyStatus): boolean {
  return status === 'SUCCESS' || status === 'PREAUTH_SUCCESS' || status === 'FAILURE';
}
