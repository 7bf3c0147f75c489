import type { OutcomeRecord, PaymentBinding, PendingPayment } from '../core/store/index.js';

// Values are read back as JSON text and checked here: a row may have been written by another
// version of the plugin or by hand, and anything that is not what the store wrote counts as
// absent (a binding that is not one makes the webhook guard reject the token, which is safe).

function parseObject(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';

/** A stored binding, or undefined when the text is not one. */
export function parseBinding(raw: unknown): PaymentBinding | undefined {
  const b = parseObject(raw);
  if (!b || typeof b.paymentId !== 'string' || typeof b.amount !== 'string' || typeof b.createdAt !== 'string')
    return undefined;
  if (!optionalString(b.developerTrackingId) || !optionalString(b.sessionEndsAt)) return undefined;
  return b as unknown as PaymentBinding;
}

/** A stored queue entry, or undefined when the text is not one. */
export function parsePending(raw: unknown): PendingPayment | undefined {
  const binding: (PaymentBinding & { checks?: unknown }) | undefined = parseBinding(raw);
  return binding && typeof binding.checks === 'number' ? { ...binding, checks: binding.checks } : undefined;
}

/** A stored outcome record, or undefined when the text is not one. */
export function parseOutcome(raw: unknown): OutcomeRecord | undefined {
  const r = parseObject(raw);
  if (!r) return undefined;
  const strings = ['paymentId', 'outcome', 'status', 'source', 'handlers', 'updatedAt'] as const;
  if (!strings.every((k) => typeof r[k] === 'string') || typeof r.attempts !== 'number') return undefined;
  if (!optionalString(r.amount) || !optionalString(r.developerTrackingId) || !optionalString(r.lastError))
    return undefined;
  return r as unknown as OutcomeRecord;
}

/** The `value` column of a row, whatever the driver's row shape. */
export function valueOf(row: unknown): unknown {
  return typeof row === 'object' && row !== null ? (row as Record<string, unknown>).value : undefined;
}
