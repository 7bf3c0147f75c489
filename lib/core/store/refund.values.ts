import type { DuplicateRefund, DuplicateRefundState, RefundRecord } from './store.types.js';

// A refund record as the Redis and PostgreSQL stores (and the claim-based default) keep it: JSON
// text, read back and checked here, so that a value written by hand or by another version counts
// as absent rather than as a record with fields nobody can read.

const STATES: ReadonlySet<string> = new Set<DuplicateRefundState>([
  'sending',
  'refunded',
  'refused',
  'retry',
  'unknown',
  'failed',
]);

function refundOf(raw: unknown): DuplicateRefund | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (!['refundId', 'amount', 'status', 'refundedAt'].every((k) => typeof r[k] === 'string')) return undefined;
  return {
    refundId: r.refundId as string,
    amount: r.amount as string,
    status: r.status as string,
    refundedAt: r.refundedAt as string,
  };
}

/** A stored {@link RefundRecord} (its JSON text, or the parsed object), or `undefined` when it is not one. */
export function parseRefundRecord(raw: unknown): RefundRecord | undefined {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  if (
    typeof o.paymentId !== 'string' ||
    typeof o.owner !== 'string' ||
    typeof o.state !== 'string' ||
    !STATES.has(o.state) ||
    typeof o.tries !== 'number' ||
    !Number.isInteger(o.tries) ||
    typeof o.updatedAt !== 'string'
  )
    return undefined;
  const record: RefundRecord = {
    paymentId: o.paymentId,
    owner: o.owner,
    state: o.state as DuplicateRefundState,
    tries: o.tries,
    updatedAt: o.updatedAt,
  };
  const refund = refundOf(o.refund);
  if (refund) record.refund = refund;
  if (typeof o.error === 'string') record.error = o.error;
  return record;
}

/** The text a store keeps for a refund record: only its own fields. */
export function refundRecordText(record: RefundRecord): string {
  const { paymentId, owner, state, tries, refund, error, updatedAt } = record;
  return JSON.stringify({
    paymentId,
    owner,
    state,
    tries,
    ...(refund ? { refund: refundOf(refund) } : {}),
    ...(error === undefined ? {} : { error }),
    updatedAt,
  });
}
