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
 * @returns whether another attempt is safe and useful (the caller also checks the attempt budget)
 */
export function isRetryable(method: 'GET' | 'POST', result: AttemptResult): boolean {
  if ('status' in result) return method === 'GET' && (result.status === 429 || result.status >= 500);
  // A too-large answer will be as large next time.
  if (result.tooLarge) return false;
  return method === 'GET' || result.neverSent;
}

const BASE_DELAY_MS = 100;
const MAX_DELAY_MS = 5_000;

/** Exponential backoff with "equal jitter" (half fixed, half random), capped at 5 s, never below what the service asked. */
export function backoff(attempt: number, atLeastMs = 0): number {
  const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
  const jittered = exp / 2 + Math.random() * (exp / 2);
  return Math.min(MAX_DELAY_MS, Math.max(jittered, atLeastMs));
}

/** Seconds of a `Retry-After` header given in seconds; undefined otherwise. */
export function retryAfterSecs(header: unknown): number | undefined {
  const seconds = typeof header === 'string' ? Number(header) : NaN;
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) : undefined;
}
