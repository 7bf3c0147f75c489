import { resolveTableNames, type PostgresPaymentsStoreOptions, type ResolvedTableNames } from './postgres.options.js';

/** Options of {@link paymentsStoreMigration}: the same names as the store's. */
export type PaymentsStoreMigrationOptions = Pick<PostgresPaymentsStoreOptions, 'tablePrefix' | 'schema'>;

/** Quoted, schema-qualified names of the store's tables. */
export interface StoreTables {
  /** Token bindings: `<prefix>bindings`. */
  bindings: string;
  /** Claims and done markers: `<prefix>events`. */
  events: string;
  /** Reconciliation queue: `<prefix>pending`. */
  pending: string;
  /** Outcome records: `<prefix>outcomes`. */
  outcomes: string;
  /** The webhook's rate-limit slots: `<prefix>rate_limits`. */
  rateLimits: string;
  /** Orders: the payment that settled each, and its open checkout: `<prefix>orders`. */
  orders: string;
  /** Refund records, one per payment refunded: `<prefix>refunds`. */
  refunds: string;
  /** The payments' stories, one row per payment: `<prefix>stories`. */
  stories: string;
  /** The desk's tallies, one row per bucket and counter: `<prefix>tallies`. */
  tallies: string;
}

// Identifiers are validated by resolveTableNames (letters, digits, underscores) before they get
// here; quoting keeps their case instead of folding it.
const quote = (identifier: string): string => `"${identifier}"`;

/** The quoted table names for validated names. */
export function storeTables(names: ResolvedTableNames): StoreTables {
  const qualify = (table: string) =>
    (names.schema === undefined ? '' : `${quote(names.schema)}.`) + quote(`${names.prefix}${table}`);
  return {
    bindings: qualify('bindings'),
    events: qualify('events'),
    pending: qualify('pending'),
    outcomes: qualify('outcomes'),
    rateLimits: qualify('rate_limits'),
    orders: qualify('orders'),
    refunds: qualify('refunds'),
    stories: qualify('stories'),
    tallies: qualify('tallies'),
  };
}

function buildMigration(names: ResolvedTableNames): string {
  const t = storeTables(names);
  const index = (suffix: string) => quote(`${names.prefix}${suffix}`);
  // COLLATE "C" on the keys that listOutcomes sorts and pages by: byte order, the same on every
  // server whatever its locale, and the order the other stores use.
  return [
    `-- Tables of nestjs-payments' PostgresPaymentsStore (tablePrefix ${names.prefix}). Safe to run again.`,
    ...(names.schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS ${quote(names.schema)};`]),
    `CREATE TABLE IF NOT EXISTS ${t.bindings} (
  token_id text COLLATE "C" PRIMARY KEY,
  binding jsonb NOT NULL,
  expires_at timestamptz NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('bindings_expires_idx')} ON ${t.bindings} (expires_at);`,
    `CREATE TABLE IF NOT EXISTS ${t.events} (
  event_key text COLLATE "C" PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('claimed', 'done')),
  owner text,
  expires_at timestamptz NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('events_expires_idx')} ON ${t.events} (expires_at);`,
    `CREATE TABLE IF NOT EXISTS ${t.pending} (
  payment_id text COLLATE "C" PRIMARY KEY,
  entry jsonb NOT NULL,
  due_at bigint NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('pending_due_idx')} ON ${t.pending} (due_at, payment_id);`,
    `CREATE TABLE IF NOT EXISTS ${t.outcomes} (
  payment_id text COLLATE "C" PRIMARY KEY,
  outcome text NOT NULL,
  handlers text NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  record jsonb NOT NULL,
  expires_at timestamptz NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('outcomes_updated_idx')} ON ${t.outcomes} (updated_at DESC, payment_id);`,
    `CREATE INDEX IF NOT EXISTS ${index('outcomes_expires_idx')} ON ${t.outcomes} (expires_at);`,
    // The admin's "handlers failed, retry them" page pages through a few failed records among
    // many succeeded ones: a partial index keeps that cheap whatever the table's size.
    `CREATE INDEX IF NOT EXISTS ${index('outcomes_failed_idx')} ON ${t.outcomes} (updated_at DESC, payment_id) WHERE handlers = 'failed';`,
    // The desk's lists (overdue, duplicates, mismatches) page through the records of one outcome
    // among many confirmed ones: by outcome, newest first. Confirmed records, most of the table and
    // of its writes, are left out (listOutcomes({ outcome: 'confirmed' }) reads the index above).
    // Added with the desk: created on an existing install as the tables below.
    `CREATE INDEX IF NOT EXISTS ${index('outcomes_outcome_idx')} ON ${t.outcomes} (outcome, updated_at DESC, payment_id) WHERE outcome <> 'confirmed';`,
    // Added after the first release: IF NOT EXISTS creates it on an existing install too, the next
    // time the store starts (createTables) or the host runs this migration again.
    `CREATE TABLE IF NOT EXISTS ${t.rateLimits} (
  limit_key text COLLATE "C" PRIMARY KEY,
  expires_at timestamptz NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('rate_limits_expires_idx')} ON ${t.rateLimits} (expires_at);`,
    // Added with one confirmation per order: created on an existing install as the table above.
    `CREATE TABLE IF NOT EXISTS ${t.orders} (
  order_key text COLLATE "C" NOT NULL,
  kind text NOT NULL CHECK (kind IN ('settled', 'checkout')),
  value text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (order_key, kind)
);`,
    `CREATE INDEX IF NOT EXISTS ${index('orders_expires_idx')} ON ${t.orders} (expires_at);`,
    // Added with the one refund record per payment: created on an existing install as the tables above.
    `CREATE TABLE IF NOT EXISTS ${t.refunds} (
  refund_key text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL,
  record jsonb NOT NULL,
  expires_at timestamptz NOT NULL
);`,
    `CREATE INDEX IF NOT EXISTS ${index('refunds_expires_idx')} ON ${t.refunds} (expires_at);`,
    // Added with the payments' stories and the desk's tallies (postgres.story.ts): created on an
    // existing install as the tables above.
    `CREATE TABLE IF NOT EXISTS ${t.stories} (
  registration text COLLATE "C" NOT NULL,
  payment_id text COLLATE "C" NOT NULL,
  entries jsonb NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (registration, payment_id)
);`,
    `CREATE INDEX IF NOT EXISTS ${index('stories_expires_idx')} ON ${t.stories} (expires_at);`,
    `CREATE TABLE IF NOT EXISTS ${t.tallies} (
  registration text COLLATE "C" NOT NULL,
  bucket bigint NOT NULL,
  name text COLLATE "C" NOT NULL,
  count bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (registration, bucket, name)
);`,
    `CREATE INDEX IF NOT EXISTS ${index('tallies_expires_idx')} ON ${t.tallies} (expires_at);`,
  ].join('\n');
}

/**
 * The DDL of the store's tables and indexes, for hosts that apply schema changes in their own
 * migrations (then pass `createTables: false` to the store). It is exactly what the store runs
 * itself when `createTables` is on, and is idempotent (`IF NOT EXISTS` throughout): after an
 * upgrade that adds a table (`<prefix>rate_limits`), apply it again in a new migration.
 * @param options the `tablePrefix` (default `'payments_'`) and `schema` the store will be given
 * @throws TypeError when a name is not a plain SQL identifier
 */
export function paymentsStoreMigration(options: PaymentsStoreMigrationOptions = {}): string {
  return buildMigration(resolveTableNames(options));
}

/**
 * The migration as one statement the store can send through any `query()`: a DO block (so it
 * also goes through the extended protocol, where several statements are refused) that first
 * takes a transaction-scoped advisory lock, because concurrent `CREATE TABLE IF NOT EXISTS` of
 * the same table can fail with a duplicate-key error when several instances start at once.
 */
export function ensureTablesStatement(names: ResolvedTableNames): string {
  const lockName = `nestjs-payments:${names.schema ?? ''}.${names.prefix}`;
  return `DO $nestjs_payments$
BEGIN
PERFORM pg_advisory_xact_lock(hashtext('${lockName}'));
${buildMigration(names)}
END
$nestjs_payments$`;
}
