import type { LRUCache } from 'lru-cache';
import { PaymentsApiError, type PaymentsError } from '../api/index.js';
import { monotonicNow, type Clock } from '../time/index.js';
import type { RateLimiter } from '../store/index.js';
import type { SettleResult } from './settlement.request.js';
import { assertNever, boundedCache } from '../common/index.js';

/**
 * Verifies the return check may spend on payment ids this plugin knows nothing of (no queue entry,
 * no outcome record): a stranger typing ids into a return page must not spend the merchant's
 * verify budget (the service rate-limits and bans on repeated verifies), while a genuine payment
 * whose memory store was lost in a restart still gets checked now and then. The budget is the
 * store's, shared by every instance and kept across restarts ({@link fleetSlots}); each instance
 * also keeps a bucket of its own, so that a flood costs the store few round trips.
 */
export const STRANGER_BUDGET = {
  /** Verifies at most in a burst: per instance, and for the whole fleet within {@link STRANGER_BUDGET.windowMs}. */
  burst: 5,
  /** One more verify allowed every this many ms on one instance (5 a minute). */
  refillMs: 12_000,
  /** The fleet's window: at most `burst` verifies of unknown ids in it, whatever the instances. */
  windowMs: 60_000,
  /** How long a payment id the service answered 404 for is remembered. */
  notFoundMs: 3_600_000,
  /** Most such ids remembered. */
  notFoundMax: 10_000,
} as const;

/** A token bucket: whole tokens left and when it was last refilled. */
export interface BucketState {
  /** Tokens left. */
  readonly tokens: number;
  /** When it was last refilled, ms (the budget's clock: monotonic time when the instance has it). */
  readonly at: number;
}

/**
 * The unknown ids' token bucket (pure): refilled one token per `refillMs` since `at` up to
 * `burst`; a call takes one when there is one.
 */
export function takeToken(
  state: BucketState,
  now: number,
  burst: number,
  refillMs: number,
): { allowed: boolean; state: BucketState } {
  // A clock that went back refills nothing (and does not pay back what it never took).
  const earned = now > state.at ? Math.floor((now - state.at) / refillMs) : 0;
  const tokens = Math.min(burst, state.tokens + earned);
  const at = tokens === burst ? now : state.at + earned * refillMs;
  if (tokens < 1) return { allowed: false, state: { tokens, at } };
  return { allowed: true, state: { tokens: tokens - 1, at } };
}

/**
 * The store's rate-limit slots of the fleet's budget, in the order they are tried (pure): `burst`
 * slots, each taken for `windowMs`, so that the fleet verifies at most `burst` unknown ids in any
 * window, whatever the number of instances and their restarts.
 */
export function fleetSlots(burst: number = STRANGER_BUDGET.burst): string[] {
  return Array.from({ length: burst }, (_, k) => `strangers:${k}`);
}

/** What the return check may do with an unknown payment id. */
export type StrangerGate = { kind: 'allowed' } | { kind: 'not-found'; error: PaymentsError } | { kind: 'over-budget' };

/** The budget of unknown payment ids (see {@link STRANGER_BUDGET}). */
export class StrangerBudget {
  readonly #notFound: LRUCache<string, PaymentsError>;
  #bucket: BucketState;

  /** Durations only: the instance's monotonic time when its clock has one (a step of its wall clock must not forget a 404 nor refill the bucket), else its wall time. */
  readonly #now: () => number;

  /**
   * @param clock the instance's clock
   * @param fleet the store's rate limits, where the fleet's budget is kept
   */
  constructor(
    clock: Clock,
    private readonly fleet: RateLimiter,
  ) {
    this.#now = () => monotonicNow(clock);
    this.#notFound = boundedCache(STRANGER_BUDGET.notFoundMax, {
      ttl: STRANGER_BUDGET.notFoundMs,
      perf: { now: this.#now },
      ttlResolution: 0,
    });
    this.#bucket = { tokens: STRANGER_BUDGET.burst, at: this.#now() };
  }

  /**
   * The service's 404 for `paymentId`, when it answered one within the hour: whatever the store
   * knows (or fails to say), the service does not know this payment.
   */
  notFound(paymentId: string): PaymentsError | undefined {
    return this.#notFound.get(paymentId);
  }

  /**
   * Before verifying an id the store knows nothing of: this instance's bucket first (no store
   * round trip when it is empty), then a slot of the fleet's budget in the store. A store that does
   * not answer allows nothing.
   */
  async admit(paymentId: string): Promise<StrangerGate> {
    const error = this.#notFound.get(paymentId);
    if (error) return { kind: 'not-found', error };
    const { allowed, state } = takeToken(this.#bucket, this.#now(), STRANGER_BUDGET.burst, STRANGER_BUDGET.refillMs);
    this.#bucket = state;
    if (!allowed) return { kind: 'over-budget' };
    try {
      for (const slot of fleetSlots())
        if (await this.fleet.take(slot, STRANGER_BUDGET.windowMs)) return { kind: 'allowed' };
    } catch {
      // Nothing is known of the id and the store is away: the return answers pending, as over budget.
    }
    return { kind: 'over-budget' };
  }

  /** After verifying an id: a 404 is remembered, so that its next request costs nothing. */
  note(paymentId: string, result: SettleResult): void {
    switch (result.kind) {
      case 'verify-failed':
        if (result.error instanceof PaymentsApiError && result.error.httpStatus === 404)
          this.#notFound.set(paymentId, result.error);
        return;
      case 'handled':
      case 'duplicate':
      case 'busy':
      case 'pending':
      case 'mismatch':
      case 'foreign':
      case 'handlers-failed':
      case 'rate-limited':
      case 'deferred':
      case 'store-unavailable':
      case 'order-duplicate':
        // The service knows the payment, or was not asked: nothing to remember.
        return;
      default:
        return assertNever(result);
    }
  }
}
