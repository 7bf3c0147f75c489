/**
 * When a request to the service may be sent again: the one retry decision, pure so that a table
 * test can pin it down. A GET changes nothing at the service, so it is retried on network
 * errors, 429 and 5xx. A POST (payment, refund, capture, cancel) is retried only when it surely
 * never reached the service: a second refund must never be risked.
 */
export type AttemptResult =
  /** An answer came back with this HTTP status. */
  | { status: number }
  /** No answer: `neverSent` when the failure happened before a byte was sent (connection refused, DNS). */
  | { error: string; neverSent: boolean; tooLarge?: boolean };

/**
 * @param method the request's method
 * @param result what the attempt produced
 * @returns whether another attempt is safe and useful (the caller also checks the attempt budget
 *   and {@link retryDelay})
 */
export function isRetryable(method: 'GET' | 'POST', result: AttemptResult): boolean {
  if ('status' in result) return method === 'GET' && (result.status === 429 || result.status >= 500);
  // A too-large answer will be as large next time.
  if (result.tooLarge) return false;
  return method === 'GET' || result.neverSent;
}

const BASE_DELAY_MS = 100;
/** Longest wait between two attempts of one call. */
export const MAX_RETRY_WAIT_MS = 5_000;
/** Longest `Retry-After` taken into account, in seconds. */
const MAX_RETRY_AFTER_SECS = 3_600;

/**
 * Exponential backoff with "equal jitter" (half fixed, half random), capped at {@link MAX_RETRY_WAIT_MS}.
 * @param attempt the attempt that just failed (1 for the first)
 * @param random the jitter's source, uniform in [0, 1) (default `Math.random`; a seeded one replays)
 */
export function backoff(attempt: number, random: () => number = Math.random): number {
  const exp = Math.min(MAX_RETRY_WAIT_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
  return exp / 2 + random() * (exp / 2);
}

/**
 * How long to wait before the next attempt of a retryable call: the backoff, or what the
 * service asked (`Retry-After`) when that is longer. Undefined when the service asked for more
 * than {@link MAX_RETRY_WAIT_MS}: the call then ends at once with the answer (`RATE_LIMITED` and
 * its `retryAfterSecs` for a 429), since waiting less would spend a call the service said it will
 * refuse, and waiting that long would hold a webhook or a return page.
 *
 * @param attempt the attempt that just failed (1 for the first)
 * @param retryAfter seconds the service asked to wait, if it said
 * @param random the jitter's source (see {@link backoff})
 */
export function retryDelay(
  attempt: number,
  retryAfter?: number,
  random: () => number = Math.random,
): number | undefined {
  const askedMs = (retryAfter ?? 0) * 1000;
  if (askedMs > MAX_RETRY_WAIT_MS) return undefined;
  return Math.max(backoff(attempt, random), askedMs);
}

/**
 * Seconds of a `Retry-After` header, given in seconds or as an HTTP date (at most an hour);
 * undefined when absent, malformed, or not in the future.
 *
 * @param header the header's value
 * @param now the current time in ms (for an HTTP date)
 */
export function retryAfterSecs(header: unknown, now = Date.now()): number | undefined {
  if (typeof header !== 'string' || header.trim() === '') return undefined;
  const text = header.trim();
  const seconds = /^[0-9]+$/.test(text) ? Number(text) : Math.ceil((Date.parse(text) - now) / 1000);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, MAX_RETRY_AFTER_SECS) : undefined;
}

/**
 * The retry decision as the transport is handed it by the client's composition root: whether an
 * attempt may be repeated, and how long to wait before it.
 */
export interface RetryPolicy {
  /** See {@link isRetryable}. */
  isRetryable: typeof isRetryable;
  /** See {@link backoff}. */
  backoff: typeof backoff;
  /** See {@link retryDelay}. */
  retryDelay: typeof retryDelay;
}

/** The plugin's retry policy: never risk a double refund (docs/confirmations.md, "Retries, only where a repeat cannot do harm"). */
export const RETRY_POLICY: RetryPolicy = Object.freeze({ isRetryable, backoff, retryDelay });
