/**
 * The service's wire, read: its paths, its answers parsed (the error shapes mapped to one error
 * class each, in `interpretResponse`) and the success answers turned into the camelCase results,
 * every identifier and link in them checked before it is passed on.
 */
import {
  CancellationFailedError,
  InvalidClientIdError,
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsRateLimitedError,
  RefundNotAllowedError,
  type PaymentsApiErrorDetails,
  type PaymentsOperation,
} from './payments.errors.js';
import { httpUrl, identifier, MAX_URL_LENGTH } from './payment.rules.js';
import { isJsonObject, type JsonObject } from './wire.values.js';
import type {
  CardBinding,
  GeneratedPayment,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  VerifiedPayment,
} from './payments.types.js';

/** An answer of the service as the transport returns it: status, text, parsed JSON and what the service asked to wait. */
export interface RawResponse {
  status: number;
  /** The body's text, the private key cut out. */
  body: string;
  /** The body parsed as JSON (the private key cut out of every string), when the transport parsed it; else the body is parsed here. */
  json?: unknown;
  /** Seconds from a `Retry-After` header, when there was one. */
  retryAfterSecs?: number;
}

const EXCERPT_LENGTH = 200;

/** Parses a body as JSON; `undefined` when it is empty or not JSON. */
export function parseJson(body: string): unknown {
  if (!/\S/.test(body)) return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

function excerpt(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT_LENGTH ? `${flat.slice(0, EXCERPT_LENGTH)}…` : flat;
}

function message(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, 500) : undefined;
}

const CODE_ERRORS: Record<string, new (d: PaymentsApiErrorDetails) => PaymentsApiError> = {
  REFUND_NOT_ALLOWED: RefundNotAllowedError,
  CANCELLATION_FAILED: CancellationFailedError,
  INVALID_CLIENT_ID: InvalidClientIdError,
};

/**
 * The one status-and-code -> error mapping. 401/403 (in the HTTP status or the body's own) is
 * always an authentication error; a known service code gets its class; otherwise the code is the
 * service's, or derived from the status.
 */
export function apiError(
  statuses: number[],
  serviceCode: string | undefined,
  details: PaymentsApiErrorDetails,
): PaymentsApiError {
  if (statuses.some((s) => s === 401 || s === 403)) return new PaymentsAuthenticationError(details);
  // The status decides: a 429 whose body carried the service's own code is still a rate limit.
  if (statuses.includes(429) || serviceCode === 'RATE_LIMITED')
    return new PaymentsRateLimitedError(details, serviceCode);
  if (serviceCode !== undefined) {
    const Known = CODE_ERRORS[serviceCode];
    return Known ? new Known(details) : new PaymentsApiError(serviceCode, details);
  }
  const status = statuses.find((s) => s >= 300) ?? details.httpStatus;
  const code =
    status >= 300 && status < 400
      ? 'UNEXPECTED_REDIRECT'
      : status === 400
        ? 'BAD_REQUEST'
        : status === 404
          ? 'NOT_FOUND'
          : status === 429
            ? 'RATE_LIMITED'
            : status >= 200 && status < 300
              ? 'INVALID_RESPONSE'
              : 'API_ERROR';
  return new PaymentsApiError(code, details);
}

/**
 * Reads an answer: the parsed JSON object when it is a success in the shape of `operation`,
 * otherwise throws the matching {@link PaymentsApiError}. The body decides over the HTTP status:
 * an error body on HTTP 200 is still an error.
 *
 * @param isSuccess tells whether a parsed object is the operation's success shape
 */
export function interpretResponse(
  operation: PaymentsOperation,
  response: RawResponse,
  isSuccess: (json: JsonObject) => boolean,
): JsonObject {
  const { status } = response;
  const json = response.json !== undefined ? response.json : parseJson(response.body);
  // The success shape first: it is the common case, and needs none of the error details below.
  if (status >= 200 && status < 300 && isJsonObject(json) && !isErrorShape(json) && isSuccess(json)) return json;
  const base = {
    operation,
    httpStatus: status,
    ...(response.retryAfterSecs !== undefined ? { retryAfterSecs: response.retryAfterSecs } : {}),
  };

  if (!isJsonObject(json)) throw apiError([status], undefined, { ...base, bodyExcerpt: excerpt(response.body) });

  // Flat shape (refund, cancel, capture): {status: "error", message, code}
  if (json.status === 'error')
    throw apiError([status], message(json.code) ?? 'API_ERROR', { ...base, serviceMessage: message(json.message) });

  // Nested shape (generate, bindings, verify): {result: {status: 400, message}}, or verify's {success: false}
  if (isErrorShape(json)) {
    const nested = isJsonObject(json.result) ? json.result : {};
    const nestedStatus = typeof nested.status === 'number' ? nested.status : status;
    const details = { ...base, serviceMessage: message(nested.message) ?? message(json.message) };
    const invalidClient = operation === 'listBindings' && /client_id/i.test(details.serviceMessage ?? '');
    throw apiError([status, nestedStatus], invalidClient ? 'INVALID_CLIENT_ID' : undefined, {
      ...details,
      httpStatus: status,
    });
  }

  throw apiError([status], undefined, { ...base, bodyExcerpt: excerpt(response.body) });
}

/** An error body, whatever the HTTP status: the flat `{status: "error"}` or a nested error (`result.status` a number, or `success: false`). */
function isErrorShape(json: JsonObject): boolean {
  if (json.status === 'error' || json.success === false) return true;
  const result = json.result;
  return isJsonObject(result) && (typeof result.status === 'number' || result.success === false);
}

/** The service's paths (docs/service-facts.md §1, §4, §5 and §7). */
export const SERVICE_PATHS = {
  generate: '/api/v2/generate_payment',
  verify: '/api/v2/verify_payment/',
  capture: '/api/v2/confirm_payment',
  refund: '/api/v2/refund_payment',
  cancel: '/api/v2/cancel_payment',
  bindings: '/api/v2/bindings/list',
} as const;

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/**
 * An identifier the service may leave out: `undefined` when absent (missing, null or empty),
 * the text when it passes the {@link identifier} rule, `false` when it is malformed (a line
 * break, 257 characters, an object...): such a value is never passed on to logs, events or URLs.
 */
function optionalId(value: unknown): string | undefined | false {
  if (value === undefined || value === null || value === '') return undefined;
  const text = str(value);
  return text !== undefined && identifier(text) === undefined ? text : false;
}

/** An identifier the answer must carry: the text, or undefined when missing or malformed. */
function requiredId(value: unknown): string | undefined {
  return optionalId(value) || undefined;
}

/**
 * The shape of almost every link a service sends: http(s), a host name of letter-, digit- and
 * hyphen-labels ending with a label that has a letter (an IPv4 address goes the long way), an
 * optional port, and a path, query and fragment of URL characters only. Every string it matches
 * also passes {@link httpUrl} (test/core/payment-link.spec.ts checks that), which is then spared:
 * class-validator's isURL costs several times more per link (docs/performance.md).
 */
const PLAIN_LINK =
  /^https?:\/\/(?=[^/?#:]{1,253}(?:[:/?#]|$))(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*(?=[a-z0-9-]*[a-z])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?::([0-9]{1,5}))?(?:[/?#][A-Za-z0-9._~!$&'()*+,;=:@%/?#-]*)?$/i;

/**
 * Whether a link of an answer is an absolute http(s) URL without credentials ({@link httpUrl}),
 * the common shape checked first by a regular expression.
 */
export function isHttpLink(link: string): boolean {
  if (link.length <= MAX_URL_LENGTH) {
    const plain = PLAIN_LINK.exec(link);
    if (plain && (plain[1] === undefined || (Number(plain[1]) >= 1 && Number(plain[1]) <= 65_535))) return true;
  }
  return httpUrl(link) === undefined;
}

/**
 * `result` of a successful generate answer -> camelCase; undefined when it lacks a well-formed
 * payment id or an http(s) link, or has a malformed tracking id (a `javascript:` link or an id
 * with a line break is not passed on).
 */
export function fromGeneratePaymentWire(result: JsonObject): GeneratedPayment | undefined {
  const paymentId = requiredId(result.payment_id);
  const link = str(result.link);
  const tracking = optionalId(result.developer_tracking_id);
  if (paymentId === undefined || link === undefined || !isHttpLink(link) || tracking === false) return undefined;
  return tracking === undefined ? { paymentId, link } : { paymentId, link, developerTrackingId: tracking };
}

/**
 * A successful verify answer -> camelCase (docs/service-facts.md §1): `result.amount` comes as a JSON
 * number and becomes a digit string; the status is kept exactly as sent. Undefined when the
 * status or the amount is missing or malformed, or the tracking id or the type is malformed.
 */
export function fromVerifyWire(paymentId: string, result: JsonObject): VerifiedPayment | undefined {
  const status =
    typeof result.status === 'string' && result.status !== '' && result.status.length <= 64 ? result.status : undefined;
  const amount =
    typeof result.amount === 'number' && Number.isSafeInteger(result.amount) && result.amount >= 0
      ? String(result.amount)
      : typeof result.amount === 'string' && /^[0-9]{1,15}$/.test(result.amount)
        ? result.amount.replace(/^0+(?=.)/, '')
        : undefined;
  const tracking = optionalId(result.developer_tracking_id);
  const type = optionalId(result.type);
  const named = optionalId(result.payment_id);
  if (status === undefined || amount === undefined || tracking === false || type === false || named === false)
    return undefined;
  const verified: VerifiedPayment = { paymentId, status, amount };
  // Kept as sent: an answer about another payment must be told apart (settlement.decision.ts).
  if (named !== undefined) verified.answeredPaymentId = named;
  if (tracking !== undefined) verified.developerTrackingId = tracking;
  if (type !== undefined) verified.type = type;
  if (isJsonObject(result.details)) verified.details = result.details;
  return verified;
}

/**
 * `result` of a successful capture answer -> camelCase (both documented shapes, docs/service-facts.md
 * §5); undefined without a status or with a malformed payment id.
 */
export function fromCaptureWire(paymentId: string, result: JsonObject): PaymentCapture | undefined {
  const status = str(result.status);
  const answered = optionalId(result.payment_id);
  if (status === undefined || answered === false) return undefined;
  const capture: PaymentCapture = { paymentId: answered ?? paymentId, status };
  const amount = str(result.amount);
  if (amount !== undefined) capture.amount = amount;
  const at = str(result.confirmed_at) ?? str(result.captured_at);
  if (at !== undefined) capture.capturedAt = at;
  return capture;
}

/** `result` of a successful refund answer -> camelCase; undefined when it lacks the ids or the payment id is malformed. */
export function fromRefundWire(result: JsonObject): PaymentRefund | undefined {
  const refundId = str(result.refund_id);
  const paymentId = requiredId(result.payment_id);
  if (!refundId || !paymentId) return undefined;
  return {
    refundId,
    paymentId,
    amount: str(result.amount) ?? '',
    status: str(result.status) ?? '',
    refundedAt: str(result.refunded_at) ?? '',
  };
}

/** `result` of a successful cancel answer -> camelCase; undefined when its payment id is missing or malformed. */
export function fromCancellationWire(result: JsonObject): PaymentCancellation | undefined {
  const paymentId = requiredId(result.payment_id);
  if (paymentId === undefined) return undefined;
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
