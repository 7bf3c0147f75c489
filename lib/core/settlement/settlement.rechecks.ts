import { type PaymentsLogger, describe } from '../common/index.js';
import { queueRecheck, type PaymentsStore, type PendingPayment } from '../store/index.js';
import type { SharedClock } from '../time/index.js';
import type { VerifiedPayment } from '../api/index.js';
import type { OutcomeExpectation } from './settlement.decision.js';
import { laneOf, type PathEvidence, SHORT_LANE_START, SHORT_LANE_WAITS_MS } from './settlement.evidence.js';

/**
 * The fixed waits of the pending lane, in ms: after a webhook or a return found a payment still
 * pending at the service, the plugin checks it again after each of these in turn (213 s in all).
 * The service's state can lag its own webhook, and a service that took the first delivery's answer
 * as final may never deliver again: short waits first, so that a lag of s seconds costs about s
 * more seconds of latency and a handful of verify calls (docs/confirmations.md states the bound
 * and the budget). The lane then goes on, backing off ({@link RECHECK_BACKOFF}), until the session
 * ends.
 */
export const RECHECK_WAITS_MS: readonly number[] = Object.freeze([
  3_000, 4_000, 6_000, 8_000, 12_000, 15_000, 15_000, 30_000, 60_000, 60_000,
]);

/**
 * Past the fixed waits, each check of the lane comes this many times as long after the lane began
 * as the one before it (each wait is half the time spent in the lane so far): a verify that lags
 * by L is seen final at most about L/2 late, and a lag of minutes costs a few more calls, not one a
 * minute.
 */
export const RECHECK_BACKOFF = 1.5;

/** The longest wait of the lane, ms (a session of hours is checked at least hourly). */
const RECHECK_MAX_WAIT_MS = 3_600_000;

const FIXED_SPAN_MS = RECHECK_WAITS_MS.reduce((sum, wait) => sum + wait, 0);

/** How often, and how many times, a re-check is queued again while the store does not answer. */
const NOTE_RETRY_MS = 5_000;
const NOTE_ATTEMPTS = 24;

/**
 * How many times a path's re-check looks for a queue entry it did not find and cannot make (no
 * amount known), {@link NOTE_RETRY_MS} apart (about 20 s in all).
 */
export const UNQUEUED_LOOKS = 4;

/**
 * Whether a path's re-check that found no queue entry, and knows no amount to make one, looks
 * again (pure): `generatePayment` answers the link before its queue write lands when the store is
 * slow, so a customer's return (or a webhook) can come first; given up at once, that payment would
 * wait for its session's end. An id nobody generated costs at most {@link UNQUEUED_LOOKS} reads.
 * @param attempt this look's number, from 1
 * @returns ms until the next look, or undefined: give up (reconciliation keeps its own schedule)
 */
export function lookAgainIn(attempt: number): number | undefined {
  return attempt < UNQUEUED_LOOKS ? NOTE_RETRY_MS : undefined;
}

/** Where a queue entry goes after a check that found its payment still pending. */
export interface RecheckPlan {
  /** When it is due again, epoch ms of the shared clock. */
  dueAt: number;
  /** Its place in the pending lane after this check; `undefined`: it left the lane. */
  rechecks: number | undefined;
}

/**
 * The pending lane's rule (pure): the next check of a payment a path found pending. In the lane
 * (`rechecks` set, or a path just found it pending) the next wait is {@link RECHECK_WAITS_MS}
 * `[rechecks]`; past those, while the session is open, waits backing off by {@link RECHECK_BACKOFF}
 * (at most an hour). The entry returns to the session's schedule when the next check would come
 * after the session's end and grace (or at once past the fixed waits when its session's end is not
 * known): due `graceSecs` after the session ends (or a minute from now, whichever is later), as a
 * new payment's entry is.
 * @param entry the queue entry (its `rechecks`: the lane checks done so far; `sessionEndsAt`)
 * @param now the shared clock's time, epoch ms
 * @param graceSecs `reconciliation.graceSecs`
 */
export function nextRecheck(
  entry: Pick<PendingPayment, 'rechecks' | 'sessionEndsAt' | 'createdAt'>,
  now: number,
  graceSecs: number,
): RecheckPlan {
  const done = entry.rechecks ?? 0;
  if (laneOf(entry.rechecks) === 'short') {
    // The short lane (settlement.evidence.ts): its few waits, then back to the session's schedule.
    const wait = SHORT_LANE_WAITS_MS[done - SHORT_LANE_START];
    if (wait !== undefined) return { dueAt: now + wait, rechecks: done + 1 };
    return leaveLane(entry, now, graceSecs);
  }
  const fixed = RECHECK_WAITS_MS[done];
  if (fixed !== undefined) return { dueAt: now + fixed, rechecks: done + 1 };
  const beyond = done - RECHECK_WAITS_MS.length;
  const wait = Math.min(
    RECHECK_MAX_WAIT_MS,
    FIXED_SPAN_MS * (RECHECK_BACKOFF - 1) * RECHECK_BACKOFF ** Math.min(beyond, 64),
  );
  if (now + wait < sessionScheduleAt(entry, now, graceSecs)) return { dueAt: now + wait, rechecks: done + 1 };
  return leaveLane(entry, now, graceSecs);
}

// When the session's schedule takes an entry: its session's end and grace, or now when not known.
function sessionScheduleAt(entry: Pick<PendingPayment, 'sessionEndsAt'>, now: number, graceSecs: number): number {
  const ends = Date.parse(entry.sessionEndsAt ?? '');
  return Number.isFinite(ends) ? ends + graceSecs * 1000 : now;
}

/**
 * An entry leaving the pending lane (pure): due `graceSecs` after its session ends, or a minute
 * from now, whichever is later, as a new payment's entry is.
 */
export function leaveLane(entry: Pick<PendingPayment, 'sessionEndsAt'>, now: number, graceSecs: number): RecheckPlan {
  return { dueAt: Math.max(sessionScheduleAt(entry, now, graceSecs), now + 60_000), rechecks: undefined };
}

/**
 * The next check of a payment after a webhook or a return found it pending (pure). Outside the
 * pending lane it starts the lane. In the lane the path's verify stands for the lane's latest check
 * made again now: the wait after it is that check's, not the next one, so that customers reloading
 * the return page do not push the lane on to its long waits (each wait stays within its share of
 * the time since the lane began, the bound docs/confirmations.md states). What the path's result
 * earns (settlement.evidence.ts) says which lane: `fast` (default), the fast lane (from its start
 * when the entry was in the short lane or none); `short`, the short lane when the entry is in no
 * lane (undefined: a lane already running keeps its place); `none`, nothing (undefined).
 * @param entry the queue entry (its `rechecks`: the lane checks done so far)
 * @param now the shared clock's time, epoch ms
 * @param graceSecs `reconciliation.graceSecs`
 * @param evidence what the path's result earns (default `fast`)
 */
export function pathRecheck(
  entry: Pick<PendingPayment, 'rechecks' | 'sessionEndsAt' | 'createdAt'>,
  now: number,
  graceSecs: number,
  evidence?: 'fast',
): RecheckPlan;
export function pathRecheck(
  entry: Pick<PendingPayment, 'rechecks' | 'sessionEndsAt' | 'createdAt'>,
  now: number,
  graceSecs: number,
  evidence: PathEvidence,
): RecheckPlan | undefined;
export function pathRecheck(
  entry: Pick<PendingPayment, 'rechecks' | 'sessionEndsAt' | 'createdAt'>,
  now: number,
  graceSecs: number,
  evidence: PathEvidence = 'fast',
): RecheckPlan | undefined {
  if (evidence === 'none') return undefined;
  const lane = laneOf(entry.rechecks);
  if (evidence === 'short') {
    // A return alone found it pending: the short lane, once; a lane already running keeps its place.
    if (lane !== 'none') return undefined;
    return nextRecheck({ ...entry, rechecks: SHORT_LANE_START }, now, graceSecs);
  }
  // Evidence of lag (a webhook's PENDING, a failure): the fast lane, from its start when it was not in it.
  const done = lane === 'fast' ? (entry.rechecks ?? 0) : 0;
  return nextRecheck({ ...entry, rechecks: Math.max(0, done - 1) }, now, graceSecs);
}

/**
 * What a path's expectation may put in the queue (pure): a queue entry is judged later as the
 * plugin's own record (`binding`), so it must hold the tracking id the payment was made with, or
 * none when it was made without one. A webhook token without its binding knows the tracking id
 * only as a hash: the verify answer checked against that hash says which it is; without such an
 * answer (the verify failed) nothing is queued, for an entry without the tracking id would let a
 * later verify answer naming another order be confirmed under this one.
 * @param expected what the path expected
 * @param verified the service's answer the path judged (absent when its verify failed)
 * @returns the expectation to queue, or undefined to queue nothing new
 */
export function queuedExpectation(
  expected: OutcomeExpectation | undefined,
  verified?: Pick<VerifiedPayment, 'developerTrackingId'>,
): OutcomeExpectation | undefined {
  if (expected?.trackingMatches === undefined || expected.developerTrackingId !== undefined) return expected;
  const { trackingMatches, identifiesPayment: _pins, ...rest } = expected;
  // Without an answer, only a token signed without a tracking id says what the payment has: none.
  const trackingId = verified === undefined ? undefined : verified.developerTrackingId;
  if (!trackingMatches(trackingId)) return undefined;
  return trackingId === undefined ? rest : { ...rest, developerTrackingId: trackingId };
}

/**
 * Puts a payment a path found pending into the pending lane: its queue entry (re-made from what
 * the path expected when the store lost it) due after the lane's next wait, and this instance's
 * reconciliation woken then. Never throws: a store that fails here leaves the entry where it was (due at
 * the session's end), which is where it was before the lane existed.
 */
export class PendingRechecks {
  /**
   * @param store the queue
   * @param clock the shared clock (due times are read by every instance)
   * @param graceSecs `reconciliation.graceSecs`
   * @param wake asks this instance's reconciliation to run in that many ms
   * @param logger where a store failure is reported
   * @param sessionSecs the session length of payments this instance generates by default: an entry
   *   a path makes bears the latest its session can end (created before now, it ends by now plus
   *   that), so that the lane goes on and reconciliation comes at that end, not a doubled wait later
   */
  constructor(
    private readonly store: PaymentsStore,
    private readonly clock: SharedClock,
    private readonly graceSecs: number,
    private readonly wake: (inMs: number) => void,
    private readonly logger: PaymentsLogger,
    private readonly sessionSecs?: number,
  ) {}

  /**
   * A webhook or a return left `paymentId` unsettled (pending, a handler failed, no answer): re-check it soon.
   * @param evidence what the path's result earns ({@link PathEvidence}; default `fast`)
   */
  async note(
    paymentId: string,
    expected: OutcomeExpectation | undefined,
    notBeforeMs = 0,
    evidence: PathEvidence = 'fast',
    attempt = 1,
  ): Promise<void> {
    if (evidence === 'none') return;
    try {
      if (!(await this.clock.sync())) throw new Error("the store's clock is out of reach");
      const now = this.clock.now();
      let entry = await this.store.findPending(paymentId);
      if (!entry) {
        // Nothing queued (a memory store after a restart, or generatePayment's write still on its
        // way): only what the path expected backs a new entry, and without an amount
        // reconciliation could not judge the answer: look again a few times.
        if (expected?.amount === undefined) {
          const wait = lookAgainIn(attempt);
          if (wait !== undefined)
            this.clock.setTimeout(
              () => void this.note(paymentId, expected, Math.max(0, notBeforeMs - wait), evidence, attempt + 1),
              wait,
            );
          return;
        }
        entry = { paymentId, amount: expected.amount, createdAt: new Date(now).toISOString(), checks: 0 };
        // The latest this session can end; generatePayment's entry, when it lands before this
        // write, keeps the end it recorded (queueRecheck).
        if (this.sessionSecs !== undefined) entry.sessionEndsAt = new Date(now + this.sessionSecs * 1000).toISOString();
        if (expected.developerTrackingId !== undefined) entry.developerTrackingId = expected.developerTrackingId;
      }
      const plan = pathRecheck(entry, now, this.graceSecs, evidence);
      if (plan === undefined) return;
      await this.schedule(entry, { ...plan, dueAt: Math.max(plan.dueAt, now + notBeforeMs) }, 'path');
    } catch (error) {
      // The store is away: try again from this instance's memory (for about two minutes), so that
      // a payment a path asked about during an outage is not left to the session's end.
      if (attempt === 1)
        this.logger.warn(`could not queue ${paymentId} for an early re-check (trying again): ${describe(error)}`);
      if (attempt < NOTE_ATTEMPTS)
        this.clock.setTimeout(
          () => void this.note(paymentId, expected, notBeforeMs, evidence, attempt + 1),
          NOTE_RETRY_MS,
        );
    }
  }

  /**
   * Writes a plan of {@link nextRecheck} for an entry and wakes reconciliation when it is due.
   * @param by `path`: a webhook or a return made the entry, maybe before `generatePayment`'s own
   *   landed (merged with it, {@link queueRecheck}); `reconciliation` (default): reconciliation took it
   *   from the queue, and replaces it
   */
  async schedule(
    entry: PendingPayment,
    plan: RecheckPlan,
    by: 'path' | 'reconciliation' = 'reconciliation',
  ): Promise<void> {
    const next: PendingPayment = { ...entry };
    if (plan.rechecks === undefined) delete next.rechecks;
    else next.rechecks = plan.rechecks;
    if (by === 'path') await queueRecheck(this.store, next, plan.dueAt);
    else await this.store.schedulePending(next, plan.dueAt);
    if (plan.rechecks !== undefined) this.wake(Math.max(0, plan.dueAt - this.clock.now()));
  }
}
