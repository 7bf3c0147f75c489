import { assertNever } from '../common/index.js';
import type { OutcomeRecord, PendingPayment, RateLimiter } from '../store/index.js';

/**
 * How much verify a payment still unsettled may spend, by the evidence of why it is unsettled.
 *
 * A payment a path found PENDING is either one whose service state lags its own webhook (the
 * customer paid; the next answer is final within seconds or minutes) or one whose customer has not
 * paid (yet, or ever: an abandoned checkout, whose customer may still come back to the return page
 * many times, from several tabs and instances). The plugin cannot ask the service which; it goes by
 * what it saw of that payment:
 * - a webhook saying PENDING is the service announcing a change its verify has not caught up with:
 *   the payment earns the pending lane's fast checks (settlement.rechecks.ts);
 * - a return while the payment is in the fast lane, or after a webhook found it pending, is a
 *   return while the service lags: the fast checks too;
 * - a return and nothing else (an unpaid customer's, or a paid one whose webhooks were all lost)
 *   earns a small allowance shared by every instance: its first look, then {@link UNPAID_SLOTS}
 *   more verifies for the whole session, spent by the short lane's checks
 *   ({@link SHORT_LANE_WAITS_MS}) or by later returns, whichever come first; while the lane's next
 *   check is due ({@link SHORT_LANE_HOLD_MS}) a return leaves its slot to it. Past the allowance,
 *   returns are answered from the record and the payment waits for reconciliation at its session's end.
 *
 * So a payment nobody paid costs at most `1 + UNPAID_SLOTS` verifies while its session is open,
 * whatever the returns and instances (docs/confirmations.md, "The call budget").
 */

/** Verifies an unpaid customer's returns may spend after the first look, for the whole session (shared by the fleet). */
export const UNPAID_SLOTS = 2;

/**
 * The short lane's waits, ms: after a return alone found a payment pending, it is checked again
 * after each of these in turn (at +10 s, then +35 s), each check taking one of the payment's
 * {@link UNPAID_SLOTS}; then it goes back to its session's schedule. Spaced so that a paid payment
 * whose verify lags the return by L ≤ 35 s is handled within max(30 s, 0.75 × L)'s reach (25 s
 * at most after its final answer), the farthest two checks reach.
 */
export const SHORT_LANE_WAITS_MS: readonly number[] = Object.freeze([10_000, 25_000]);

/**
 * How long after the record its latest check (or the first look) wrote the short lane's next check
 * is due at the latest, ms: the lane's longest wait, and a few seconds of a pass's delay. The lane's
 * checks hold the allowance (a slot each, as many slots as checks): a return meanwhile answers from
 * the record, or it would spend the slot of the lane's last check, and with it the lane's reach.
 */
export const SHORT_LANE_HOLD_MS = Math.max(...SHORT_LANE_WAITS_MS) + 5_000;

/** How long a payment's allowance is held when its session's end is not known, ms. */
const UNKNOWN_SESSION_MS = 3_600_000;

/** Which lane a queue entry is in: none (the session's schedule), the short lane or the fast lane. */
export type LaneKind = 'none' | 'short' | 'fast';

/**
 * The lane a queue entry's `rechecks` places it in (pure): undefined, none; a negative count, the
 * short lane (−{@link SHORT_LANE_WAITS_MS}.length − 1 + checks done: −3, −2, −1); else the fast lane.
 */
export function laneOf(rechecks: number | undefined): LaneKind {
  if (rechecks === undefined) return 'none';
  return rechecks < 0 ? 'short' : 'fast';
}

/** The `rechecks` of an entry entering the short lane, no check done yet. */
export const SHORT_LANE_START = -SHORT_LANE_WAITS_MS.length - 1;

/** What a return knows of a payment before verifying it. */
export interface ReturnFacts {
  /** The lane its queue entry is in (`none` without an entry). */
  lane: LaneKind;
  /** Its outcome record, when the store holds one. */
  record?: Pick<OutcomeRecord, 'outcome' | 'source'>;
}

/**
 * What a return may spend on a payment (pure):
 * - `fast`: the service is seen lagging for it (its fast lane, or a webhook found it pending): the
 *   return verifies, and a PENDING keeps the fast lane going;
 * - `first-look`: nothing found it pending yet: the return verifies, and a PENDING starts the short lane;
 * - `allowance`: a return found it pending before, and only returns did: the return verifies only
 *   if it takes one of the payment's {@link UNPAID_SLOTS}, and a PENDING changes no lane.
 */
export type ReturnSpend = 'fast' | 'first-look' | 'allowance';

/**
 * What a path's unsettled result earns: `fast`, the pending lane's fast checks (a webhook's
 * PENDING, a return while the service lags, a failure); `short`, the short lane (a return alone
 * found it pending); `none`, nothing (a return within the payment's allowance found it pending again).
 */
export type PathEvidence = 'fast' | 'short' | 'none';

/** What a PENDING answer to a return earns, by what the return was allowed to spend (pure). */
export function pendingLaneOf(spend: ReturnSpend): PathEvidence {
  switch (spend) {
    case 'fast':
      return 'fast';
    case 'first-look':
      return 'short';
    case 'allowance':
      return 'none';
    default:
      return assertNever(spend);
  }
}

/** The evidence decision for a return (see {@link ReturnSpend}). Pure. */
export function returnSpend(facts: ReturnFacts): ReturnSpend {
  if (facts.lane === 'fast') return 'fast';
  const pending = facts.record?.outcome === 'pending';
  if (pending && facts.record?.source === 'webhook') return 'fast';
  if (facts.lane === 'short' || pending) return 'allowance';
  return 'first-look';
}

/**
 * The store's rate-limit slots of a payment's allowance, in the order they are tried (pure): every
 * instance spends the same ones, so that tabs and instances do not multiply it.
 */
export function unpaidSlots(paymentId: string): string[] {
  return Array.from({ length: UNPAID_SLOTS }, (_, k) => `unpaid:${k}:${paymentId}`);
}

/**
 * How long a payment's allowance slots are held (pure): to its session's end plus `graceSecs`
 * (reconciliation checks it then, outside the allowance), at least a minute; an hour when the end
 * is not known.
 */
export function allowanceWindowMs(
  entry: Pick<PendingPayment, 'sessionEndsAt'> | undefined,
  now: number,
  graceSecs: number,
): number {
  const ends = Date.parse(entry?.sessionEndsAt ?? '');
  if (!Number.isFinite(ends)) return UNKNOWN_SESSION_MS;
  return Math.max(60_000, ends + graceSecs * 1000 - now);
}

/** The fleet's allowance of verifies for payments only returns found pending (see the file's comment). */
export class UnpaidAllowance {
  /**
   * @param limits the store's rate limits (shared by every instance)
   * @param graceSecs `reconciliation.graceSecs`
   */
  constructor(
    private readonly limits: RateLimiter,
    private readonly graceSecs: number,
  ) {}

  /**
   * Takes one of the payment's slots. A store that does not answer allows nothing (the payment
   * waits for reconciliation, as over its allowance).
   * @returns whether a verify may be spent now
   */
  async take(
    paymentId: string,
    entry: Pick<PendingPayment, 'sessionEndsAt'> | undefined,
    now: number,
  ): Promise<boolean> {
    const windowMs = allowanceWindowMs(entry, now, this.graceSecs);
    try {
      for (const slot of unpaidSlots(paymentId)) if (await this.limits.take(slot, windowMs)) return true;
    } catch {
      // Nothing to spend on: the record answers the return, reconciliation checks it later.
    }
    return false;
  }
}
