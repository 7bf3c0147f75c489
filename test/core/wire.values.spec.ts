import { describe, expect, it } from '@jest/globals';
import { fromMillimes, PaymentsValidationError, toMillimes } from '../../lib/index.js';

describe('toMillimes', () => {
  it.each([
    ['12.5', '12500'],
    ['12.500', '12500'],
    ['0.001', '1'],
    ['0', '0'],
    ['007.25', '7250'],
    ['123456789012345678901234567890.999', '123456789012345678901234567890999'],
    [3, '3000'],
    [0.1, '100'],
    [19.99, '19990'],
  ])('%p dinars -> %p millimes', (input, expected) => {
    expect(toMillimes(input)).toBe(expected);
  });

  it.each(['12.3456', '-1', '+1', '1e3', '', ' 1', '1,5', '١٢', '.5', '5.', 'abc', 'Infinity'])(
    'refuses %p',
    (input) => {
      expect(() => toMillimes(input)).toThrow(PaymentsValidationError);
    },
  );

  it.each([NaN, Infinity, -2, 1e21, 1e-7])('refuses the number %p', (input) => {
    expect(() => toMillimes(input)).toThrow(PaymentsValidationError);
  });
});

describe('fromMillimes', () => {
  it.each([
    ['12500', '12.500'],
    ['5', '0.005'],
    ['0', '0.000'],
    ['1000', '1.000'],
    ['000123', '0.123'],
    ['123456789012345678901234567890999', '123456789012345678901234567890.999'],
    [12500, '12.500'],
  ])('%p millimes -> %p dinars', (input, expected) => {
    expect(fromMillimes(input)).toBe(expected);
  });

  it.each(['12.5', '-5', '', '1e3', '٣', 1.5, -1])('refuses %p', (input) => {
    expect(() => fromMillimes(input)).toThrow(PaymentsValidationError);
  });

  it('round-trips', () => {
    for (const m of ['1', '999', '1000', '1234567']) expect(toMillimes(fromMillimes(m))).toBe(m);
  });
});
