import {
  CancellationFailedError,
  InvalidClientIdError,
  PaymentsApiError,
  PaymentsAuthenticationError,
  RefundNotAllowedError,
  type PaymentsApiErrorDetails,
  type PaymentsOperation,
} from './payments.errors.js';
import { isJsonObject, type JsonObject } from './wire.mapper.js';

/** An answer of the service as the transport returns it: status and raw text. */
export interface RawResponse {
  status: number;
  body: string;
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
  return typeof value === 'string' && value !== '' ? value : undefined;
}

const FLAT_ERRORS: Record<string, new (d: PaymentsApiErrorDetails) => PaymentsApiError> = {
  REFUND_NOT_ALLOWED: RefundNotAllowedError,
  CANCELLATION_FAILED: CancellationFailedError,
};

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
  const json = parseJson(response.body);
  const base = { operation, httpStatus: status };

  if (!isJsonObject(json)) {
    const details = { ...base, bodyExcerpt: excerpt(response.body) };
    if (status === 401 || status === 403) throw new PaymentsAuthenticationError(details);
    throw new PaymentsApiError(status >= 300 && status < 400 ? 'UNEXPECTED_REDIRECT' : 'INVALID_RESPONSE', details);
  }

  // Flat shape (refund, cancel): {status: "error", message, code}
  if (json.status === 'error') {
    const code = message(json.code) ?? 'API_ERROR';
    const details = { ...base, serviceMessage: message(json.message) };
    if (status === 401 || status === 403) throw new PaymentsAuthenticationError(details);
    const Known = FLAT_ERRORS[code];
    throw Known ? new Known(details) : new PaymentsApiError(code, details);
  }

  // Nested shape (generate, bindings): {result: {status: 400, message}}
  const result = json.result;
  if (isJsonObject(result) && (typeof result.status === 'number' || result.success === false)) {
    const nestedStatus = typeof result.status === 'number' ? result.status : status;
    const details = { ...base, serviceMessage: message(result.message) };
    if ([status, nestedStatus].some((s) => s === 401 || s === 403)) throw new PaymentsAuthenticationError(details);
    if (operation === 'listBindings' && /client_id/i.test(details.serviceMessage ?? '')) throw new InvalidClientIdError(details);
    throw new PaymentsApiError(nestedStatus === 400 ? 'BAD_REQUEST' : 'API_ERROR', details);
  }

  if (status >= 200 && status < 300 && isSuccess(json)) return json;

  const details = { ...base, bodyExcerpt: excerpt(response.body) };
  if (status === 401 || status === 403) throw new PaymentsAuthenticationError(details);
  if (status >= 300 && status < 400) throw new PaymentsApiError('UNEXPECTED_REDIRECT', details);
  throw new PaymentsApiError(status >= 200 && status < 300 ? 'INVALID_RESPONSE' : 'API_ERROR', details);
}
