import { describe, expect, it } from '@jest/globals';
import { backoff, isRetryable, retryAfterSecs, type AttemptResult } from '../../lib/core/retry.policy.js';

// The whole retry decision in one table: [method, what the attempt produced, retry?].
const TABLE: Array<['GET' | 'POST', AttemptResult, boolean]> = [
  ['GET', { status: 200 }, false],
  ['GET', { status: 400 }, false],
  ['GET', { status: 401 }, false],
  ['GET', { status: 404 }, false],
  ['GET', { status: 429 }, true],
  ['GET', { status: 500 }, true],
  ['GET', { status: 502 }, true],
  ['GET', { status: 503 }, true],
  ['POST', { status: 429 }, false],
  ['POST', { status: 500 }, false],
  ['POST', { status: 503 }, false],
  ['GET', { error: 'ECONNRESET', neverSent: false }, true],
  ['GET', { error: 'ETIMEDOUT', neverSent: false }, true],
  ['GET', { error: 'ECONNREFUSED', neverSent: true }, true],
  ['GET', { error: 'too large', neverSent: false, tooLarge: true }, false],
  ['POST', { error: 'ECONNREFUSED', neverSent: true }, true],
  ['POST', { error: 'ENOTFOUND', neverSent: true }, true],
  ['POST', { error: 'ECONNRESET', neverSent: false }, false],
  ['POST', { error: 'ETIMEDOUT', neverSent: false }, false],
];

describe('the retry decision', () => {
  it.each(TABLE)('%s after %j: retry %s', (method, result, expected) => {
    expect(isRetryable(method, result)).toBe(expected);
  });

  it('backs off exponentially with equal jitter, capped at 5 s, never below what the service asked', () => {
    for (let attempt = 1; attempt <= 10; attempt++) {
      const full = Math.min(5000, 100 * 2 ** (attempt - 1));
      const delay = backoff(attempt);
      expect(delay).toBeGreaterThanOrEqual(full / 2);
      expect(delay).toBeLessThanOrEqual(full);
    }
    expect(backoff(1, 2000)).toBe(2000);
    expect(backoff(1, 60_000)).toBe(5000);
  });

  it.each([
    ['3', 3],
    ['0', undefined],
    ['-1', undefined],
    ['Wed, 21 Oct 2015 07:28:00 GMT', undefined],
    [undefined, undefined],
    ['99999', 3600],
  ])('reads Retry-After %j as %j seconds', (header, expected) => {
    expect(retryAfterSecs(header)).toBe(expected);
  });
});
