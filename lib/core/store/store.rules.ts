import type { OutcomeQuery, OutcomeRecord } from './store.types.js';

// The rules every store applies the same way (page sizes, cursors, lease and time checks), so that
// the in-memory, Redis and PostgreSQL stores and a merchant's own agree on them.

/** Default and largest page size of {@link OutcomeLog.listOutcomes}. */
export const OUTCOME_PAGE = {
  /** Page size when the query sets none. */
  defaultLimit: 50,
  /** Largest page size; larger requests are clamped. */
  maxLimit: 500,
} as const;

/**
 * The page size a store uses for a query: the default when unset, clamped to 1..500.
 * @throws RangeError when `limit` is not a positive integer
 */
export function outcomePageLimit(query: OutcomeQuery | undefined): number {
  const limit = query?.limit ?? OUTCOME_PAGE.defaultLimit;
  if (!Number.isSafeInteger(limit) || limit <= 0)
    throw new RangeError(`listOutcomes: limit must be a positive integer, got ${String(limit)}`);
  return Math.min(limit, OUTCOME_PAGE.maxLimit);
}

/**
 * The opaque cursor after a record: its update time and payment id (the sort key).
 * Stores use it so that cursors mean the same everywhere.
 */
export function outcomeCursor(record: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>): string {
  return Buffer.from(JSON.stringify([record.updatedAt, record.paymentId]), 'utf8').toString('base64url');
}

/**
 * Reads a cursor made by {@link outcomeCursor}.
 * @throws RangeError when it is not one
 */
export function parseOutcomeCursor(cursor: string): Pick<OutcomeRecord, 'updatedAt' | 'paymentId'> {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 2 && parsed.every((p) => typeof p === 'string')) {
      return { updatedAt: String(parsed[0]), paymentId: String(parsed[1]) };
    }
  } catch {
    // reported below
  }
  throw new RangeError('listOutcomes: cursor is not one this store issued');
}

/** Whether `a` sorts before `b` in {@link OutcomeLog.listOutcomes} order (newest first, then payment id). */
export function outcomeSortsBefore(
  a: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>,
  b: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>,
): boolean {
  return a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.paymentId < b.paymentId);
}

/**
 * The rule every store applies to a lease or TTL: a positive, finite number of ms (rounded up).
 * A zero, negative or NaN value is a caller's bug that would otherwise mean "forever" (lru-cache,
 * Redis) or "expired on arrival" (SQL), far from its cause.
 * @param store the store's class name, for the message
 * @throws RangeError naming the parameter
 */
export function positiveMs(store: string, ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`${store}: ${name} must be a positive number of milliseconds, got ${String(ms)}`);
  }
  return Math.ceil(ms);
}

/**
 * The rule every store applies to an epoch time in ms (`dueAt`, `now`): a finite number.
 * @param store the store's class name, for the message
 * @throws RangeError naming the parameter
 */
export function epochMs(store: string, ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms))
    throw new RangeError(`${store}: ${name} must be a finite epoch time in ms, got ${String(ms)}`);
  return ms;
}
