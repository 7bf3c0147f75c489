/**
 * Bodies of the service's `verify_payment` answer (docs/service-facts.md §1), for tests that stand a
 * FakeService in for the service. `result.amount` is a JSON number, as the docs show it.
 */
export function verifyAnswer(options: {
  status: string;
  amount?: number;
  trackingId?: string;
  details?: Record<string, unknown>;
}): Record<string, unknown> {
  const result: Record<string, unknown> = {
    type: 'card',
    amount: options.amount ?? 12500,
    status: options.status,
    details: options.details ?? {
      order_number: '1',
      pan: '450921**1119',
      payment_system: 'VISA',
      currency: '788',
      destinations: [],
    },
  };
  if (options.trackingId !== undefined) result.developer_tracking_id = options.trackingId;
  return { success: true, result, status_code: 200, name: 'developers', code: 0, version: '2.0.0' };
}

/** The path of a payment's verify call. */
export const verifyPath = (paymentId: string): string => `/api/v2/verify_payment/${encodeURIComponent(paymentId)}`;

/** A generate answer as the service documents it; `minimal` as two public pages show it (no `result.success`). */
export function generateAnswer(
  paymentId: string,
  options: { minimal?: boolean; trackingId?: string } = {},
): Record<string, unknown> {
  const link = `https://checkout.example.test/shop/${paymentId}`;
  if (options.minimal) return { result: { payment_id: paymentId, link } };
  const result: Record<string, unknown> = { success: true, payment_id: paymentId, link };
  if (options.trackingId !== undefined) result.developer_tracking_id = options.trackingId;
  return { result, name: 'developers', code: 0, version: 'v2' };
}
