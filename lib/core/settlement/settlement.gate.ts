/*
 * The verify gate: every rule that decides whether a path may call `verify_payment` now, in one
 * place. One pure decision ({@link verifyGate}) answers it at each stage a path asks (before the
 * runner's claim, for a token without a binding, for an unsigned delivery, for a return), with the
 * facts that place reads; the places map its answers exhaustively. Three budgets feed it, each
 * asked at the moment it can answer:
 * - the client's verify budget ({@link VerifyBudget}, the {@link VerifyGate} port the runner
 *   holds), before a webhook or a return claims a payment: what the service said moments ago, its
 *   429 pause, the circuit breaker, decided by one pure function ({@link gateCheck});
 * - the strangers' budget ({@link StrangerBudget}), when the return check is asked about a payment
 *   id nothing is known of;
 * - the unbound-token policy ({@link UnboundTokens}, the `UnboundTokenPolicy` port the runner
 *   holds), once a payment of a signed token the store has no binding of is claimed.
 * Two more budgets are spent by the places that hold them when the decision asks: the unpaid
 * allowance of returns (settlement.evidence.ts) and an unsigned delivery's slot (the webhook
 * processor's). The pure rules (verifyGate, gateCheck, the breaker, the token bucket, the fleet's
 * slots) have table tests in test/settlement/settlement.gate.spec.ts. One concept, the question "may we call verify now?",
 * kept in one file although each budget keeps state of its own (a bounded memory, a bucket, the
 * store's rate limits): apart, each would be a satellite of the runner or the return check.
 */
import type { LRUCache } from 'lru-cache';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsRateLimitedError,
  type PaymentsError,
} from '../api/index.js';
import { assertNever, boundedCache, describe, type PaymentsLogger } from '../common/index.js';
import type {
  OutcomeRecord,
  OutcomeSource,
  PaymentBinding,
  PaymentsStore,
  PendingPayment,
  RateLimiter,
} from '../store/index.js';
import { monotonicNow, SYSTEM_CLOCK, type Clock } from '../time/index.js';
import type { Decision } from './settlement.decision.js';
import { laneOf, pendingLaneOf, returnSpend, SHORT_LANE_HOLD_MS, type PathEvidence } from './settlement.evidence.js';
import type { SettleResult, TokenLookup, UnboundTokenPolicy } from './settlement.request.js';
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

/** What the budget remembers of a payment's last verify. */
export interface Remembered {
  /** When it was remembered: a clock now earlier than this was stepped back, and it is forgotten. */
  since: number;
  /** Until when the payment is answered from this memory (epoch ms on the budget's clock). */
  until: number;
  /** Whether the service said it is not settled yet (rather than failing). */
  pending: boolean;
  /** The error the verify ended with, when it failed. */
  error?: PaymentsError;
}

/** What the budget knows when a path asks about one payment. */
export interface GateState {
  /** Its memory of the payment: for every path, then for the asking path (either may be absent). */
  remembered: ReadonlyArray<Remembered | undefined>;
  /** The 429 pause: from when, until when (epoch ms; `until` 0: none), and the error that began it. */
  pause: { since: number; until: number; error?: PaymentsError };
  /** The circuit breaker. */
  breaker: BreakerState;
  /** The error that opened the breaker. */
  breakerError?: PaymentsError;
}

/**
 * The one decision "may this path call verify on this payment now?" (pure): answered from the
 * memory of the payment's last verify while it lasts, then from the 429 pause, then by the circuit
 * breaker (which may let one probe through, and so has a state after).
 * @param state what the budget knows (see {@link GateState})
 * @param now the budget's time
 * @param cooldownMs the breaker's cooldown (the budget's interval)
 * @returns the deferral (undefined: verify now) and the breaker's state after
 */
export function gateCheck(
  state: GateState,
  now: number,
  cooldownMs: number,
): { deferral: Deferral | undefined; breaker: BreakerState } {
  const remembered = state.remembered.find((r) => r !== undefined && r.since <= now && r.until > now);
  if (remembered)
    return {
      deferral: { pending: remembered.pending, retryAfterSecs: secs(remembered.until - now), error: remembered.error },
      breaker: state.breaker,
    };
  if (state.pause.since <= now && now < state.pause.until)
    return {
      deferral: {
        pending: false,
        retryAfterSecs: secs(state.pause.until - now),
        error: state.pause.error,
        rateLimited: true,
      },
      breaker: state.breaker,
    };
  const { allowed, state: breaker } = breakerAdmit(state.breaker, now, cooldownMs);
  if (!allowed)
    return {
      deferral: { pending: false, retryAfterSecs: secs(breaker.openUntil - now), error: state.breakerError },
      breaker,
    };
  return { deferral: undefined, breaker };
}

/**
 * Whether a record written at `updatedAt` is younger than `windowMs` at `now`, bounded on both
 * sides: a time in the future (beyond a little clock jitter) is not recent, so a record written by
 * a clock that ran ahead cannot freeze the return pages of the others.
 */
export function isRecent(updatedAt: string, now: number, windowMs: number): boolean {
  const age = now - Date.parse(updatedAt);
  return age > -RECENT_JITTER_MS && age < windowMs;
}

/** How far in the future a record's time may be and still count as written just now. */
const RECENT_JITTER_MS = 2_000;

/**
 * The settlement runner before it claims a payment, for any path: the verify budget is asked only
 * for a path held to it (reconciliation is not), since asking may let the breaker's one probe through.
 */
export interface ClaimAsk {
  /** Before the claim. */
  stage: 'claim';
  /** The path that asks. */
  path: OutcomeSource;
  /** The verify budget's answer for this payment and path ({@link VerifyGate.admit}). */
  budget: () => Deferral | undefined;
}

/** The runner once it claimed a payment of a signed token the store has no binding of. */
export interface UnboundAsk {
  /** After the claim, before the verify. */
  stage: 'unbound';
  /** The unbound-token policy's answer: seconds to wait when over the token's limit (undefined: within it), or `unreachable` when the store did not answer. */
  policy: { waitSecs: number | undefined } | 'unreachable';
}

/**
 * The webhook processor, for a delivery without a token (verify-backed): only a payment this plugin
 * generated (queued) is verified, at most once per `intervalSecs`.
 */
export interface UnsignedAsk {
  /** Before the settlement runner is handed the delivery. */
  stage: 'unsigned';
  /** `webhook.unsignedIntervalSecs`. */
  intervalSecs: number;
  /** Whether the payment is queued (generated by this plugin, not settled yet). */
  queued: boolean;
  /** Whether the store holds its outcome record (read only when not queued). */
  recorded?: boolean;
  /** Whether the payment's slot of the interval was taken (asked only when queued). */
  slot?: boolean;
}

/** The return check (`reconcilePayment`) before it hands the payment to the runner. */
export interface ReturnAsk {
  /** Before the settlement runner is handed the payment. */
  stage: 'return';
  /** The path the caller names (`return` unless it said otherwise). */
  path: OutcomeSource;
  /** The service's 404 for this id, when the strangers' budget remembers one. */
  notFound?: PaymentsError;
  /**
   * What the store knows, once read: its outcome record and queue entry (`null`: the store did not
   * answer, so nothing is known either way), and the shared time it was read at.
   */
  known?: { record: OutcomeRecord | undefined | null; entry: PendingPayment | undefined | null; now: number };
  /** The strangers' budget's answer (asked only for an id the store knows nothing of). */
  strangers?: StrangerGate;
  /** Whether a slot of the unpaid allowance was taken (asked only when a return may spend only that). */
  allowance?: boolean;
}

/** What a path knows when it asks the gate, by the stage it asks at. */
export type GateAsk = ClaimAsk | UnboundAsk | UnsignedAsk | ReturnAsk;

/** Call verify now; a return says what a PENDING answer earns (settlement.evidence.ts). */
export type VerifyNow = { kind: 'verify'; pendingLane?: PathEvidence };
/** Not decided yet: the place reads or spends `what` and asks again with its answer. */
export type GateQuestion<W extends string> = { kind: 'ask'; what: W };

/** The gate's answer before a claim. */
export type ClaimVerdict =
  | VerifyNow
  /** The budget said not now; a failure (not a PENDING) re-checks a queued payment after `recheckInMs`. */
  | { kind: 'deferred'; deferral: Deferral; recheckInMs?: number };

/** The gate's answer for a token without a binding. */
export type UnboundVerdict =
  VerifyNow | { kind: 'rate-limited'; retryAfterSecs: number } | { kind: 'store-unavailable' };

/** The gate's answer for an unsigned delivery. */
export type UnsignedVerdict =
  | VerifyNow
  | GateQuestion<'record' | 'slot'>
  /** Not queued, and settled: answered as a redelivery of a done payment. */
  | { kind: 'done' }
  /** Not queued, and nothing recorded: not a payment this plugin generated. */
  | { kind: 'unknown' }
  | { kind: 'rate-limited'; retryAfterSecs: number };

/** The gate's answer for a return. */
export type ReturnVerdict =
  | VerifyNow
  | GateQuestion<'records' | 'strangers' | 'allowance'>
  /** The service said it does not know this id. */
  | { kind: 'not-found'; error: PaymentsError }
  /** Not settled as far as anyone can tell, no verify now: `status` the record's ('' when none); `lookAgain`: an unknown id the pending lane looks for (store reads only). */
  | { kind: 'pending'; status: string; lookAgain: boolean };

/**
 * The one decision "may this path call verify now, and if not, what does it answer?" (pure), at
 * each stage a path asks it (see {@link GateAsk}). Where a fact is read or spent only when needed
 * (a store read, a budget's slot), the answer is a question ({@link GateQuestion}): the place
 * reads or spends it and asks again. Each place maps its stage's answers exhaustively.
 */
export function verifyGate(ask: ClaimAsk): ClaimVerdict;
export function verifyGate(ask: UnboundAsk): UnboundVerdict;
export function verifyGate(ask: UnsignedAsk): UnsignedVerdict;
export function verifyGate(ask: ReturnAsk): ReturnVerdict;
export function verifyGate(ask: GateAsk): ClaimVerdict | UnboundVerdict | UnsignedVerdict | ReturnVerdict {
  switch (ask.stage) {
    case 'claim':
      return claimVerdict(ask);
    case 'unbound':
      return unboundVerdict(ask);
    case 'unsigned':
      return unsignedVerdict(ask);
    case 'return':
      return returnVerdict(ask);
    default:
      return assertNever(ask);
  }
}

function claimVerdict(ask: ClaimAsk): ClaimVerdict {
  // Reconciliation has its own schedule, back-off and 429 pause; its verifies teach the budget.
  if (ask.path === 'reconciliation') return { kind: 'verify' };
  const deferral = ask.budget();
  if (!deferral) return { kind: 'verify' };
  // Paused (the service failing or rate-limiting): a queued payment is re-checked when it ends.
  return deferral.pending
    ? { kind: 'deferred', deferral }
    : { kind: 'deferred', deferral, recheckInMs: deferral.retryAfterSecs * 1000 };
}

function unboundVerdict(ask: UnboundAsk): UnboundVerdict {
  if (ask.policy === 'unreachable') return { kind: 'store-unavailable' };
  if (ask.policy.waitSecs === undefined) return { kind: 'verify' };
  return { kind: 'rate-limited', retryAfterSecs: ask.policy.waitSecs };
}

function unsignedVerdict(ask: UnsignedAsk): UnsignedVerdict {
  if (!ask.queued) {
    if (ask.recorded === undefined) return { kind: 'ask', what: 'record' };
    return ask.recorded ? { kind: 'done' } : { kind: 'unknown' };
  }
  if (ask.slot === undefined) return { kind: 'ask', what: 'slot' };
  return ask.slot ? { kind: 'verify' } : { kind: 'rate-limited', retryAfterSecs: ask.intervalSecs };
}

function returnVerdict(ask: ReturnAsk): ReturnVerdict {
  if (ask.notFound) return { kind: 'not-found', error: ask.notFound };
  if (!ask.known) return { kind: 'ask', what: 'records' };
  const { record, entry, now } = ask.known;
  if (record?.outcome === 'pending' && isRecent(record.updatedAt, now, SETTLEMENT_WAITS.verifyIntervalMs))
    return { kind: 'pending', status: record.status, lookAgain: false };
  if (record === undefined && entry === undefined) {
    switch (ask.strangers?.kind) {
      case undefined:
        return { kind: 'ask', what: 'strangers' };
      case 'not-found':
        return { kind: 'not-found', error: ask.strangers.error };
      case 'over-budget':
        // Nothing known of it, and no verify left for unknown ids now: not settled, as far as anyone
        // can tell. It may be a payment whose record a slow store has not taken yet: the lane looks
        // for it a few times (store reads only) and checks it once it is known.
        return { kind: 'pending', status: '', lookAgain: true };
      case 'allowed':
        return { kind: 'verify' };
      default:
        return assertNever(ask.strangers);
    }
  }
  if (ask.path !== 'return') return { kind: 'verify' };
  // What a return may spend, by what is known of the payment (settlement.evidence.ts).
  const spend = returnSpend({ lane: laneOf(entry?.rechecks), record: record ?? undefined });
  if (spend === 'allowance') {
    // The short lane's next check is due: its slot is left to it (an older record: the check is
    // overdue, no pass took it, and the return spends a slot).
    if (
      laneOf(entry?.rechecks) === 'short' &&
      record?.outcome === 'pending' &&
      isRecent(record.updatedAt, now, SHORT_LANE_HOLD_MS)
    )
      return { kind: 'pending', status: record.status, lookAgain: false };
    if (ask.allowance === undefined) return { kind: 'ask', what: 'allowance' };
    // Only returns found it pending, and its allowance is spent: what the record says, no verify.
    if (!ask.allowance) return { kind: 'pending', status: record?.status ?? '', lookAgain: false };
  }
  return { kind: 'verify', pendingLane: pendingLaneOf(spend) };
}

/**
 * The verify gate as the settlement runner holds it: asked before a webhook or a return claims a
 * payment (reconciliation is not held to it), and taught by every verify a path makes.
 */
export interface VerifyGate {
  /** Before claiming a payment for a verify: undefined when it may be verified now, else why not. */
  admit(paymentId: string, source: OutcomeSource): Deferral | undefined;
  /** After a verify a path made: what its decision teaches the gate. */
  note(paymentId: string, source: OutcomeSource, decision: Decision, error: PaymentsError | undefined): void;
}

/** One client's verify budget (see the file's comment): the {@link VerifyGate} the runner holds. */
export class VerifyBudget implements VerifyGate {
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
    const { deferral, breaker } = gateCheck(
      {
        remembered: this.#remembered(paymentId, source),
        pause: { since: this.#pausedSince, until: this.#pausedUntil, error: this.#pauseError },
        breaker: this.#breaker,
        breakerError: this.#breakerError,
      },
      this.clock(),
      this.intervalMs,
    );
    this.#breaker = breaker;
    return deferral;
  }

  // What is remembered of a payment, and of it on this path; an empty memory (a service that
  // answers) is read without building the path's key.
  #remembered(paymentId: string, source: OutcomeSource): ReadonlyArray<Remembered | undefined> {
    const recent = this.#recent;
    return recent.size === 0 ? NOTHING_REMEMBERED : [recent.get(paymentId), recent.get(`${source}:${paymentId}`)];
  }

  /** After a verify a path made: what its decision teaches the budget. */
  note(paymentId: string, source: OutcomeSource, decision: Decision, error: PaymentsError | undefined): void {
    const now = this.clock();
    if (decision.kind !== 'unverified') {
      this.#breaker = breakerAfter(this.#breaker, true, now, this.intervalMs);
      // Nothing remembered (a service that answers): nothing to forget, no key to build.
      if (this.#recent.size === 0 && !(decision.kind === 'pending' && source === 'webhook')) return;
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

/** What an empty memory of recent verifies holds for any payment. */
const NOTHING_REMEMBERED: ReadonlyArray<Remembered | undefined> = Object.freeze([undefined, undefined]);

const secs = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

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

/**
 * Signed tokens whose binding the store no longer has (a restart with the memory store, an
 * eviction). Such a token costs a verify call whatever payment id comes with it, so a replay of
 * one genuine URL with other ids could spend the merchant's verify budget without limit: one
 * verify per token per `unsignedIntervalSecs`, checked once the payment is claimed (a done or busy
 * payment costs no verify and answers as usual); over it, 429 with Retry-After. The runner holds
 * it (its `unbound` option) and asks it about every token it finds without a binding.
 */
export class UnboundTokens implements UnboundTokenPolicy {
  /**
   * @param store where bindings are re-made and rate limits kept
   * @param intervalSecs one verify per token per this many seconds (`webhook.unsignedIntervalSecs`)
   * @param logger where failures are reported
   * @param clock what a re-made binding's age is read from
   */
  constructor(
    private readonly store: PaymentsStore,
    private readonly intervalSecs: number,
    private readonly logger: PaymentsLogger,
    private readonly clock: Clock = SYSTEM_CLOCK,
  ) {}

  /** @inheritdoc */
  async admit(token: TokenLookup): Promise<number | undefined> {
    return (await this.store.rateLimits.take(slotOf(token), this.intervalSecs * 1000)) ? undefined : this.intervalSecs;
  }

  // What a settle of an unbound token leaves behind. Exhaustive: a new kind of result must say here
  // whether it frees the token's slot and re-binds it, or the compiler refuses it.
  /** @inheritdoc */
  async settled(paymentId: string, token: TokenLookup, result: SettleResult): Promise<void> {
    switch (result.kind) {
      case 'handled':
        // A verify that settled a payment was spent well (and a payment is settled once): the next
        // delivery of this token need not wait for the interval.
        await this.store.rateLimits.free(slotOf(token)).catch(() => undefined);
        return this.#rebind(paymentId, token, result.verification.developerTrackingId);
      case 'pending':
        return this.#rebind(paymentId, token, result.verification.developerTrackingId);
      case 'duplicate':
      case 'busy':
      case 'mismatch':
      case 'foreign':
      case 'handlers-failed':
      case 'verify-failed':
      case 'rate-limited':
      case 'deferred':
      case 'store-unavailable':
      case 'order-duplicate':
        // Nothing settled by this token's verify, or not the payment it was signed for: it stays unbound and gated.
        return;
      default:
        return assertNever(result);
    }
  }

  // Once the service confirmed the payment the token was signed for, bind the token to it, so that
  // a replay of the URL naming another payment is refused without a call to the service. Only a
  // token with a tracking id (which the verified one matched) pins its payment down: without one,
  // any payment of the same amount and no tracking id verifies alike, and binding the token to a
  // replay's payment would turn the genuine delivery away (401). First binding wins.
  async #rebind(paymentId: string, token: TokenLookup, trackingId: string | undefined): Promise<void> {
    if (token.expected.identifiesPayment !== true) return;
    try {
      const ttl = token.expiresAt - this.clock.now();
      if (ttl <= 0 || (await this.store.findBinding(token.id))) return;
      const binding: PaymentBinding = {
        paymentId,
        amount: token.amount,
        createdAt: new Date(this.clock.now()).toISOString(),
      };
      if (trackingId !== undefined) binding.developerTrackingId = trackingId;
      await this.store.saveBinding(token.id, binding, ttl);
    } catch (error) {
      this.logger.warn(`webhook: could not re-bind a token to ${paymentId}: ${describe(error)}`);
    }
  }
}

/** A token's rate-limit slot: one per token (its nonce), whatever payment id comes with it. */
const slotOf = (token: TokenLookup): string => `token:${token.id}`;
