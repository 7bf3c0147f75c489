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
import { isJsonObject, type JsonObject } from './json.util.js';

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
