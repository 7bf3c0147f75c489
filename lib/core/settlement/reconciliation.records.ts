import type { OutcomeRecord, PaymentsStore, PendingPayment } from '../store/index.js';
import type { Clock } from '../time/index.js';
import type { Settlements } from './settlement.request.js';

/**
 * Writes the record of a payment whose outcome is overdue (`overdue:` / `abandoned:` notes), under
 * the payment's claim, which the runner holds for it: every settle writes its record while it holds
 * the claim, so a confirmation that lands meanwhile is never overwritten by this "unknown" (claim
 * `done`: it was settled, and leaves the queue; `busy`: its settle writes).
 */
export async function markOverdueRecord(
  sweep: { store: PaymentsStore; runner: Settlements; recordTtlMs: number; clock: Clock },
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
