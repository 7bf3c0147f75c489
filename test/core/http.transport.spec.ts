import { describe, expect, it } from '@jest/globals';
import {
  backoff,
  isRetryable,
  MAX_RETRY_WAIT_MS,
  retryAfterSecs,
  retryDelay,
  type AttemptResult,
} from '../../lib/core/api/http.transport.js';

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

  it('backs off exponentially with equal jitter, capped at 5 s', () => {
    for (let attempt = 1; attempt <= 10; attempt++) {
      const full = Math.min(5000, 100 * 2 ** (attempt - 1));
      const delay = backoff(attempt);
      expect(delay).toBeGreaterThanOrEqual(full / 2);
      expect(delay).toBeLessThanOrEqual(full);
    }
  });

  // [attempt, Retry-After seconds, wait: the backoff range, or undefined = end the call now with the answer]
  const WAITS: Array<[number, number | undefined, [number, number] | undefined]> = [
    [1, undefined, [50, 100]],
    [3, undefined, [200, 400]],
    [10, undefined, [MAX_RETRY_WAIT_MS / 2, MAX_RETRY_WAIT_MS]],
    [1, 2, [2000, 2000]],
    [1, 5, [5000, 5000]],
    [8, 1, [2500, 5000]],
    [1, 6, undefined],
    [1, 60, undefined],
    [1, 3600, undefined],
  ];
  it.each(WAITS)('after attempt %i with Retry-After %p: wait %p', (attempt, retryAfter, range) => {
    const wait = retryDelay(attempt, retryAfter);
    if (range === undefined) return expect(wait).toBeUndefined();
    expect(wait).toBeGreaterThanOrEqual(range[0]);
    expect(wait).toBeLessThanOrEqual(range[1]);
  });

  const NOW = Date.parse('2026-05-01T12:00:00Z');
  it.each([
    ['3', 3],
    [' 3 ', 3],
    ['0', undefined],
    ['-1', undefined],
    ['1.5', undefined],
    ['Wed, 21 Oct 2015 07:28:00 GMT', undefined],
    ['Fri, 01 May 2026 12:01:00 GMT', 60],
    ['Sat, 02 May 2026 12:00:00 GMT', 3600],
    ['soon', undefined],
    ['', undefined],
    [undefined, undefined],
    ['99999', 3600],
  ])('reads Retry-After %j as %j seconds', (header, expected) => {
    expect(retryAfterSecs(header, NOW)).toBe(expected);
  });
});
