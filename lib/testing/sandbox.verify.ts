/**
 * The body of a `verify_payment` answer (docs/service-facts.md §1), built from a payment snapshot.
 * Its shape follows the docs' example key for key; where the example cannot say (a payment not
 * yet paid, a decline), the sandbox's choices are:
 *
 * - `result.amount` is a JSON number of millimes, as in the example (a string everywhere else):
 *   the held amount for a pre-authorization, the captured amount once captured;
 * - card fields (`name`, `pan`, `payment_system`, `expiration`, `approval_code`) carry the sandbox
 *   card once the customer paid, and are `""` before (or without) a payment;
 * - `binding_id` is present only when paying created a binding (payment made with `client_id`);
 * - a declined payment adds `details.reason: "declined by the customer"` (the docs say "details
 *   say why" without naming the field);
 * - `developer_tracking_id` is present only when the payment has one, as in generate's answer.
 */
import { SANDBOX_CARD } from './sandbox.state.js';
import { verifyStatusOf } from './sandbox.status.js';
import type { SandboxPayment } from './sandbox.types.js';

/** Top-level labels of the answer, exactly as the docs' example shows them. */
export const VERIFY_LABELS = Object.freeze({ name: 'developers', code: 0, version: '2.0.0' });

/** ISO 4217 numeric code of the Tunisian dinar, as the docs' example writes it. */
const CURRENCY_TND = '788';

/** The whole JSON answer of a successful verify_payment for `payment`. */
export function verifyAnswer(payment: SandboxPayment): Record<string, unknown> {
  const status = verifyStatusOf(payment.state);
  const paid = payment.paidAt !== undefined;
  const details: Record<string, unknown> = {
    order_number: payment.orderNumber,
    name: paid ? SANDBOX_CARD.holder : '',
    pan: paid ? SANDBOX_CARD.pan : '',
    payment_system: paid ? SANDBOX_CARD.brand : '',
    expiration: paid ? SANDBOX_CARD.expiration : '',
    approval_code: payment.approvalCode ?? '',
    currency: CURRENCY_TND,
    phone_number: '',
    email: '',
    bank_country_code: '',
    destinations: payment.destinations ?? [],
  };
  if (payment.bindingId !== undefined) details.binding_id = payment.bindingId;
  if (payment.state === 'failed') details.reason = 'declined by the customer';
  const result: Record<string, unknown> = {
    type: 'card',
    amount: Number(payment.capturedAmount ?? payment.amount),
    status,
    details,
  };
  if (payment.developerTrackingId !== undefined) result.developer_tracking_id = payment.developerTrackingId;
  return { success: true, result, status_code: 200, ...VERIFY_LABELS };
}
