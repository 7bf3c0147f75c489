import type { PaymentsReconciliationOptions } from './reconciliation.options.js';
import type { OutcomeRecord, PendingPayment, PaymentsStore } from '../store/index.js';

/** One hour, in ms: the longest wait of the fast lane, and the wait of the slow lane's first day. */
export const HOUR_MS = 3_600_000;
/** One day, in ms: the wait of the slow lane once a payment is a day old. */
export const DAY_MS = 24 * HOUR_MS;

/**
 * The start of an outcome record's `lastError` while the payment is in the slow lane: its outcome
 * is still unknown after the fast checks (`reconciliation.maxChecks`), and it is checked hourly,
 * then daily.
 */
export const OVERDUE_MARK = 'overdue:';
/**
 * The start of an outcome record's `lastError` once reconciliation gave the payment up (its
 * outcome still unknown at `reconciliation.horizonDays`): it must be reconciled by hand.
 */
export const ABANDONED_MARK = 'abandoned:';

/**
 * When a payment that a check left unsettled is due again, or `undefined` when it is past its
 * horizon and is given up. The fast lane: waits doubling from `intervalSecs`, at most an hour,
 * for `maxChecks` checks. Then the slow lane: hourly while the payment is less than a day old,
 * daily after, the last check at the horizon (`horizonDays` after generation) itself. A fast-lane
 * wait never passes the end of the payment's session plus `graceSecs` (when the entry knows it):
 * the outcome is final then, and reconciliation's bound counts from it (an entry that left the pending
 * lane before the session's end would otherwise wait out a doubled interval past it).
 * @param entry the queue entry as taken (its `checks` not yet counting this check)
 * @param now the time of this check, epoch ms
 * @param options resolved reconciliation options
 */
export function nextCheckAt(
  entry: Pick<PendingPayment, 'checks' | 'createdAt' | 'sessionEndsAt'>,
  now: number,
  options: Pick<Required<PaymentsReconciliationOptions>, 'intervalSecs' | 'maxChecks' | 'horizonDays'> &
    Partial<Pick<Required<PaymentsReconciliationOptions>, 'graceSecs'>>,
): number | undefined {
  if (entry.checks + 1 < options.maxChecks) {
    const next = now + Math.min(HOUR_MS, options.intervalSecs * 1000 * 2 ** entry.checks);
    const final = Date.parse(entry.sessionEndsAt ?? '') + (options.graceSecs ?? 0) * 1000;
    return Number.isFinite(final) && now < final && final < next ? final : next;
  }
  const created = Date.parse(entry.createdAt);
  // An entry without a readable generation time is dated from this check: never given up early.
  const born = Number.isFinite(created) ? created : now;
  const horizonAt = born + options.horizonDays * DAY_MS;
  if (now >= horizonAt) return undefined;
  return Math.min(now + (now - born < DAY_MS ? HOUR_MS : DAY_MS), horizonAt);
}

/** Whether the fast lane is over for an entry after this check (it is in the slow lane, or given up). */
export function pastFastLane(
  entry: Pick<PendingPayment, 'checks'>,
  options: Pick<Required<PaymentsReconciliationOptions>, 'maxChecks'>,
): boolean {
  return entry.checks + 1 >= options.maxChecks;
}

/**
 * Whether an outcome record says the payment's outcome is unknown past the fast checks: in the
 * slow lane (`lastError` starting with {@link OVERDUE_MARK}) or given up ({@link ABANDONED_MARK}).
 */
export function isOverdueRecord(record: Pick<OutcomeRecord, 'outcome' | 'lastError'>): boolean {
  return (
    record.outcome === 'pending' &&
    (record.lastError?.startsWith(OVERDUE_MARK) === true || record.lastError?.startsWith(ABANDONED_MARK) === true)
  );
}

/** Pages read at most by {@link countOverdueOutcomes}: a health check must stay cheap. */
const MAX_PAGES = 10;

/**
 * Counts the records of payments whose outcome is overdue ({@link isOverdueRecord}), reading the
 * `pending` records page by page, and stops as soon as it counted more than `atMost` (a health
 * check only needs to know whether a threshold is passed) or after 10 pages of 500.
 * @returns the count, exact up to `atMost + 1`
 * @throws what the store throws
 */
export async function countOverdueOutcomes(store: PaymentsStore, atMost: number): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { items, nextCursor } = await store.listOutcomes({ outcome: 'pending', limit: 500, cursor });
    count += items.filter(isOverdueRecord).length;
    if (count > atMost || nextCursor === undefined) break;
    cursor = nextCursor;
  }
  return count;
}
