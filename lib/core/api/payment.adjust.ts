import type { GeneratePaymentInput } from './payment.fields.js';

/**
 * The fields of an order's payment request that a platform's per-order hook (Vendure's and
 * Medusa's `paymentRequest` option) may set. The amount, the tracking id, pre-authorization and
 * the webhook stay the plugin's: the settlement checks the first three against what the service
 * verifies, and the webhook's address carries the token that leads the delivery to its account.
 */
export const ADJUSTABLE_PAYMENT_FIELDS = [
  'successLink',
  'failLink',
  'sessionTimeoutSecs',
  'acceptCard',
  'imageUrl',
] as const satisfies ReadonlyArray<keyof GeneratePaymentInput>;

/** What a per-order hook returns: fields of {@link ADJUSTABLE_PAYMENT_FIELDS}, each with its field's rule. */
export type PaymentRequestAdjustments = Partial<Pick<GeneratePaymentInput, (typeof ADJUSTABLE_PAYMENT_FIELDS)[number]>>;

/**
 * The request with a hook's adjustments (pure): each field the hook set (not `undefined`)
 * replaces the plugin's; nothing returned changes nothing. The values are checked by
 * `generatePayment`, which names a field whose value breaks its rule.
 * @param request the request the plugin made for the order
 * @param adjustments what the hook returned
 * @param hook how the hook is named in an error, e.g. `paymentRequest`
 * @throws TypeError naming a field the hook may not set (never its value)
 */
export function adjustedPaymentRequest<T extends GeneratePaymentInput>(
  request: T,
  adjustments: PaymentRequestAdjustments | undefined | void,
  hook: string,
): T {
  if (adjustments === undefined || adjustments === null) return request;
  if (typeof adjustments !== 'object')
    throw new TypeError(`nestjs-payments: ${hook} must return an object of the fields to set, or nothing`);
  const allowed: ReadonlyArray<string> = ADJUSTABLE_PAYMENT_FIELDS;
  const refused = Object.keys(adjustments).filter((key) => !allowed.includes(key));
  if (refused.length > 0)
    throw new TypeError(
      `nestjs-payments: ${hook} may set ${ADJUSTABLE_PAYMENT_FIELDS.join(', ')} only; it returned ${refused.join(', ')}`,
    );
  const adjusted: T = { ...request };
  for (const [key, value] of Object.entries(adjustments)) {
    if (value !== undefined) Object.assign(adjusted, { [key]: value });
  }
  return adjusted;
}
