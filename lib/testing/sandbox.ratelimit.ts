/**
 * Counting and rate-limiting of verify_payment calls, per payment id. The docs warn that repeated
 * verify calls get rate-limited (docs/service-facts.md §1) without numbers, so the limit is off unless
 * a test asks for one; the counts are always kept, so a test can hold a client to a call budget.
 */
import type { SandboxRateLimit } from './sandbox.types.js';

/** Whether a call may be answered, or how long to wait. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSecs: number };

interface Window {
  startMs: number;
  count: number;
}

/** Throws a TypeError unless `limit` is null/undefined or two positive integers. */
export function validateRateLimit(limit: SandboxRateLimit | null | undefined): void {
  if (limit === null || limit === undefined) return;
  const ok = (n: unknown): boolean => typeof n === 'number' && Number.isSafeInteger(n) && n > 0;
  if (!ok(limit.max) || !ok(limit.windowMs))
    throw new TypeError('PaymentsSandbox: verifyRateLimit needs positive integers max and windowMs');
}

/** Per-payment-id call counts and fixed windows, on the sandbox clock. */
export class VerifyLimiter {
  private readonly counts = new Map<string, number>();
  private readonly windows = new Map<string, Window>();
  private total = 0;

  /**
   * @param now the sandbox clock, so a test moves time instead of waiting
   * @param limit the limit; null for none
   */
  constructor(
    private readonly now: () => number,
    private limit: SandboxRateLimit | null,
  ) {}

  /** Replaces the limit (null: none) and forgets the open windows; counts are kept. */
  setLimit(limit: SandboxRateLimit | null): void {
    validateRateLimit(limit);
    this.limit = limit === null ? null : { max: limit.max, windowMs: limit.windowMs };
    this.windows.clear();
  }

  /** Counts one authenticated call for `paymentId` and decides whether it is answered or gets 429. */
  call(paymentId: string): RateDecision {
    this.total += 1;
    this.counts.set(paymentId, (this.counts.get(paymentId) ?? 0) + 1);
    if (!this.limit) return { allowed: true };
    const now = this.now();
    let window = this.windows.get(paymentId);
    if (!window || now >= window.startMs + this.limit.windowMs) {
      window = { startMs: now, count: 0 };
      this.windows.set(paymentId, window);
    }
    if (window.count >= this.limit.max) {
      return {
        allowed: false,
        retryAfterSecs: Math.max(1, Math.ceil((window.startMs + this.limit.windowMs - now) / 1000)),
      };
    }
    window.count += 1;
    return { allowed: true };
  }

  /** Calls counted for one payment id, or for all of them when `paymentId` is undefined. */
  calls(paymentId?: string): number {
    return paymentId === undefined ? this.total : (this.counts.get(paymentId) ?? 0);
  }
}
