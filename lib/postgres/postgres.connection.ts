import { defaultPaymentsLogger, type PaymentsLogger } from '../core/common/index.js';
import {
  type PostgresPaymentsStoreOptions,
  type PostgresQueryable,
  resolvePostgresOptions,
} from './postgres.options.js';
import { ensureTablesStatement, storeTables } from './postgres.schema.js';
import { storeStatements, type StoreStatements } from './postgres.statements.js';
import type { PaymentsTransactionWork } from '../core/store/index.js';
import { assertTransactional, runPostgresTransaction } from './postgres.transaction.js';
import { isPgConnection, statementSender, type StatementSender } from './postgres.prepared.js';
import { PgliteHold } from './postgres.pglite.js';
import { isPgliteWire, pgliteStatementSender } from './postgres.wire.js';

/**
 * Whether a database error means the database could not be reached or is going away (so that the
 * operation may work again later by itself), as opposed to a database that answered and refused
 * the statement (missing tables, permissions, a pooler's setting: it will not work until someone
 * changes something). No SQLSTATE at all is the driver's own failure to connect or to hear back;
 * class 08 is a connection exception; 57P01-57P03 a server shutting down or starting; 53300 too
 * many connections.
 */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/**
 * A database error as the store reports it, saying which of the two it is (see
 * {@link isUnreachable}): "could not reach the database" or "the database refused", with the
 * driver's message, its SQLSTATE kept as `code` and the driver's error as `cause`.
 * @param operation the store operation
 * @param error what the driver threw
 */
export function databaseError(operation: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  const what = isUnreachable(error)
    ? 'could not reach the database'
    : `the database is reachable but refused the statement (SQLSTATE ${String(code)}; check its tables, permissions and pooler settings)`;
  const wrapped = new Error(`PostgresPaymentsStore: ${operation}: ${what}: ${message}`, { cause: error });
  if (typeof code === 'string') Object.assign(wrapped, { code });
  return wrapped;
}

/** The part of a `pg` Pool the store uses when it creates one. */
interface OwnedPool extends PostgresQueryable {
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

type PoolConstructor = new (config: Record<string, unknown>) => OwnedPool;

/**
 * The database as the store's parts use it: the host's pool (or PGlite) or one created from a
 * connection string, the tables created before the first statement, every statement bounded in
 * time, and the lazy cleanup of expired rows every `cleanupEveryWrites` writes.
 */
export class PostgresConnection {
  // Private fields (not `private`) keep the connection string, whose password may be in it, and
  // the pool out of util.inspect and JSON.stringify of the store and of its rate limiter.
  readonly #given: PostgresQueryable | undefined;
  readonly #connectionString: string | undefined;
  readonly #options: PostgresPaymentsStoreOptions;
  readonly #ensureSql: string;
  readonly #createTables: boolean;
  readonly #timeoutMs: number;
  readonly #cleanupEvery: number;
  readonly #logger: PaymentsLogger;
  /** Sends the store's statements (named prepared statements where the connection takes them). */
  readonly #sendStatement: StatementSender;
  /** Makes a handler's statement on a PGlite instance held by its transaction fail at once. */
  readonly #pglite = new PgliteHold();
  #pool: Promise<OwnedPool> | undefined;
  /** Whether the pool the store creates asks the server for statement_timeout at connection (see #withoutStartupTimeout). */
  #startupTimeout = true;
  #ready: Promise<void> | undefined;
  #writes = 0;
  #cleaning: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /** The store's statements, for its tables. */
  readonly sql: StoreStatements;

  /**
   * @see PostgresPaymentsStore's constructor
   * @throws TypeError or RangeError on a bad argument or option
   */
  constructor(poolOrUrl: PostgresQueryable | string, options: PostgresPaymentsStoreOptions) {
    const resolved = resolvePostgresOptions(options);
    if (typeof poolOrUrl === 'string') {
      if (poolOrUrl.length === 0) throw new TypeError('PostgresPaymentsStore: the connection string is empty');
      this.#connectionString = poolOrUrl;
    } else if (typeof poolOrUrl === 'object' && poolOrUrl !== null && typeof poolOrUrl.query === 'function') {
      this.#given = poolOrUrl;
    } else {
      throw new TypeError(
        'PostgresPaymentsStore: expected a connection string, a pg Pool, a PGlite instance or an object with query(text, params)',
      );
    }
    this.#options = options;
    this.sql = storeStatements(storeTables(resolved));
    this.#ensureSql = ensureTablesStatement(resolved);
    this.#createTables = resolved.createTables;
    this.#timeoutMs = resolved.operationTimeoutMs;
    this.#cleanupEvery = resolved.cleanupEveryWrites;
    this.#logger = options.logger ?? defaultPaymentsLogger;
    this.transactional = resolved.transactional;
    const pglite = this.#given !== undefined && isPgliteWire(this.#given);
    this.#sendStatement =
      pglite && resolved.preparedStatements !== false
        ? pgliteStatementSender()
        : statementSender(
            resolved.preparedStatements ?? (this.#given === undefined || isPgConnection(this.#given)),
            (error) =>
              this.#logger.warn(
                `PostgreSQL store: the database refused a named prepared statement (${error.message}): a pooler in transaction mode such as PgBouncer? ` +
                  'The store sends its statements unnamed from now on; set preparedStatements: false to start that way.',
              ),
          );
    if (this.transactional && this.#given) assertTransactional(this.#given);
  }

  /** Whether the store runs each outcome's handlers in a transaction (`transactional: true`). */
  readonly transactional: boolean;

  /** Runs `work` in one transaction on one connection of the database, then commits (rolls back on a throw). */
  async transact<T>(work: PaymentsTransactionWork<T>): Promise<T> {
    if (!this.transactional)
      throw new Error('PostgresPaymentsStore: runInTransaction needs the option transactional: true');
    if (this.#closing) throw new Error('PostgresPaymentsStore: runInTransaction called after close()');
    return this.#onDatabase(async (db) => {
      await this.#ensureTables(db);
      return runPostgresTransaction(db, this.sql, this.#timeoutMs, work, this.#sendStatement, this.#pglite);
    });
  }

  /**
   * Waits for a cleanup in progress, then ends the pool the store created from a connection
   * string; later operations reject at once. A pool or PGlite passed in is left open (it is the
   * host's) and the store keeps working on it. Safe to call more than once.
   */
  async close(): Promise<void> {
    await this.#cleaning;
    if (this.#connectionString === undefined) return;
    this.#closing ??= (async () => {
      const pool = await this.#pool?.catch(() => undefined);
      await pool?.end();
    })();
    return this.#closing;
  }

  /** {@link query}, counted as a write (see `cleanupEveryWrites`). */
  async write(operation: string, text: string, params: unknown[]): Promise<unknown[]> {
    const rows = await this.query(operation, text, params);
    this.countWrite();
    return rows;
  }

  /** Counts a write made otherwise than by {@link write}; every `cleanupEveryWrites` writes, starts the cleanup. */
  countWrite(): void {
    this.#writes += 1;
    if (this.#writes % this.#cleanupEvery !== 0 || this.#cleaning || this.#closing) return;
    // In the background: a write must not wait for the cleanup. close() waits for it.
    this.#cleaning = this.query('cleanup', this.sql.cleanup, [])
      .then(
        () => undefined,
        (error: unknown) =>
          this.#logger.warn(`PostgreSQL store cleanup of expired rows failed: ${errorMessage(error)}`),
      )
      .finally(() => {
        this.#cleaning = undefined;
      });
  }

  // Bounds every operation by our own timer rather than trusting the pool's settings: a host's
  // pool may wait for a free connection forever (pg's default connectionTimeoutMillis is 0).
  /** Runs one statement, rejecting after `operationTimeoutMs`; `after` must settle before it is sent. */
  query(operation: string, text: string, params: unknown[], after?: Promise<unknown>): Promise<unknown[]> {
    return this.bounded(operation, this.send(operation, text, params, after));
  }

  /**
   * The statement itself, unbounded: it may still run and commit after {@link bounded} gave up on
   * it. `after`: a statement that must have settled before this one is sent.
   */
  send(operation: string, text: string, params: unknown[], after?: Promise<unknown>): Promise<unknown[]> {
    if (this.#closing) return Promise.reject(new Error(`PostgresPaymentsStore: ${operation} called after close()`));
    const pending = Promise.resolve(after).then(() =>
      this.#onDatabase(async (db) => {
        await this.#ensureTables(db);
        const result = await this.#sendStatement(db, text, params);
        return Array.isArray(result?.rows) ? result.rows : [];
      }).catch((error: unknown) => {
        throw databaseError(operation, error);
      }),
    );
    // The late result of a timed-out query is dropped, not left as an unhandled rejection.
    pending.catch(() => undefined);
    return pending;
  }

  /** Rejects when `pending` has not settled within `operationTimeoutMs`. */
  bounded(operation: string, pending: Promise<unknown[]>): Promise<unknown[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new Error(
            `PostgresPaymentsStore: ${operation} timed out after ${this.#timeoutMs} ms (is the database reachable?)`,
          ),
        );
      }, this.#timeoutMs);
      // A pending store call must never be what keeps the process alive.
      timer.unref();
    });
    return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
  }

  // Runs `use` on the database; once more on a new pool when the store's own pool was refused
  // for its startup parameters (see #withoutStartupTimeout).
  async #onDatabase<T>(use: (db: PostgresQueryable) => Promise<T>): Promise<T> {
    const pool = this.#pool;
    const db = await this.#database();
    try {
      return await use(db);
    } catch (error) {
      if (!this.#refusedStartupTimeout(error)) throw error;
      // Operations sent on the refused pool, together, each go again on the new one.
      if (this.#startupTimeout) this.#withoutStartupTimeout(error as Error);
      else if (pool === undefined || pool === this.#pool) throw error;
      return use(await this.#database());
    }
  }

  #refusedStartupTimeout(error: unknown): boolean {
    const message = (error as { message?: unknown } | undefined)?.message;
    return (
      !this.#given && typeof message === 'string' && /unsupported startup parameter.*statement_timeout/.test(message)
    );
  }

  // A pooler (PgBouncer, unless told to ignore it) refuses a connection that asks for
  // statement_timeout: the reachable database would then fail every operation. The store's own
  // pool is made again without it, once; the store's own timer still bounds every operation.
  #withoutStartupTimeout(error: Error): void {
    this.#startupTimeout = false;
    this.#logger.warn(
      `PostgreSQL store: the database refused the startup parameter statement_timeout (${error.message}: a pooler such as PgBouncer?). ` +
        'The store connects without it from now on: operationTimeoutMs still bounds every operation on the store’s side, not on the server. ' +
        'To keep it on the server, list statement_timeout in PgBouncer’s ignore_startup_parameters and set it for the database user.',
    );
    const old = this.#pool;
    this.#pool = this.#createPool();
    void old?.then((pool) => pool.end()).catch(() => undefined);
  }

  #database(): Promise<PostgresQueryable> {
    if (this.#given) return Promise.resolve(this.#given);
    this.#pool ??= this.#createPool();
    return this.#pool;
  }

  async #createPool(): Promise<OwnedPool> {
    // Imported here, not at the top: hosts that pass a PGlite or their own pool need no `pg`.
    const mod = (await import('pg')) as unknown as { default?: { Pool: PoolConstructor }; Pool?: PoolConstructor };
    const Pool = mod.Pool ?? mod.default?.Pool;
    if (!Pool) throw new Error('PostgresPaymentsStore: the installed `pg` has no Pool');
    const pool = new Pool({
      connectionString: this.#connectionString,
      connectionTimeoutMillis: Math.ceil(this.#timeoutMs),
      // The server gives up too, so a statement the store stopped waiting for does not run on.
      ...(this.#startupTimeout ? { statement_timeout: Math.ceil(this.#timeoutMs) } : {}),
      ...this.#options.poolOptions,
    });
    // An idle connection dropped by the server is emitted on the pool; unheard, it would crash
    // the process. The pool replaces the connection by itself.
    pool.on('error', (error) => this.#logger.error(`PostgreSQL store connection failed: ${error.message}`));
    return pool;
  }

  #ensureTables(db: PostgresQueryable): Promise<void> {
    if (!this.#createTables) return Promise.resolve();
    this.#ready ??= db.query(this.#ensureSql, []).then(
      () => undefined,
      (error: unknown) => {
        // Tried again by the next operation: the database may just not be up yet.
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
