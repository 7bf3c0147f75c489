import { normalizeMillimes } from './money.util.js';
import type { CardBinding, GeneratePaymentInput, GeneratedPayment, PaymentCancellation, PaymentRefund } from './payments.types.js';

/** The JSON body of `generate_payment`, as it travels. */
export interface GeneratePaymentWire {
  amount: string;
  success_link: string;
  fail_link: string;
  webhook?: string;
  developer_tracking_id?: string;
  session_timeout_secs?: number;
  accept_card?: boolean;
  image_url?: string;
}

/** A JSON object as parsed from a body. */
export type JsonObject = Record<string, unknown>;

/** Narrows an unknown parsed body to a plain JSON object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const GENERATE_FIELDS = [
  ['webhook', 'webhook'],
  ['developerTrackingId', 'developer_tracking_id'],
  ['sessionTimeoutSecs', 'session_timeout_secs'],
  ['acceptCard', 'accept_card'],
  ['imageUrl', 'image_url'],
] as const;

/**
 * camelCase input -> snake_case wire body. Unset optional fields are omitted (never null), and
 * `amount` always becomes a string of digits. Expects validated input.
 */
export function toGeneratePaymentWire(input: GeneratePaymentInput): GeneratePaymentWire {
  const wire: GeneratePaymentWire = {
    amount: normalizeMillimes(input.amount) as string,
    success_link: input.successLink as string,
    fail_link: input.failLink as string,
  };
  for (const [from, to] of GENERATE_FIELDS) {
    const value = input[from];
    if (value !== undefined && value !== null) (wire as unknown as JsonObject)[to] = value;
  }
  return wire;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/** `result` of a successful generate answer -> camelCase; undefined when it lacks id or link. */
export function fromGeneratePaymentWire(result: JsonObject): GeneratedPayment | undefined {
  const paymentId = str(result.payment_id);
  const link = str(result.link);
  if (!paymentId || !link) return undefined;
  const tracking = str(result.developer_tracking_id);
  return tracking === undefined ? { paymentId, link } : { paymentId, link, developerTrackingId: tracking };
}

/** `result` of a successful refund answer -> camelCase; undefined when it lacks the ids. */
export function fromRefundWire(result: JsonObject): PaymentRefund | undefined {
  const refundId = str(result.refund_id);
  const paymentId = str(result.payment_id);
  if (!refundId || !paymentId) return undefined;
  return {
    refundId,
    paymentId,
    amount: str(result.amount) ?? '',
    status: str(result.status) ?? '',
    refundedAt: str(result.refunded_at) ?? '',
  };
}

/** `result` of a successful cancel answer -> camelCase; undefined when it lacks the id. */
export function fromCancellationWire(result: JsonObject): PaymentCancellation | undefined {
  const paymentId = str(result.payment_id);
  if (!paymentId) return undefined;
  return { paymentId, status: str(result.status) ?? '', cancelledAt: str(result.cancelled_at) ?? '' };
}

/** One binding of a bindings answer -> camelCase; undefined when it is not an object with an id. */
export function fromBindingWire(binding: unknown): CardBinding | undefined {
  if (!isJsonObject(binding)) return undefined;
  const bindingId = str(binding.binding_id);
  if (!bindingId) return undefined;
  return {
    bindingId,
    clientId: str(binding.client_id) ?? '',
    cardLastFour: str(binding.card_last_four) ?? '',
    cardBrand: str(binding.card_brand) ?? '',
    status: str(binding.status) ?? '',
    createdAt: str(binding.created_at) ?? '',
  };
}
