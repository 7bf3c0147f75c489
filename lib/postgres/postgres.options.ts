import type { StoryOptions } from '../core/store/index.js';
import type { PaymentsLogger } from '../core/common/index.js';

/** What a `query()` answers: the rows (a `pg` result and a PGlite result both have them). */
export interface PostgresQueryResult {
  /** The rows returned. */
  rows: unknown[];
}

/**
 * What the store needs of a database connection: a `query(text, params)` answering `{ rows }`.
 * A `pg` `Pool` or `Client`, a PGlite instance (`@electric-sql/pglite`) and most wrappers have it.
 *
 * The store sends one statement per call, always with bound parameters, and reads every value
 * back as text (it parses them itself), so the connection's type parsers do not matter.
 */
export interface PostgresQueryable {
  /** Runs one statement with its parameters bound as `$1`, `$2`, ... */
  query(text: string, params?: unknown[]): Promise<PostgresQueryResult>;
}

/** Options of {@link PostgresPaymentsStore}. */
export interface PostgresPaymentsStoreOptions {
  /**
   * Prepended to the store's table names (`<prefix>bindings`, `<prefix>events`,
   * `<prefix>pending`, `<prefix>outcomes`, `<prefix>rate_limits`), so that several apps or environments can share a
   * database. Letters, digits and underscores, not starting with a digit, at most 40 characters
   * (PostgreSQL cuts identifiers at 63 bytes, and index names add to it). Default `'payments_'`.
   */
  tablePrefix?: string;

  /**
   * Schema of the tables; same character rules as `tablePrefix`. Default: none, i.e. the
   * connection's `search_path` decides (usually `public`). When set and `createTables` is on, the
   * schema is created if missing.
   */
  schema?: string;

  /**
   * The payments' stories and the desk's tallies (`PostgresStoryLog`, tables `<prefix>stories` and
   * `<prefix>tallies`), kept when set: `true` for the defaults of `StoryOptions` (50 entries a
   * payment, 30 days, hourly buckets), or their bounds and retention. Default `false`: none kept
   * (they cost a statement per turn of the event loop that notes some).
   */
  story?: StoryOptions | boolean;

  /**
   * Create the tables (`CREATE TABLE IF NOT EXISTS`) before the first operation, once per store.
   * Safe when several instances start together: creation runs under a transaction-scoped advisory
   * lock. Turn it off when the host applies {@link paymentsStoreMigration} in its own migrations
   * (e.g. when the app's database user may not create tables). Default `true`.
   */
  createTables?: boolean;

  /**
   * Longest time, in ms, one store operation may take before its promise rejects, whatever the
   * pool's own settings (a host's pool may wait forever for a free connection). A rejection makes
   * the webhook answer 503 and the service deliver again later. For a pool the store creates from
   * a connection string, also its `connectionTimeoutMillis` and the server-side
   * `statement_timeout`, so that the database gives up too. Default 5000. Must be positive.
   */
  operationTimeoutMs?: number;

  /**
   * After how many writes the store deletes a batch of expired rows (bindings, claims, done
   * markers, outcome records, rate-limit slots, orders, refunds, stories and tallies past their
   * retention; a story's append counts as a write). Expired rows are ignored by reads and overwritten by writes
   * anyway; the cleanup only keeps the tables from growing, with no cron. Default 500.
   */
  cleanupEveryWrites?: number;

  /**
   * Extra options of the `pg` `Pool` the store creates from a connection string (e.g. `max`,
   * `ssl`); they override the store's defaults. Ignored when a pool or client is passed in.
   */
  poolOptions?: Readonly<Record<string, unknown>>;

  /**
   * Send the store's statements as named prepared statements (`pg`'s `{ name, text, values }`),
   * parsed and planned once per connection instead of on every call: the store's statements cost
   * more to plan than to run (figures in docs/performance.md). Turn it off behind a pooler that does not keep prepared statements across
   * transactions (PgBouncer in transaction mode before 1.21, or without `max_prepared_statements`).
   * Default: on for a `pg` Pool or Client, for the pool the store creates from a connection
   * string, and for a PGlite instance in this process (the statements are then sent through its
   * wire protocol, `execProtocol()`); off for anything else (a PGlite worker, wrappers), whose
   * `query()` may not take a statement object.
   */
  preparedStatements?: boolean;

  /**
   * Exactly-once effects: run each outcome's handlers in one database transaction that also
   * writes the outcome's done marker and record, and commit them together (see
   * `docs/exactly-once.md`). The handlers get it as `event.transaction`; a throw or a crash rolls
   * their writes back with the marker, and the next webhook, return or reconciliation runs them
   * again on a clean slate. Needs a `pg` Pool (a connection of its own per transaction), a
   * connection string, or PGlite (whose one connection the transaction holds until it ends: other
   * store operations wait meanwhile). Default `false`: handlers run outside any transaction.
   */
  transactional?: boolean;

  /**
   * Told about errors of the store's own pool (an idle connection dropped by the server) and of
   * the background cleanup. Default: the core's logger, which writes to stderr.
   */
  logger?: PaymentsLogger;
}

/** Default of {@link PostgresPaymentsStoreOptions.tablePrefix}. */
export const DEFAULT_TABLE_PREFIX = 'payments_';

/** Default of {@link PostgresPaymentsStoreOptions.operationTimeoutMs}. */
export const DEFAULT_PG_OPERATION_TIMEOUT_MS = 5000;

/** Default of {@link PostgresPaymentsStoreOptions.cleanupEveryWrites}. */
export const DEFAULT_CLEANUP_EVERY_WRITES = 500;

// The longest identifier PostgreSQL keeps is 63 bytes; the longest name built from the prefix is
// `<prefix>rate_limits_expires_idx` (23 more characters).
const MAX_NAME_LENGTH = 40;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The names the store's SQL is built from, validated and quoted. */
export interface ResolvedTableNames {
  /** The schema, unquoted, or undefined for the search_path. */
  schema: string | undefined;
  /** The table prefix, unquoted. */
  prefix: string;
}

/** The store's options with defaults applied and checked. */
export interface ResolvedPostgresOptions extends ResolvedTableNames {
  /** See {@link PostgresPaymentsStoreOptions.createTables}. */
  createTables: boolean;
  /** See {@link PostgresPaymentsStoreOptions.operationTimeoutMs}. */
  operationTimeoutMs: number;
  /** See {@link PostgresPaymentsStoreOptions.cleanupEveryWrites}. */
  cleanupEveryWrites: number;
  /** See {@link PostgresPaymentsStoreOptions.transactional}. */
  transactional: boolean;
  /** See {@link PostgresPaymentsStoreOptions.preparedStatements}; undefined: decided by the connection. */
  preparedStatements: boolean | undefined;
}

/**
 * Checks the identifiers that go into SQL text (they cannot be bound as parameters), so that an
 * option can never inject SQL, and names are case-preserved by quoting rather than folded.
 * @throws TypeError when a name is not a plain SQL identifier
 */
export function resolveTableNames(
  options: Pick<PostgresPaymentsStoreOptions, 'tablePrefix' | 'schema'>,
): ResolvedTableNames {
  const prefix = options.tablePrefix ?? DEFAULT_TABLE_PREFIX;
  checkIdentifier(prefix, 'tablePrefix');
  if (options.schema !== undefined) checkIdentifier(options.schema, 'schema');
  return { schema: options.schema, prefix };
}

/**
 * Applies defaults and rejects nonsense at construction, where a mistake is cheap to find.
 * @throws TypeError or RangeError on a bad option
 */
export function resolvePostgresOptions(options: PostgresPaymentsStoreOptions): ResolvedPostgresOptions {
  const names = resolveTableNames(options);
  const operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_PG_OPERATION_TIMEOUT_MS;
  if (typeof operationTimeoutMs !== 'number' || !Number.isFinite(operationTimeoutMs) || operationTimeoutMs <= 0) {
    throw new RangeError('PostgresPaymentsStore: operationTimeoutMs must be a positive number of milliseconds');
  }
  const cleanupEveryWrites = options.cleanupEveryWrites ?? DEFAULT_CLEANUP_EVERY_WRITES;
  if (!Number.isSafeInteger(cleanupEveryWrites) || cleanupEveryWrites <= 0) {
    throw new RangeError('PostgresPaymentsStore: cleanupEveryWrites must be a positive integer');
  }
  const createTables = options.createTables ?? true;
  if (typeof createTables !== 'boolean') throw new TypeError('PostgresPaymentsStore: createTables must be a boolean');
  const transactional = options.transactional ?? false;
  if (typeof transactional !== 'boolean') throw new TypeError('PostgresPaymentsStore: transactional must be a boolean');
  const preparedStatements = options.preparedStatements;
  if (preparedStatements !== undefined && typeof preparedStatements !== 'boolean') {
    throw new TypeError('PostgresPaymentsStore: preparedStatements must be a boolean');
  }
  return { ...names, createTables, operationTimeoutMs, cleanupEveryWrites, transactional, preparedStatements };
}

function checkIdentifier(value: unknown, name: string): void {
  if (typeof value !== 'string' || !IDENTIFIER.test(value) || value.length > MAX_NAME_LENGTH) {
    // The value is not echoed: it may come from configuration the host did not mean to log.
    throw new TypeError(
      `PostgresPaymentsStore: ${name} must be letters, digits and underscores, not starting with a digit, at most ${MAX_NAME_LENGTH} characters`,
    );
  }
}
