// Vendure keeps money as integers of the currency's minor unit, with `moneyStrategy.precision`
// decimals (default 2); the service counts millimes (3 decimals of the dinar). Both conversions
// are integer arithmetic on BigInt: never a float.

/** The one currency the service takes. */
export const SERVICE_CURRENCY = 'TND';

/** Decimals of the service's unit: 1 dinar = 1000 millimes. */
const MILLIME_DECIMALS = 3;

/** A refund of a {@link CoveringPayment}. */
export interface CoveringRefund {
  /** Refunded amount in minor units. */
  total: number;
  /** Vendure refund state. */
  state: string;
}

/** A payment's part of what covers an order: its amount, its state and its refunds. */
export interface CoveringPayment {
  /** Amount in Vendure's minor units. */
  amount: number;
  /** Vendure payment state. */
  state: string;
  /** Refunds of the payment; only `Settled` ones count. */
  refunds?: ReadonlyArray<CoveringRefund>;
}

function checkPrecision(precision: number): void {
  if (!Number.isSafeInteger(precision) || precision < 0 || precision > 12)
    throw new RangeError(`money precision must be an integer from 0 to 12, got ${precision}`);
}

/**
 * Converts a Vendure amount (integer minor units of TND at `precision` decimals) to millimes,
 * exactly: `vendureToMillimes(12550, 2) === '125500'`, `vendureToMillimes(12555, 3) === '12555'`.
 *
 * @param amount a non-negative safe integer of minor units
 * @param precision Vendure's `moneyStrategy.precision` (default 2)
 * @returns millimes as a string of digits
 * @throws RangeError when the amount is not a non-negative safe integer, or has a fraction of a
 *   millime (precision above 3 and a value not a multiple of 10^(precision-3))
 */
export function vendureToMillimes(amount: number, precision: number): string {
  checkPrecision(precision);
  if (!Number.isSafeInteger(amount) || amount < 0)
    throw new RangeError(`amount must be a non-negative safe integer of minor units, got ${amount}`);
  const minor = BigInt(amount);
  if (precision <= MILLIME_DECIMALS) return (minor * 10n ** BigInt(MILLIME_DECIMALS - precision)).toString();
  const per = 10n ** BigInt(precision - MILLIME_DECIMALS);
  if (minor % per !== 0n) throw new RangeError(`${amount} at precision ${precision} is not a whole number of millimes`);
  return (minor / per).toString();
}

/**
 * Converts millimes to a Vendure amount (integer minor units at `precision` decimals), exactly:
 * `millimesToVendure('125500', 2) === 12550`.
 *
 * @param millimes a string of ASCII digits
 * @param precision Vendure's `moneyStrategy.precision`
 * @returns the amount in minor units
 * @throws RangeError when the millimes do not make a whole number of minor units (e.g. 5 millimes
 *   at precision 2), or are not digits, or exceed a safe integer
 */
export function millimesToVendure(millimes: string, precision: number): number {
  checkPrecision(precision);
  if (!/^[0-9]+$/.test(millimes))
    throw new RangeError(`millimes must be a string of digits, got ${JSON.stringify(millimes)}`);
  const value = BigInt(millimes);
  let minor: bigint;
  if (precision >= MILLIME_DECIMALS) minor = value * 10n ** BigInt(precision - MILLIME_DECIMALS);
  else {
    const per = 10n ** BigInt(MILLIME_DECIMALS - precision);
    if (value % per !== 0n)
      throw new RangeError(`${millimes} millimes is not a whole number of minor units at precision ${precision}`);
    minor = value / per;
  }
  if (minor > BigInt(Number.MAX_SAFE_INTEGER))
    throw new RangeError(`${millimes} millimes exceeds a safe integer of minor units`);
  return Number(minor);
}

/**
 * What an order still owes: its total with tax minus what its payments cover (payments that are
 * not `Error`, `Declined` or `Cancelled`, less their settled refunds), as Vendure counts it
 * (`totalCoveredByPayments`). Never below zero.
 *
 * @param totalWithTax the order's `totalWithTax`, in minor units
 * @param payments the order's payments (with their refunds)
 */
export function amountOwed(totalWithTax: number, payments: readonly CoveringPayment[]): number {
  let covered = 0;
  for (const payment of payments) {
    if (payment.state === 'Error' || payment.state === 'Declined' || payment.state === 'Cancelled') continue;
    const refunded = (payment.refunds ?? [])
      .filter((r) => r.state === 'Settled')
      .reduce((sum, r) => sum + Math.abs(r.total), 0);
    covered += payment.amount - refunded;
  }
  return Math.max(0, totalWithTax - covered);
}
