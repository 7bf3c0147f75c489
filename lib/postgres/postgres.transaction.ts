import {
  positiveMs,
  type OutcomeFinish,
  type OutcomeRecord,
  type PaymentsTransaction,
  type PaymentsTransactionScope,
  type PaymentsTransactionWork,
} from '../core/store/index.js';
import type { PostgresQueryable, PostgresQueryResult } from './postgres.options.js';
import { valueOf } from './postgres.rows.js';
import { statementSender, type StatementSender } from './postgres.prepared.js';
import {
  guardedPgClient,
  guardedPgliteTransaction,
  TRANSACTION_ID_SQL,
  TransactionGuard,
  xidOf,
} from './postgres.guard.js';
import type { PgliteHold } from './postgres.pglite.js';

/** The statements a transaction of the store needs: the store's own, on the transaction's connection. */
export interface TransactionStatements {
  /** The store's claim statement (a same-owner claim renews the lease). */
  claim: string;
  /** The store's finishOutcome statement. */
  finishOutcome: string;
}

/** A `pg` client checked out of a pool. */
interface PoolClient extends PostgresQueryable {
  /** Gives the client back; with an error, the pool discards it instead. */
  release(error?: Error | boolean): void;
  /** `pg`'s client is an EventEmitter: a connection that fails while no statement runs emits `error`. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
}

// Explicit, whatever the server's default_transaction_isolation: under repeatable read or
// serializable, the claim's renewal committed on another connection while a slow handler runs
// would make the transaction's own finish fail with a serialization error, every time.
const BEGIN_SQL = `BEGIN ISOLATION LEVEL READ COMMITTED; ${TRANSACTION_ID_SQL}`;

/** A `pg` Pool: hands out one client per transaction. */
interface ConnectingPool extends PostgresQueryable {
  connect(): Promise<PoolClient>;
}

/** PGlite's transaction API (`@electric-sql/pglite`). */
interface TransactingDatabase extends PostgresQueryable {
  transaction<T>(callback: (tx: PostgresQueryable) => Promise<T>): Promise<T>;
}

// The lease a claim renewed inside a PGlite transaction gets: it is marked done (or rolled back)
// by the very next statement, so its length only has to outlast that one statement.
const IN_TRANSACTION_LEASE_MS = 60_000;

/** The parameters of the finishOutcome statement: one place, for the store's call and a transaction's. */
export function finishOutcomeParams(finish: OutcomeFinish): unknown[] {
  const doneTtl = positiveMs('PostgresPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
  const recordTtl = positiveMs('PostgresPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
  const { attempts: _ignored, ...record } = finish.record as OutcomeRecord;
  return [
    finish.eventKey,
    finish.owner,
    doneTtl,
    record.paymentId,
    record.outcome,
    record.handlers,
    record.updatedAt,
    JSON.stringify(record),
    finish.claim === 'done' ? 'done' : 'release',
    Math.trunc(finish.attemptsAdded),
    recordTtl,
  ];
}

/**
 * Checks, at construction, that a connection can run the store's transactions: a `pg` Pool
 * (`connect()` hands out a client per transaction) or PGlite (`transaction()`). A single `pg`
 * Client cannot: the claim's renewals would have to share the transaction's session.
 * @throws TypeError otherwise
 */
export function assertTransactional(db: PostgresQueryable): void {
  const candidate = db as Partial<ConnectingPool & TransactingDatabase>;
  if (typeof candidate.transaction === 'function' || typeof candidate.connect === 'function') return;
  throw new TypeError(
    'PostgresPaymentsStore: transactional: true needs a pg Pool, a connection string or a PGlite instance',
  );
}

/**
 * Runs `work` in one transaction on `db`: on a `pg` Pool, a client of its own (BEGIN, the work,
 * COMMIT; ROLLBACK on a throw; the client always given back, and discarded when it failed); on
 * PGlite, its `transaction()` API, which holds its one connection until the end.
 * @param db the store's connection
 * @param sql the store's statements
 * @param connectTimeoutMs how long to wait for a pool's client (a host's pool may wait forever)
 * @param work what to run inside
 * @param send how the store's own statements are sent on a pool's client (prepared or not)
 */
export async function runPostgresTransaction<T>(
  db: PostgresQueryable,
  sql: TransactionStatements,
  connectTimeoutMs: number,
  work: PaymentsTransactionWork<T>,
  send: StatementSender,
  pglite: PgliteHold,
): Promise<T> {
  const candidate = db as Partial<ConnectingPool & TransactingDatabase>;
  if (typeof candidate.transaction === 'function') {
    return (db as TransactingDatabase).transaction(async (tx) => {
      const guard = new TransactionGuard();
      guard.began(xidOf(await tx.query(TRANSACTION_ID_SQL, [])));
      const client = guardedPgliteTransaction(tx as unknown as Parameters<typeof guardedPgliteTransaction>[0], guard);
      return pglite.hold(db, () => work(scopeOf(tx, client, sql, true, statementSender(false), guard)));
    });
  }
  if (typeof candidate.connect !== 'function') {
    throw new TypeError(
      'PostgresPaymentsStore: transactional: true needs a pg Pool, a connection string or a PGlite instance',
    );
  }
  const client = await checkOut(db as ConnectingPool, connectTimeoutMs);
  // Set when the connection is in an unknown state: the pool must then discard it, not hand it out again.
  let broken: Error | undefined;
  // The connection may end while no statement runs (the server's idle_in_transaction_session_timeout,
  // pg_terminate_backend, a failover) as a handler awaits something else: pg then emits `error` on
  // the client, which would crash the process unheard (the pool listens only to idle clients). It
  // fails the attempt instead: the next statement rejects, the transaction is gone, and the
  // payment is settled by a later attempt.
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on?.('error', onError);
  try {
    const guard = new TransactionGuard();
    const began = await client.query(BEGIN_SQL).catch((error: unknown) => {
      if (isConnectionError(error)) broken = asError(error);
      throw error;
    });
    guard.began(xidOf(began));
    let result: T;
    try {
      result = await work(scopeOf(client, guardedPgClient(client, guard), sql, false, send, guard));
      if (broken) throw broken;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = asError(rollbackError);
      });
      throw error;
    }
    await client.query('COMMIT').catch((error: unknown) => {
      // A COMMIT that failed on the server (an aborted transaction) leaves a usable connection;
      // one whose answer never came does not, and may even have committed.
      if (isConnectionError(error)) broken = asError(error);
      throw error;
    });
    return result;
  } finally {
    client.removeListener?.('error', onError);
    client.release(broken ?? false);
  }
}

function scopeOf(
  queryable: PostgresQueryable,
  client: unknown,
  sql: TransactionStatements,
  holdsDatabase: boolean,
  send: StatementSender,
  guard: TransactionGuard,
): PaymentsTransactionScope {
  const transaction: PaymentsTransaction = {
    client,
    query: async <Row>(text: string, params?: unknown[]) => {
      const result: PostgresQueryResult = await queryable.query(guard.rewrite(text), params ?? []);
      return { rows: (Array.isArray(result?.rows) ? result.rows : []) as Row[] };
    },
  };
  return {
    transaction,
    holdsDatabase,
    finishOutcome: async (finish) => {
      await guard.check(queryable);
      if (holdsDatabase && finish.claim === 'done') {
        // Nothing else ran since the transaction began (it holds the database), so the claim is
        // still ours unless it already was not: renewing it here keeps a long handler's expired
        // lease from failing the compare-and-set below, and still tells a lost claim.
        const claimed = await send(
          queryable,
          sql.claim,
          [finish.eventKey, finish.owner, IN_TRANSACTION_LEASE_MS],
          false,
        );
        const row = claimed.rows[0] as { state?: unknown; owner?: unknown } | undefined;
        if (row?.state !== 'claimed' || row.owner !== finish.owner) return false;
      }
      const rows = (await send(queryable, sql.finishOutcome, finishOutcomeParams(finish), false)).rows;
      return valueOf(rows[0]) === '1';
    },
  };
}

async function checkOut(pool: ConnectingPool, timeoutMs: number): Promise<PoolClient> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const connecting = pool.connect();
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(
        new Error(
          `PostgresPaymentsStore: no connection for a transaction within ${timeoutMs} ms (is the pool exhausted?)`,
        ),
      );
    }, timeoutMs);
    timer.unref();
  });
  // A client that arrives after we gave up goes straight back to the pool.
  connecting.then(
    (late) => timedOut && late.release(),
    () => undefined,
  );
  try {
    const client = await Promise.race([connecting, timeout]);
    if (typeof client?.release !== 'function') {
      throw new TypeError(
        'PostgresPaymentsStore: transactional: true needs a pg Pool (its connect() must hand out a client with release())',
      );
    }
    return client;
  } finally {
    clearTimeout(timer);
  }
}

// An error without a SQLSTATE is the connection's, not a statement's: the client must be discarded.
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
