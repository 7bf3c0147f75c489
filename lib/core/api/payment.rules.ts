import { isURL } from 'class-validator';
import { normalizeMillimes, type ValueRule } from './wire.values.js';

// The identifier rule is with the wire's values (it needs no class-validator), so the sandbox can use it too.
export { identifier, MAX_ID_LENGTH, type ValueRule } from './wire.values.js';

/** Longest URL accepted (browsers and proxies commonly cap at about 2 KiB). */
export const MAX_URL_LENGTH = 2048;
/** Most digits of an amount in millimes: below 2^53, so every amount is also an exact JSON number. */
export const MAX_AMOUNT_DIGITS = 15;

const URL_OPTIONS = {
  protocols: ['http', 'https'],
  require_protocol: true,
  require_tld: false,
  require_host: true,
  allow_underscores: true,
};

/**
 * An absolute http(s) URL without credentials in it. Hosts without a TLD (`localhost`, a Docker
 * service name such as `payments`) are fine. `user:pass@` is refused: axios would replace the
 * Bearer header with Basic auth built from it, and it would show wherever the URL is printed.
 */
export const httpUrl: ValueRule = (value) => {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH || !isURL(value, URL_OPTIONS))
    return 'is not an absolute http(s) URL';
  const url = new URL(value);
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password (user:pass@host)';
  return undefined;
};

/** A positive whole number of millimes: a digit string or a positive safe integer, at most 15 digits. */
export const millimes: ValueRule = (value) => {
  const normalized = normalizeMillimes(value);
  const tooLong = `must have at most ${MAX_AMOUNT_DIGITS} digits`;
  if (normalized !== undefined) return normalized.length <= MAX_AMOUNT_DIGITS ? undefined : tooLong;
  // A whole number beyond 2^53 - 1 is not exact any more: it is too long, not dinars.
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return tooLong;
  const looksLikeDinars =
    (typeof value === 'number' && Number.isFinite(value) && value > 0) ||
    (typeof value === 'string' && /^[0-9]+\.[0-9]+$/.test(value));
  if (looksLikeDinars) return `looks like dinars: amounts are whole millimes, e.g. toMillimes('${String(value)}')`;
  return 'must be a positive whole number of millimes: ASCII digits like "12500" or a positive safe integer';
};

/** A positive safe integer (beyond 2^53 - 1 a number is no longer exact, and 1e21 would travel as "1e+21"). */
export const positiveInteger: ValueRule = (value) =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? undefined : 'must be a positive integer';

/** `true` or `false`. */
export const boolean: ValueRule = (value) => (typeof value === 'boolean' ? undefined : 'must be a boolean');

/** An integer from `min` to `max`, both included. */
export const integerBetween =
  (min: number, max: number): ValueRule =>
  (value) =>
    typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max
      ? undefined
      : `must be an integer from ${min} to ${max}`;

/** One of the listed strings. */
export const oneOf =
  (allowed: readonly string[]): ValueRule =>
  (value) =>
    typeof value === 'string' && allowed.includes(value)
      ? undefined
      : `must be ${allowed
          .map((a) => `'${a}'`)
          .join(', ')
          .replace(/, ([^,]*)$/, ' or $1')}`;

/** A string matching `pattern` (anchored by the caller); `message` says what is expected. */
export const matches =
  (pattern: RegExp, message: string): ValueRule =>
  (value) =>
    typeof value === 'string' && pattern.test(value) ? undefined : message;

/** A string of at least `length` characters (e.g. a secret); its value is never part of the message. */
export const minLength =
  (length: number): ValueRule =>
  (value) =>
    typeof value === 'string' && value.length >= length
      ? undefined
      : `must be a string of at least ${length} characters`;
