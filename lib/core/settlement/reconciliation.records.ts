import { randomUUID } from 'node:crypto';
import { type PaymentsLogger, describe } from '../common/index.js';
import type { OutcomeRecord, PendingPayment, PaymentsStore } from '../store/index.js';
import type { Clock } from '../time/index.js';
import { outcomeKey } from './settlement.request.js';

/**
 * Writes the record of a payment whose outcome is overdue (`overdue:` / `abandoned:` notes), under
 * the payment's claim: every settle writes its record while it holds the claim, so a confirmation
 * that lands meanwhile is never overwritten by this "unknown" (claim `done`: it was settled;
 * `busy`: its settle writes).
 */
export async function markOverdueRecord(
  sweep: { store: PaymentsStore; leaseMs: number; recordTtlMs: number; clock: Clock; logger: PaymentsLogger },
  entry: PendingPayment,
  note: string,
): Promise<void> {
  const { store, leaseMs, recordTtlMs, clock, logger } = sweep;
  const key = outcomeKey(entry.paymentId);
  const owner = randomUUID();
  let claim;
  try {
    claim = await store.claim(key, owner, leaseMs);
  } catch (error) {
    void store.release(key, owner).catch(() => undefined);
    throw error;
  }
  if (claim === 'done') return store.removePending(entry.paymentId);
  if (claim === 'busy') return;
  try {
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
  } finally {
    await store.release(key, owner).catch((error: unknown) => logger.error(`could not release ${key}: ${describe(error)}`));
  }
}
