import type { PaymentsTransaction } from './store.transaction.js';

/** One row of the inbox: an outcome whose handlers ran, committed with their writes. */
export interface InboxEntry {
  /** The payment: the inbox's unique key (one outcome per payment is ever handled). */
  paymentId: string;
  /** The event whose handlers ran (`payment.confirmed`, `payment.failed`, ...). */
  event: string;
  /** The payment's order (its `developerTrackingId`), when it has one. */
  orderId?: string;
  /** When this attempt began handling it (the engine's clock). */
  handledAt: Date;
  /** The attempt that wrote the row: tells this attempt's insert from an earlier one's. */
  attempt: string;
}

/**
 * What {@link PaymentsInboxTransaction.markDone} found: `inserted` (this attempt is the one that
 * runs the handlers) or `exists` (an earlier attempt's row is committed: the outcome is done).
 */
export type InboxMark = 'inserted' | 'exists';

/** The host's open transaction, as the inbox hands it to one attempt. */
export interface PaymentsInboxTransaction {
  /**
   * What the handlers are handed as `event.transaction`: `client` is the host's own handle on
   * the transaction (a TypeORM `EntityManager`, a `pg` `PoolClient`, a `mysql2` connection...).
   */
  readonly handle: PaymentsTransaction;
  /**
   * Inserts the done row before the handlers run, under the inbox's unique key.
   * @param entry the row
   * @returns `exists` when a committed row of an earlier attempt holds the key (the handlers must
   *   not run); waits for an attempt still holding it uncommitted, as the database's unique key does
   */
  markDone(entry: InboxEntry): Promise<InboxMark>;
  /**
   * Runs after the handlers and before the commit: throws when the transaction is no longer the
   * one that began (a handler committed or ended it), so that nothing is recorded done over it.
   */
  beforeCommit(): Promise<void>;
}

/**
 * Exactly-once effects in the host's own database (docs/exactly-once.md): the client's `inbox`
 * option. Build one with `sqlInbox()` (any driver or ORM on PostgreSQL or MySQL/MariaDB).
 */
export interface PaymentsInbox {
  /**
   * Opens a transaction of the host's database, runs `run` in it and commits; rolls back when
   * `run` (or the commit) throws, and rethrows.
   * @param run the attempt: the done row, the handlers, the check before the commit
   * @returns what `run` returned, once committed
   */
  transaction<T>(run: (tx: PaymentsInboxTransaction) => Promise<T>): Promise<T>;
}

/** Whether a value can serve as a {@link PaymentsInbox}. */
export function isPaymentsInbox(value: unknown): value is PaymentsInbox {
  return (
    typeof value === 'object' && value !== null && typeof (value as Partial<PaymentsInbox>).transaction === 'function'
  );
}
