import { fromMillimes } from '../core/api/index.js';

/** The one currency the service takes: Tunisian dinars, counted in millimes (3 decimals). */
export const MEDUSA_CURRENCY = 'tnd';

/** Decimal places of the dinar: 1 dinar = 1000 millimes. */
const DINAR_DECIMALS = 3;

/** Largest exponent accepted in an amount's text (`1.5e3`): beyond it the value is not an order's. */
const MAX_EXPONENT = 30;

/** A decimal in plain or scientific notation, as Medusa and bignumber.js write them. */
const DECIMAL = /^\+?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$/;

/** Why an amount was refused: said in the error Medusa shows. */
export class MedusaAmountError extends Error {
  /** @param message what is wrong with the amount (never its whole object) */
  constructor(message: string) {
    super(message);
    this.name = 'MedusaAmountError';
  }
}

/**
 * The decimal text of one of Medusa's amount shapes (`BigNumberInput`): a string, a number, a
 * bigint, a `BigNumberRawValue` (`{ value, precision }`), Medusa's `BigNumber` (its `raw`), or a
 * bignumber.js value (`toFixed()`). Never through a float: a number is read from its shortest
 * decimal text, exactly what JavaScript holds.
 */
function decimalText(amount: unknown): string | undefined {
  if (typeof amount === 'string') return amount.trim();
  if (typeof amount === 'number') return Number.isFinite(amount) ? String(amount) : undefined;
  if (typeof amount === 'bigint') return amount.toString();
  if (typeof amount !== 'object' || amount === null) return undefined;
  const shape = amount as { raw?: unknown; value?: unknown; toFixed?: unknown };
  if (typeof shape.raw === 'object' && shape.raw !== null && 'value' in shape.raw) return decimalText(shape.raw.value);
  if ('value' in shape && (typeof shape.value === 'string' || typeof shape.value === 'number'))
    return decimalText(shape.value);
  if (typeof shape.toFixed === 'function') {
    const text: unknown = (shape.toFixed as () => unknown).call(amount);
    return typeof text === 'string' ? text : undefined;
  }
  return undefined;
}

/**
 * Converts an amount of Medusa's, in major units (dinars), to a whole number of millimes, with
 * string arithmetic only: `'12.5'` -> `'12500'`, `new BigNumber(0.1)` -> `'100'`,
 * `{ value: '1.2345e1' }` -> `'12345'`. A fraction of a millime (tax computed on a line) is
 * rounded half up, as Medusa itself rounds an amount to its currency's precision.
 *
 * @param amount a `BigNumberInput` (string, number, bigint, `{ value }`, Medusa's `BigNumber`)
 * @param currencyCode the amount's currency; only `tnd` (any case) is accepted
 * @returns the millimes as digits without leading zeros (`'0'` for zero)
 * @throws MedusaAmountError for another currency, a negative, non-finite or unreadable amount
 */
export function millimesOf(amount: unknown, currencyCode: string): string {
  if (typeof currencyCode !== 'string' || currencyCode.toLowerCase() !== MEDUSA_CURRENCY) {
    throw new MedusaAmountError(
      `the service takes amounts in TND only (millimes); this amount is in ${String(currencyCode).slice(0, 8) || 'no currency'}`,
    );
  }
  const text = decimalText(amount);
  const match = text === undefined ? null : DECIMAL.exec(text);
  if (!match || (match[1] === '' && (match[2] ?? '') === '')) {
    throw new MedusaAmountError('the amount is not a non-negative decimal number');
  }
  const exponent = Number(match[3] ?? '0');
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT)
    throw new MedusaAmountError('the amount is out of range');
  // All digits, and where the decimal point falls in them once scaled to millimes.
  const digits = `${match[1]}${match[2] ?? ''}`;
  const point = match[1].length + exponent + DINAR_DECIMALS;
  const padded =
    point > digits.length
      ? digits.padEnd(point, '0')
      : point < 0
        ? digits.padStart(digits.length - point, '0')
        : digits;
  const at = Math.max(point, 0);
  const whole = padded.slice(0, at) || '0';
  const rest = padded.slice(at);
  const millimes = BigInt(whole) + (rest !== '' && rest[0] >= '5' ? 1n : 0n);
  return millimes.toString();
}

/**
 * Converts millimes to the major-unit decimal Medusa keeps (`'12500'` -> `'12.500'`), exactly.
 * @param millimes a digit string or a non-negative safe integer
 */
export function dinarsOf(millimes: string | number): string {
  return fromMillimes(millimes);
}
