import { MedusaError } from '@medusajs/framework/utils';
import type { CardDetails } from '../core/api/index.js';

/** A capture of a pre-authorization, as the provider records it in the payment's data. */
export interface MedusaCaptureRecord {
  /** Captured amount in millimes. */
  amount: string;
  /** ISO 8601 time of the capture. */
  at: string;
}

/** The refund of a payment, as the provider records it in the payment's data. */
export interface MedusaRefundRecord {
  /** The service's refund id. */
  refund_id: string;
  /** Refunded amount, as the service wrote it. */
  amount: string;
  /** ISO 8601 time of the refund. */
  refunded_at: string;
  /** Medusa's idempotency key of the refund that asked for it (its refund id): the same key retried is answered from here. */
  key?: string;
}

/**
 * The card of a paid or held payment, as the merchant sees it in the payment's `data` (Medusa's
 * Admin, the Store API): never the whole card number. Fields the service did not send are absent.
 */
export interface MedusaCardData {
  /** The card network as the service names it (e.g. `VISA`). */
  card_brand?: string;
  /** The card number masked (e.g. `450921**1119`): at most the first six and last four digits. */
  masked_pan?: string;
  /** The issuer's approval code. */
  approval_code?: string;
}

/** The card details in the names of the payment's `data`. Pure. */
export function medusaCardData(card: CardDetails): MedusaCardData {
  const out: MedusaCardData = {};
  if (card.cardBrand) out.card_brand = card.cardBrand;
  if (card.maskedPan) out.masked_pan = card.maskedPan;
  if (card.approvalCode) out.approval_code = card.approvalCode;
  return out;
}

/**
 * What the provider keeps in a payment session's (then the payment's) `data`: Medusa stores it
 * and hands it back on every call, so capture, cancel and refund know what was done already.
 */
export interface MedusaPaymentData extends MedusaCardData {
  /** The service's payment id. */
  payment_id: string;
  /** The checkout link to send the customer to. */
  link: string;
  /** The amount asked for, in millimes. */
  amount: string;
  /** Medusa's payment session id, sent as the payment's tracking id. */
  session_id?: string;
  /** The cart, when the storefront put it in the session's data (`cart_id`): named in error logs. */
  cart_id?: string;
  /** Whether the payment is a pre-authorization. */
  pre_authorization: boolean;
  /** The service's status at the last verification. */
  status?: string;
  /** Set once a pre-authorization is captured. */
  captured?: MedusaCaptureRecord;
  /** Set once the payment is refunded. */
  refund?: MedusaRefundRecord;
  /** Set once a pre-authorization is released. */
  cancelled_at?: string;
}

/** The provider's data of a session or payment, or a Medusa error naming what is missing. */
export function paymentDataOf(data: Record<string, unknown> | undefined, operation: string): MedusaPaymentData {
  const paymentId = data?.payment_id;
  if (typeof paymentId !== 'string' || paymentId === '' || typeof data?.amount !== 'string') {
    throw new MedusaError(
      MedusaError.Types.INVALID_DATA,
      `${operation}: the payment session has no payment of this provider (no payment_id in its data)`,
    );
  }
  return data as unknown as MedusaPaymentData;
}

/** The data Medusa should store: the provider's fields as a plain record. */
export function stored(data: MedusaPaymentData): Record<string, unknown> {
  return { ...data };
}

/** A string the storefront may pass in the session's `data` (e.g. `success_link`), if it is one. */
export function stringField(data: Record<string, unknown> | undefined, key: string): string | undefined {
  const value = data?.[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The payment id a webhook body names, where public clients of the service find it:
 * `payment_id`, `paymentId`, `data.payment_id`, `payment_ref`, `id`. Only a hint: the service's
 * verify answer decides what it means.
 */
export function webhookPaymentId(body: Record<string, unknown> | undefined): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const nested =
    typeof body.data === 'object' && body.data !== null ? (body.data as Record<string, unknown>).payment_id : undefined;
  for (const value of [body.payment_id, body.paymentId, nested, body.payment_ref, body.id]) {
    if (typeof value === 'string' && value !== '' && value.length <= 256) return value;
  }
  return undefined;
}
