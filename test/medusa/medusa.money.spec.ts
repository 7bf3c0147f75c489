import fc from 'fast-check';
import { dinarsOf, MedusaAmountError, millimesOf } from '../../lib/medusa/medusa.money.js';
import { medusaOutcomeOf } from '../../lib/medusa/medusa.status.js';

// Medusa's BigNumber, as @medusajs/framework/utils builds it: `raw` holds the decimal text at
// 20 significant digits (bignumber.js toPrecision(20), exponent form below 1e-7).
const medusaBigNumber = (value: string) => ({ raw: { value, precision: 20 }, numeric: Number(value) });

describe('millimesOf: Medusa amounts in dinars -> exact millimes', () => {
  it.each<[unknown, string]>([
    ['12.5', '12500'],
    ['12.345', '12345'],
    [12.345, '12345'],
    [0.1, '100'],
    [3, '3000'],
    [3n, '3000'],
    ['.5', '500'],
    ['007.010', '7010'],
    [{ value: '1.2345e1' }, '12345'],
    [medusaBigNumber('12.345000000000000000'), '12345'],
    [medusaBigNumber('1.0000000000000000000e-7'), '0'],
    [{ toFixed: () => '99.999' }, '99999'],
    ['123456789012345678.9', '123456789012345678900'],
    // A fraction of a millime is rounded half up, as Medusa rounds to a currency's precision.
    ['0.0005', '1'],
    ['0.00049', '0'],
    ['12.3456', '12346'],
    [0.1 + 0.2, '300'],
    ['1e3', '1000000'],
    ['0', '0'],
  ])('%p -> %s', (amount, millimes) => {
    expect(millimesOf(amount, 'tnd')).toBe(millimes);
  });

  it.each<[unknown, string]>([
    ['-1', 'tnd'],
    ['abc', 'tnd'],
    ['', 'tnd'],
    ['.', 'tnd'],
    [Number.NaN, 'tnd'],
    [Infinity, 'tnd'],
    [null, 'tnd'],
    [{}, 'tnd'],
    ['1e400', 'tnd'],
    ['12.5', 'eur'],
    ['12.5', ''],
  ])('refuses %p in %p', (amount, currency) => {
    expect(() => millimesOf(amount, currency)).toThrow(MedusaAmountError);
  });

  it('accepts the currency in any case', () => {
    expect(millimesOf('1', 'TND')).toBe('1000');
  });

  it('round-trips every whole number of millimes through dinarsOf', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n }), (m) => {
        expect(millimesOf(dinarsOf(m.toString()), 'tnd')).toBe(m.toString());
      }),
    );
  });
});

describe('medusaOutcomeOf: the verified outcome in Medusa terms', () => {
  it.each([
    ['confirmed', 'captured', 'captured'],
    ['authorized', 'authorized', 'authorized'],
    ['pending', 'pending', 'pending'],
    ['failed', 'error', 'failed'],
    ['expired', 'canceled', 'canceled'],
    ['mismatch', 'error', 'failed'],
  ] as const)('%s -> session %s, webhook action %s', (outcome, status, action) => {
    expect(medusaOutcomeOf(outcome)).toEqual({ status, action });
  });
});
