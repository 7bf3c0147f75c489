import type { PaymentsLogger } from '../common/index.js';
import type { OutcomeRecord, PaymentsStore, PendingPayment } from '../store/index.js';
import type { Clock } from '../time/index.js';
import { ABANDONED_MARK, OVERDUE_MARK, nextCheckAt, pastFastLane } from './reconciliation.lanes.js';
import type { PaymentsReconciliationOptions } from './reconciliation.options.js';
import type { Settlements } from './settlement.request.js';

/** What the sweep's bookkeeping of an unsettled payment needs. */
export interface SweepRecords {
  /** The queue and the record. */
  store: PaymentsStore;
  /** Whose claim the record is written under. */
  runner: Settlements;
  /** How long the record of an overdue payment is kept. */
  recordTtlMs: number;
  /** The shared clock. */
  clock: Clock;
  /** The sweep's options (its lanes, its horizon). */
  options: Required<PaymentsReconciliationOptions>;
  /** Where a payment given up on is reported. */
  logger: PaymentsLogger;
}

/** What a check that left a payment unsettled means for its queue entry. */
export type Unsettled = { kind: 'unknown'; last: string } | { kind: 'known'; last: string };

/**
 * Writes the record of a payment whose outcome is overdue (`overdue:` / `abandoned:` notes), under
 * the payment's claim, which the runner holds for it: every settle writes its record while it holds
 * the claim, so a confirmation that lands meanwhile is never overwritten by this "unknown" (claim
 * `done`: it was settled, and leaves the queue; `busy`: its settle writes).
 */
export async function markOverdueRecord(
  sweep: Pick<SweepRecords, 'store' | 'runner' | 'recordTtlMs' | 'clock'>,
  entry: PendingPayment,
  note: string,
): Promise<void> {
  const { store, recordTtlMs, clock } = sweep;
  const held = await sweep.runner.hold(entry.paymentId, 'reconciliation', async () => {
    const previous = await store.getOutcome(entry.paymentId);
    // A known outcome (handlers that failed, a mismatch) keeps its own record.
    if (previous && previous.outcome !== 'pending') return;
    const record: OutcomeRecord = {
      paymentId: entry.paymentId,
      outcome: 'pending',
      // Not a status of the service's: none was read (verify failed every time), or the last one read.
      status: previous?.status ?? 'UNKNOWN',
      source: 'reconciliation',
      handlers: 'none',
      attempts: previous?.attempts ?? 0,
      amount: previous?.amount ?? entry.amount,
      lastError: note.slice(0, 500),
      updatedAt: new Date(clock.now()).toISOString(),
    };
    const trackingId = previous?.developerTrackingId ?? entry.developerTrackingId;
    if (trackingId !== undefined) record.developerTrackingId = trackingId;
    await store.saveOutcome(record, recordTtlMs);
  });
  if (held === 'done') await store.removePending(entry.paymentId);
}

/**
 * The next check of a payment a check left unsettled: its queue entry out of the pending lane, due
 * on the session's lanes, or given up on past the horizon; past the fast lane, its record says it is
 * overdue (`overdue:` / `abandoned:` notes, {@link markOverdueRecord}).
 */
export async function rescheduleUnsettled(
  sweep: SweepRecords,
  taken: PendingPayment,
  now: number,
  why: Unsettled,
): Promise<void> {
  const { store, options, logger } = sweep;
  // Any other result leaves the pending lane: the session's lanes take it from here.
  const { rechecks: _lane, ...entry } = taken;
  const checks = entry.checks + 1;
  const next = nextCheckAt(entry, now, options);
  if (next === undefined) {
    await store.removePending(entry.paymentId);
    logger.error(
      `reconciliation: gave up on ${entry.paymentId} after ${checks} checks over ${options.horizonDays} day(s) (last: ${why.last}); reconcile it by hand`,
    );
    if (why.kind === 'unknown')
      await markOverdueRecord(
        sweep,
        entry,
        `${ABANDONED_MARK} outcome unknown after ${checks} checks; reconcile it by hand (last: ${why.last})`,
      );
    return;
  }
  await store.schedulePending({ ...entry, checks }, next);
  if (why.kind === 'unknown' && pastFastLane(entry, options)) {
    if (checks === options.maxChecks) {
      logger.warn(
        `reconciliation: ${entry.paymentId} still unknown after ${checks} checks; checked hourly, then daily, for ${options.horizonDays} day(s)`,
      );
    }
    await markOverdueRecord(
      sweep,
      entry,
      `${OVERDUE_MARK} outcome unknown after ${checks} checks; slow lane, next check at ${new Date(next).toISOString()} (last: ${why.last})`,
    );
  }
}
