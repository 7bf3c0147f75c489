import type { OutcomeFinish } from './store.types.js';
import type { PaymentsStore } from './store.ports.js';

/** What {@link PaymentsTransaction.query} answers: the rows, as the driver returned them. */
export interface PaymentsTransactionResult<Row = Record<string, unknown>> {
  /** The rows returned (none for a statement that returns nothing). */
  rows: Row[];
}

/**
 * The database transaction an outcome's handlers run in, when the store is transactional
 * (`new PostgresPaymentsStore(poolOrDb, { transactional: true })`). What the handlers write
 * through it commits together with the outcome's done marker, or not at all.
 */
export interface PaymentsTransaction {
  /**
   * Runs one statement inside the transaction, with its parameters bound as `$1`, `$2`, ...
   * @param text the SQL
   * @param params the values of the parameters
   */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<PaymentsTransactionResult<Row>>;

  /**
   * The driver's own handle on the transaction, for an ORM: the `pg` `PoolClient` that holds it
   * (node-postgres), or PGlite's `Transaction`. Typed `unknown` because the plugin depends on
   * neither driver: cast it to the one you passed the store (e.g. `drizzle(tx.client as PoolClient)`).
   * Do not commit, roll back or release it yourself: the plugin does, once the handlers return.
   */
  readonly client: unknown;
}

/** What the work given to {@link TransactionalPaymentsStore.runInTransaction} can use. */
export interface PaymentsTransactionScope {
  /** The open transaction. */
  readonly transaction: PaymentsTransaction;

  /**
   * True when the transaction holds the whole database until it ends: PGlite, embedded in one
   * process over one connection. No other statement (no other claim, and so no other instance)
   * can run meanwhile, and the claim cannot be renewed on another connection either; the scope's
   * {@link finishOutcome} extends it inside the transaction instead. False for a `pg` pool: the
   * transaction has a connection of its own, and the claim is renewed on the others.
   */
  readonly holdsDatabase: boolean;

  /**
   * {@link PaymentsStore.finishOutcome} inside the transaction: the done marker, the queue removal
   * and the outcome record commit with the rest, or roll back with it.
   * @returns whether the claim was marked done: false when `finish.owner` no longer held it (its
   *   lease expired and another attempt took it): then the work must throw, to roll back
   */
  finishOutcome(finish: OutcomeFinish): Promise<boolean>;
}

/** The work run in one transaction. */
export type PaymentsTransactionWork<T> = (scope: PaymentsTransactionScope) => Promise<T>;

/**
 * A store that can run an outcome's handlers and its done marker in one database transaction
 * (exactly-once effects): `PostgresPaymentsStore` with `{ transactional: true }`.
 */
export interface TransactionalPaymentsStore extends PaymentsStore {
  /** True: the runner uses {@link runInTransaction} for every outcome whose handlers run. */
  readonly transactional: true;

  /**
   * Opens a transaction, runs `work` in it and commits; rolls back when `work` (or the commit)
   * throws, and rethrows. The connection is given back either way.
   * @param work what to do inside the transaction
   * @returns what `work` returned, once committed
   */
  runInTransaction<T>(work: PaymentsTransactionWork<T>): Promise<T>;
}

/** Whether a store runs outcomes in transactions (see {@link TransactionalPaymentsStore}). */
export function isTransactional(store: PaymentsStore): store is TransactionalPaymentsStore {
  const candidate = store as Partial<TransactionalPaymentsStore>;
  return candidate.transactional === true && typeof candidate.runInTransaction === 'function';
}
