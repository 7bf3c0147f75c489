import { PaymentsValidationError } from './payments.errors.js';

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
