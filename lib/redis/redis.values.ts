import type { OutcomeRecord, PaymentBinding, PendingPayment } from '../core/store/index.js';

// Values are read back as JSON and checked here: a key may have been written by another version
// of the plugin or by hand, and anything that is not what the store wrote counts as absent (a
// binding that is not one makes the webhook guard reject the token, which is safe).

/**
 * The order index's score of a record: minus the update time in ms, so that ascending scores (the
 * sorted set's order) are newest first, and members (payment ids) break ties in byte order. A time
 * that does not parse sorts as the epoch, last.
 */
export function outcomeScore(updatedAt: string): string {
  const ms = Date.parse(updatedAt);
  return String(Number.isFinite(ms) ? -ms : 0);
}

function parseObject(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';

/** A stored binding, or undefined when the value is not one. */
export function parseBinding(raw: string): PaymentBinding | undefined {
  const b = parseObject(raw);
  if (!b || typeof b.paymentId !== 'string' || typeof b.amount !== 'string' || typeof b.createdAt !== 'string')
    return undefined;
  if (b.developerTrackingId !== undefined && typeof b.developerTrackingId !== 'string') return undefined;
  return b as unknown as PaymentBinding;
}

/** A stored queue entry, or undefined when the value is not one (same rule as bindings). */
export function parsePending(raw: unknown): PendingPayment | undefined {
  const entry = parseBinding(typeof raw === 'string' ? raw : '');
  return entry && typeof (entry as Partial<PendingPayment>).checks === 'number' ? (entry as PendingPayment) : undefined;
}

/** A stored outcome record, or undefined when the value is not one. */
export function parseOutcome(raw: unknown): OutcomeRecord | undefined {
  const r = parseObject(raw);
  if (!r) return undefined;
  if (
    !['paymentId', 'outcome', 'status', 'source', 'handlers', 'updatedAt'].every((k) => typeof r[k] === 'string') ||
    typeof r.attempts !== 'number'
  )
    return undefined;
  if (!optionalString(r.amount) || !optionalString(r.developerTrackingId) || !optionalString(r.lastError))
    return undefined;
  return r as unknown as OutcomeRecord;
}
