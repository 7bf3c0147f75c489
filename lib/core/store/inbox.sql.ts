import type { InboxEntry, InboxMark, PaymentsInbox, PaymentsInboxTransaction } from './store.inbox.js';

/** The SQL dialects {@link sqlInbox} writes: PostgreSQL, MySQL and MariaDB, or SQLite (3.24 or later, sql.js). */
export type InboxDialect = 'postgres' | 'mysql' | 'sqlite';

/** The inbox table's default name. */
export const INBOX_TABLE = 'payments_inbox';

/**
 * The host's open transaction as {@link sqlInbox} needs it, whatever the driver or ORM: one
 * statement at a time, in the transaction, with the dialect's own placeholders (`$1` on
 * PostgreSQL, `?` on MySQL/MariaDB and SQLite).
 */
export interface SqlInboxTransaction {
  /**
   * The host's own handle on the transaction, handed to the handlers as `event.transaction.client`
   * (a TypeORM `EntityManager`, a `pg` `PoolClient`, a `mysql2` `PoolConnection`...).
   */
  readonly client: unknown;
  /**
   * Runs one statement in the transaction.
   * @param sql the statement
   * @param params its parameters
   * @returns the rows of a statement that returns rows (an array); anything for one that does not
   */
  query(sql: string, params: unknown[]): Promise<unknown>;
}

/** What {@link sqlInbox} builds the inbox from. */
export interface SqlInboxOptions {
  /** The host database's dialect. */
  dialect: InboxDialect;
  /**
   * Opens a transaction of the host's database (the one its handlers write to), runs `run` in it
   * and commits; rolls back and rethrows when `run` throws. Five lines per ORM: see
   * docs/exactly-once.md.
   */
  transaction<T>(run: (tx: SqlInboxTransaction) => Promise<T>): Promise<T>;
  /** The inbox table, created from `nestjs-payments inbox-ddl`. Default `payments_inbox`. */
  table?: string;
}

/** Thrown when the inbox table is not in the host's database: the attempt fails, the payment is re-checked later. */
export class InboxTableMissingError extends Error {
  /** @param table the table looked for; @param dialect its dialect; @param cause the driver's error */
  constructor(table: string, dialect: InboxDialect, cause: unknown) {
    super(
      `the inbox table ${table} is missing in the host's database (the database of its transaction): create it with the DDL printed by \`npx nestjs-payments inbox-ddl --dialect ${dialect}\``,
      { cause },
    );
    this.name = 'InboxTableMissingError';
  }
}

/** Thrown when a handler committed or ended the host's transaction: nothing is recorded done over it. */
export class InboxTransactionEndedError extends Error {
  /** @param paymentId the payment; @param cause the driver's error on the check */
  constructor(paymentId: string, cause: unknown) {
    super(
      `a handler of ${paymentId} committed or ended the host's transaction (event.transaction): never end it yourself; the plugin commits it with the inbox row once the handlers return`,
      { cause },
    );
    this.name = 'InboxTransactionEndedError';
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;
// The savepoint that marks the transaction the row was inserted in: COMMIT, ROLLBACK or END drop it.
const OPEN_MARK = 'payments_inbox_open';

/** What a column of the inbox holds: an id (a key), a short name, or a point in time. */
export type InboxColumnKind = 'id' | 'name' | 'time';

/** One column of the inbox table. */
export interface InboxColumn {
  /** Its SQL name. */
  readonly name: string;
  /** What it holds (its type in each dialect). */
  readonly kind: InboxColumnKind;
  /** Whether it is the table's key (the payment: one row per payment). */
  readonly key?: boolean;
  /** Whether it may be NULL. */
  readonly nullable?: boolean;
}

/**
 * The inbox table's columns, in order: the one description the DDL of every dialect and the
 * platforms' own entities (Vendure's) are made from.
 */
export const INBOX_COLUMNS: readonly InboxColumn[] = [
  { name: 'payment_id', kind: 'id', key: true },
  { name: 'event', kind: 'name' },
  { name: 'order_id', kind: 'id', nullable: true },
  { name: 'handled_at', kind: 'time' },
  { name: 'attempt', kind: 'name' },
];

/** The longest text of each kind: MySQL's keys are limited to 767 bytes (191 characters of utf8mb4). */
export const INBOX_LENGTHS: Readonly<Record<Exclude<InboxColumnKind, 'time'>, number>> = { id: 191, name: 64 };

const COLUMN_TYPES: Readonly<Record<InboxDialect, Readonly<Record<InboxColumnKind, string>>>> = {
  postgres: { id: 'text', name: 'text', time: 'timestamptz' },
  mysql: { id: `varchar(${INBOX_LENGTHS.id})`, name: `varchar(${INBOX_LENGTHS.name})`, time: 'datetime(3)' },
  // SQLite keeps the time as ISO 8601 text (its date functions read it).
  sqlite: { id: 'text', name: 'text', time: 'text' },
};

/**
 * The inbox table's DDL for a dialect: the payment as the unique key, the event, the order, when
 * it was handled and the attempt that inserted the row ({@link INBOX_COLUMNS}).
 * @param dialect the host database's dialect
 * @param table the table's name (default `payments_inbox`)
 */
export function inboxDdl(dialect: InboxDialect, table: string = INBOX_TABLE): string {
  checkTableName(table);
  const types = COLUMN_TYPES[dialect] ?? unknownDialect(dialect as never);
  const columns = INBOX_COLUMNS.map((column) => {
    const nullable = column.nullable ? (dialect === 'mysql' ? ' NULL' : '') : ' NOT NULL';
    const constraint = column.key ? (dialect === 'mysql' ? ' NOT NULL PRIMARY KEY' : ' PRIMARY KEY') : nullable;
    return `  ${column.name} ${types[column.kind]}${constraint}`;
  });
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${columns.join(',\n')}\n)${dialect === 'mysql' ? ' ENGINE=InnoDB' : ''};\n`;
}

/**
 * How a failed inbox statement reads: the table is missing (PostgreSQL's `42P01`, MySQL's
 * `ER_NO_SUCH_TABLE` / 1146, SQLite's `no such table: ...`, on the driver's error or on an ORM's
 * wrapper of it), or anything else.
 * @param error what the statement threw
 */
export function inboxFailureOf(error: unknown): 'table-missing' | 'other' {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, errno } = e as { code?: unknown; errno?: unknown };
    if (code === '42P01' || code === 'ER_NO_SUCH_TABLE' || errno === 1146) return 'table-missing';
    // SQLite's drivers give no code of their own for it (sql.js none at all): its message says it.
    if (/^(SQLITE_ERROR: )?no such table: /.test(String((e as { message?: unknown }).message))) return 'table-missing';
    const next = e as { driverError?: unknown; cause?: unknown; originalError?: unknown };
    e = next.driverError ?? next.cause ?? next.originalError;
  }
  return 'other';
}

/**
 * The inbox of a SQL database, over any driver or ORM that can run a statement in the host's
 * transaction (docs/exactly-once.md has the recipes: `pg`, `mysql2`, TypeORM).
 * @param options the dialect, the host's transaction, the table
 */
export function sqlInbox(options: SqlInboxOptions): PaymentsInbox {
  const { dialect } = options;
  const table = options.table ?? INBOX_TABLE;
  checkTableName(table);
  inboxDdl(dialect, table);
  const inserts = insertStatements(dialect, table);
  return {
    transaction: (run) =>
      options.transaction((tx) => {
        let paymentId = '';
        const scope: PaymentsInboxTransaction = {
          handle: {
            client: tx.client,
            query: async <Row>(text: string, params?: unknown[]) => ({
              rows: rowsOf(await tx.query(text, params ?? [])) as Row[],
            }),
          },
          markDone: async (entry: InboxEntry): Promise<InboxMark> => {
            paymentId = entry.paymentId;
            // SQLite binds no Date (sql.js refuses one): its time column is ISO 8601 text.
            const handledAt = dialect === 'sqlite' ? entry.handledAt.toISOString() : entry.handledAt;
            const params = [entry.paymentId, entry.event, entry.orderId ?? null, handledAt, entry.attempt];
            let rows: unknown[];
            try {
              rows = rowsOf(await tx.query(inserts.insert, params));
              if (inserts.check) rows = rowsOf(await tx.query(inserts.check, [entry.paymentId]));
            } catch (error) {
              if (inboxFailureOf(error) === 'table-missing') throw new InboxTableMissingError(table, dialect, error);
              throw error;
            }
            const mark = markOf(rows, entry.attempt);
            if (mark === 'inserted') await tx.query(`SAVEPOINT ${OPEN_MARK}`, []);
            return mark;
          },
          beforeCommit: async () => {
            try {
              await tx.query(`RELEASE SAVEPOINT ${OPEN_MARK}`, []);
            } catch (error) {
              throw new InboxTransactionEndedError(paymentId, error);
            }
          },
        };
        return run(scope);
      }),
  };
}

// PostgreSQL answers the insert itself (RETURNING): one statement. MySQL has no RETURNING: the
// insert leaves an existing row as it is, and a locking read (the latest committed row, whatever
// the isolation) says whose it is. SQLite likewise, its one writer making a plain read enough.
function insertStatements(dialect: InboxDialect, table: string): { insert: string; check?: string } {
  const columns = '(payment_id, event, order_id, handled_at, attempt)';
  switch (dialect) {
    case 'postgres':
      return {
        insert: `INSERT INTO ${table} ${columns} VALUES ($1, $2, $3, $4, $5) ON CONFLICT (payment_id) DO NOTHING RETURNING attempt`,
      };
    case 'mysql':
      return {
        insert: `INSERT INTO ${table} ${columns} VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE payment_id = payment_id`,
        check: `SELECT attempt FROM ${table} WHERE payment_id = ? FOR UPDATE`,
      };
    // SQLite writes one transaction at a time (the database's lock): after the insert, a plain read
    // sees the row that holds the key. ON CONFLICT without RETURNING: SQLite 3.24 and later.
    case 'sqlite':
      return {
        insert: `INSERT INTO ${table} ${columns} VALUES (?, ?, ?, ?, ?) ON CONFLICT (payment_id) DO NOTHING`,
        check: `SELECT attempt FROM ${table} WHERE payment_id = ?`,
      };
    default:
      return unknownDialect(dialect);
  }
}

/**
 * Whether the rows the insert (or the check) answered are this attempt's row.
 * @param rows the rows answered: the attempt that holds the key, or none (PostgreSQL's conflict)
 * @param attempt this attempt
 */
export function markOf(rows: readonly unknown[], attempt: string): InboxMark {
  const holder = (rows[0] as { attempt?: unknown } | undefined)?.attempt;
  return holder === attempt ? 'inserted' : 'exists';
}

function rowsOf(result: unknown): unknown[] {
  return Array.isArray(result) ? result : [];
}

function checkTableName(table: string): void {
  if (!NAME.test(table))
    throw new TypeError(
      `sqlInbox: table must be a plain SQL name (schema.table at most), not ${JSON.stringify(table)}`,
    );
}

function unknownDialect(dialect: never): never {
  throw new TypeError(`sqlInbox: dialect must be 'postgres', 'mysql' or 'sqlite', not ${JSON.stringify(dialect)}`);
}
