/**
 * The values the service's wire carries, checked and converted without any package: identifiers
 * (a payment id also goes into the verify request's path) and amounts (millimes, the wire's unit,
 * and dinars). The sandbox runs with no package installed and takes these rules from this file;
 * the rules that need class-validator are in `payment.rules.ts`.
 */
import { PaymentsValidationError } from './payments.errors.js';

/** A JSON object as parsed from a body. */
export type JsonObject = Record<string, unknown>;

/** Narrows an unknown parsed body to a plain JSON object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The value rules of the plugin, each in one place: request fields (`payment.fields.ts`),
 * options (`payments.options.ts`) and the service's answers (`wire.mapper.ts`) all use these.
 * A rule returns `undefined` when the value is acceptable, otherwise the message to show (the
 * value itself is never echoed: it may be a secret).
 */
export type ValueRule = (value: unknown) => string | undefined;

/** Longest identifier accepted in a request or an answer (payment, tracking, client, merchant ids). */
export const MAX_ID_LENGTH = 256;

/**
 * An identifier: a non-blank string of at most 256 characters, without control characters
 * (a CR/LF would split a log line or a header) and without lone surrogates (they cannot be
 * percent-encoded into a URL). The sandbox accepts a `client_id` by this same rule.
 */
export const identifier: ValueRule = (value) => {
  if (typeof value !== 'string' || !/\S/.test(value)) return 'must be a non-empty string';
  if (value.length > MAX_ID_LENGTH) return `must be at most ${MAX_ID_LENGTH} characters`;
  if (/\p{Cc}/u.test(value)) return 'must not contain control characters (line breaks, tabs, NUL)';
  if (/\p{Cs}/u.test(value)) return 'must be well-formed Unicode text (no lone surrogates)';
  return undefined;
};

/** Letters, digits, `_` and `-`, at most {@link MAX_ID_LENGTH}: an id every rule below accepts. */
const PLAIN_ID = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * A payment id, which goes into the path of the verify request: an {@link identifier} that cannot
 * change which path is requested. Encoding keeps `/`, `?` and `#` inside the segment, but `.` and
 * `..` are dot segments that URL resolution removes (`..` would request the API's root with the
 * merchant's credentials), and a server or proxy in front of it may decode `%2e%2e`, `%2f` or a
 * backslash into one. No id the service assigns looks like that.
 */
export const pathSegmentId: ValueRule = (value) => {
  // The common shape first (every id the service assigns): none of the rules below can refuse it.
  if (typeof value === 'string' && PLAIN_ID.test(value)) return undefined;
  const problem = identifier(value);
  if (problem) return problem;
  const id = value as string;
  if (/^\.+$/.test(id.trim())) return 'must not be only dots (a dot segment would change the request path)';
  if (/[/\\?#]/.test(id)) return 'must not contain "/", "\\", "?" or "#" (it would change the request path)';
  if (/%[0-9a-f]{2}/i.test(id))
    return 'must not contain percent-escapes such as %2e or %2f (a server may decode them into the path)';
  return undefined;
};

// ASCII digits only: `\d` in JS regexps never matches other scripts' digits, but being explicit
// documents the intent (the service's amounts are plain ASCII digit strings).
const DINARS = /^([0-9]+)(?:\.([0-9]{1,3}))?$/;
const MILLIMES = /^[0-9]+$/;

function invalid(field: string, message: string): PaymentsValidationError {
  return new PaymentsValidationError([{ field, messages: [message] }], 'amount');
}

/**
 * Converts an amount in dinars to millimes (1 dinar = 1000 millimes), exactly, with string
 * arithmetic: `toMillimes('12.5') === '12500'`, `toMillimes(3) === '3000'`.
 *
 * @param dinars a non-negative decimal with at most 3 decimals, as a string (`'12.5'`) or a finite
 *   number whose shortest representation has no exponent
 * @returns the amount in millimes as a string of digits without leading zeros
 * @throws PaymentsValidationError for signs, exponents, more than 3 decimals, or anything else
 */
export function toMillimes(dinars: string | number): string {
  const text = typeof dinars === 'number' && Number.isFinite(dinars) ? String(dinars) : dinars;
  const match = typeof text === 'string' ? DINARS.exec(text) : null;
  if (!match) {
    throw invalid('dinars', 'must be a non-negative decimal number with at most 3 decimals, like "12.5"');
  }
  const whole = match[1].replace(/^0+(?=.)/, '');
  const fraction = (match[2] ?? '').padEnd(3, '0');
  return (whole + fraction).replace(/^0+(?=.)/, '');
}

/**
 * Converts an amount in millimes to dinars with exactly 3 decimals:
 * `fromMillimes('12500') === '12.500'`, `fromMillimes(5) === '0.005'`.
 *
 * @param millimes a string of ASCII digits, or a non-negative safe integer
 * @returns the amount in dinars, e.g. `'12.500'`
 * @throws PaymentsValidationError for anything that is not a whole number of millimes
 */
export function fromMillimes(millimes: string | number): string {
  const text =
    typeof millimes === 'number' && Number.isSafeInteger(millimes) && millimes >= 0 ? String(millimes) : millimes;
  if (typeof text !== 'string' || !MILLIMES.test(text)) {
    throw invalid('millimes', 'must be a whole number of millimes (ASCII digits only)');
  }
  const padded = text.replace(/^0+(?=.)/, '').padStart(4, '0');
  return `${padded.slice(0, -3)}.${padded.slice(-3)}`;
}

/**
 * Normalises a payment amount for the wire: a positive whole number of millimes as a string
 * of digits. Returns `undefined` when the value is not one (the caller reports the field).
 *
 * @param value a digit string such as `'12500'` or a positive safe integer such as `12500`
 */
export function normalizeMillimes(value: unknown): string | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value > 0 ? String(value) : undefined;
  }
  if (typeof value === 'string' && /^[0-9]+$/.test(value) && /[1-9]/.test(value)) {
    return value.replace(/^0+/, '');
  }
  return undefined;
}
