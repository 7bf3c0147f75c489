import type { LRUCache } from 'lru-cache';
import { boundedCache } from '../common/index.js';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsRateLimitedError,
  type PaymentsError,
} from '../api/index.js';
import type { OutcomeSource } from '../store/index.js';
import type { Decision } from './settlement.decision.js';
import { SETTLEMENT_WAITS } from './settlement.waits.js';

/**
 * The verify budget of one client: how webhooks and returns avoid hammering a service that is
 * failing, rate-limiting or has just said "not yet". The service's docs warn that repeated verify
 * calls get rate-limited or banned, and anyone holding an order's return URL can reload it.
 *
 * Three rules, checked before a payment is claimed (no store round trip):
 * - a payment whose last verify, within `interval`, failed (an error, no answer) is answered
 *   from that memory, not verified again, whatever the path; one that a webhook found still
 *   PENDING (or in an unknown status) is, for deliveries, for `webhookPendingMs` (the return check
 *   reads the outcome record for that). A PENDING seen by the return page does not hold back the
 *   webhook that follows it: that webhook is the service saying the payment just changed;
 * - after a 429, no verify at all until its Retry-After (30 s when it said none);
 * - a circuit breaker: after {@link BREAKER_THRESHOLD} verifies in a row got no usable answer
 *   (5xx, timeouts, refused connections), it opens: no verify until `interval` passed, then one
 *   probe; its success closes it, its failure opens it again. Recovery is thus within one interval.
 *
 * Reconciliation is not gated: it has its own schedule, back-off and 429 pause, and its
 * verifies teach this memory too. The memory is per client (per instance); across instances the
 * reconciliation queue and the return check's outcome record coordinate.
 */

/** Consecutive verifies without a usable answer that open the breaker. */
export const BREAKER_THRESHOLD = 3;

/** The circuit breaker's state: consecutive failures, and until when it refuses calls (0: closed). */
export interface BreakerState {
  /** Verifies in a row that got no usable answer. */
  readonly failures: number;
  /** Epoch ms before which no call is let through; 0 while closed. */
  readonly openUntil: number;
}

/** A closed breaker. */
export const CLOSED: BreakerState = Object.freeze({ failures: 0, openUntil: 0 });

/**
 * Whether the breaker lets a call through at `now`, and its state after: closed lets every call
 * through; open refuses until `openUntil`, then lets ONE probe through and stays open for another
 * `cooldownMs` (so concurrent callers do not all probe). Pure.
 */
export function breakerAdmit(
  state: BreakerState,
  now: number,
  cooldownMs: number,
): { allowed: boolean; state: BreakerState } {
  if (state.openUntil === 0) return { allowed: true, state };
  // An end further ahead than one cooldown was set before the clock stepped back: not trusted.
  if (now < state.openUntil && state.openUntil - now <= cooldownMs) return { allowed: false, state };
  return { allowed: true, state: { failures: state.failures, openUntil: now + cooldownMs } };
}

/**
 * The breaker's state after a call's result: a usable answer closes it; a failure counts, and the
 * {@link BREAKER_THRESHOLD}th in a row (or any failure of a probe) opens it for `cooldownMs`. Pure.
 */
export function breakerAfter(state: BreakerState, answered: boolean, now: number, cooldownMs: number): BreakerState {
  if (answered) return CLOSED;
  const failures = state.failures + 1;
  return failures >= BREAKER_THRESHOLD ? { failures, openUntil: now + cooldownMs } : { failures, openUntil: 0 };
}

/** Why a payment was not verified now, and what to answer meanwhile. */
export interface Deferral {
  /** The payment's last verify said it is not settled yet (rather than failing). */
  pending: boolean;
  /** Seconds until a verify may be tried again. */
  retryAfterSecs: number;
  /** The error the last verify (or the one that opened the breaker) ended with, when it failed. */
  error?: PaymentsError;
  /** Set when the service rate-limited verify. */
  rateLimited?: boolean;
}

interface Remembered {
  /** When it was remembered: a clock now earlier than this was stepped back, and it is forgotten. */
  since: number;
  until: number;
  pending: boolean;
  error?: PaymentsError;
}

/** One client's verify budget (see the file's comment). */
export class VerifyBudget {
  readonly #recent: LRUCache<string, Remembered>;
  #breaker: BreakerState = CLOSED;
  #breakerError?: PaymentsError;
  #pausedUntil = 0;
  #pausedSince = 0;
  #pauseError?: PaymentsError;

  /**
   * @param intervalMs how long a failed verify is remembered, how long a return's PENDING is, and
   *   the breaker's cooldown
   * @param clock the time source (tests compress it)
   * @param webhookPendingMs how long a webhook's PENDING is remembered: the client passes
   *   `webhook.unsignedIntervalSecs`, the interval deliveries are already held to
   */
  constructor(
    private readonly intervalMs: number = SETTLEMENT_WAITS.verifyIntervalMs,
    private readonly clock: () => number = () => Date.now(),
    private readonly webhookPendingMs: number = intervalMs,
  ) {
    this.#recent = boundedCache(10_000);
  }

  /** Before claiming a payment for a verify: undefined when it may be verified now, else why not. */
  admit(paymentId: string, source: OutcomeSource): Deferral | undefined {
    const now = this.clock();
    const remembered = [this.#recent.get(paymentId), this.#recent.get(`${source}:${paymentId}`)].find(
      (r) => r !== undefined && r.since <= now && r.until > now,
    );
    if (remembered)
      return { pending: remembered.pending, retryAfterSecs: secs(remembered.until - now), error: remembered.error };
    if (this.#pausedSince <= now && now < this.#pausedUntil)
      return {
        pending: false,
        retryAfterSecs: secs(this.#pausedUntil - now),
        error: this.#pauseError,
        rateLimited: true,
      };
    const { allowed, state } = breakerAdmit(this.#breaker, now, this.intervalMs);
    this.#breaker = state;
    if (!allowed) return { pending: false, retryAfterSecs: secs(state.openUntil - now), error: this.#breakerError };
    return undefined;
  }

  /** After a verify a path made: what its decision teaches the budget. */
  note(paymentId: string, source: OutcomeSource, decision: Decision, error: PaymentsError | undefined): void {
    const now = this.clock();
    if (decision.kind !== 'unverified') {
      this.#breaker = breakerAfter(this.#breaker, true, now, this.intervalMs);
      this.#recent.delete(paymentId);
      // A return's PENDING is remembered in the outcome record, which every instance reads before
      // verifying (settlement.reconciler.ts); a webhook's here. Reconciliation has its own schedule.
      if (decision.kind === 'pending' && source === 'webhook')
        this.#recent.set(`webhook:${paymentId}`, { since: now, until: now + this.webhookPendingMs, pending: true });
      else for (const path of SOURCES) this.#recent.delete(`${path}:${paymentId}`);
      return;
    }
    if (decision.rateLimitedSecs !== undefined) {
      // The service answered: it is up, only refusing for a while. Every path pauses.
      if (!(this.#pausedSince <= now && now < this.#pausedUntil)) this.#pausedSince = now;
      this.#pausedUntil = Math.max(
        this.#pausedSince <= now ? this.#pausedUntil : 0,
        now + decision.rateLimitedSecs * 1000,
      );
      this.#pauseError = error;
      this.#recent.set(paymentId, { since: now, until: now + decision.rateLimitedSecs * 1000, pending: false, error });
      return;
    }
    // Only a service that gave no usable answer counts against the breaker (a 404 is an answer).
    const down =
      error instanceof PaymentsConnectionError || (error instanceof PaymentsApiError && error.httpStatus >= 500);
    this.#breaker = breakerAfter(this.#breaker, !down, now, this.intervalMs);
    if (this.#breaker.openUntil > 0) this.#breakerError = error;
    this.#recent.set(paymentId, { since: now, until: now + this.intervalMs, pending: false, error });
  }

  /**
   * After a refund call (a duplicate's automatic refund) that failed: it is a call to the same
   * service, so it counts as a verify would. A 429 pauses every path until its Retry-After (30 s
   * when it said none); a service that gave no usable answer (5xx, timeout, refused connection)
   * counts towards the breaker. Nothing is remembered per payment: the refund's own record bounds
   * its tries (settlement.orders.ts, `MAX_REFUND_TRIES`).
   */
  noteRefund(error: unknown): void {
    const now = this.clock();
    if (error instanceof PaymentsRateLimitedError) {
      this.#pausedUntil = Math.max(this.#pausedUntil, now + error.waitSecs * 1000);
      this.#pauseError = error;
      return;
    }
    const down =
      error instanceof PaymentsConnectionError || (error instanceof PaymentsApiError && error.httpStatus >= 500);
    if (!down) return;
    this.#breaker = breakerAfter(this.#breaker, false, now, this.intervalMs);
    if (this.#breaker.openUntil > 0) this.#breakerError = error;
  }
}

const SOURCES: readonly OutcomeSource[] = ['webhook', 'return', 'reconciliation'];

const secs = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
