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

/**
 * One column of the inbox table, the one description its DDL, the inbox's statements and the
 * ORMs' migrations (`nestjs-payments inbox-ddl --format`) are written from.
 */
export interface InboxColumn {
  /** The column's SQL name. */
  readonly name: string;
  /** A string (PostgreSQL `text`, MySQL `varchar(length)`) or a point in time (with milliseconds). */
  readonly kind: 'string' | 'timestamp';
  /** MySQL's `varchar` length of a string column (PostgreSQL's `text` has none). */
  readonly length?: number;
  /** Whether the column may be NULL. */
  readonly nullable: boolean;
  /** Whether it is the primary key: the inbox's unique key. */
  readonly primary: boolean;
}

/** The inbox table's columns, in order: the payment (the unique key), the event, the order, when it was handled, the attempt. */
export const INBOX_COLUMNS: readonly InboxColumn[] = [
  { name: 'payment_id', kind: 'string', length: 191, nullable: false, primary: true },
  { name: 'event', kind: 'string', length: 64, nullable: false, primary: false },
  { name: 'order_id', kind: 'string', length: 191, nullable: true, primary: false },
  { name: 'handled_at', kind: 'timestamp', nullable: false, primary: false },
  { name: 'attempt', kind: 'string', length: 64, nullable: false, primary: false },
];

/**
 * A column's SQL type in a dialect.
 * @param column the column
 * @param dialect the host database's dialect
 */
export function inboxColumnType(column: InboxColumn, dialect: InboxDialect): string {
  switch (dialect) {
    case 'postgres':
      return column.kind === 'string' ? 'text' : 'timestamptz';
    case 'mysql':
      return column.kind === 'string' ? `varchar(${column.length ?? 191})` : 'datetime(3)';
    case 'sqlite':
      // SQLite keeps the time as ISO 8601 text (its date functions read it).
      return 'text';
    default:
      return unknownDialect(dialect);
  }
}

/**
 * The inbox table's DDL for a dialect: the payment as the unique key, the event, the order, when
 * it was handled and the attempt that inserted the row.
 * @param dialect the host database's dialect
 * @param table the table's name (default `payments_inbox`)
 */
export function inboxDdl(dialect: InboxDialect, table: string = INBOX_TABLE): string {
  checkTableName(table);
  const columns = INBOX_COLUMNS.map(
    (column) => `  ${column.name} ${inboxColumnType(column, dialect)}${constraintsOf(column, dialect)}`,
  );
  const engine = dialect === 'mysql' ? ' ENGINE=InnoDB' : '';
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${columns.join(',\n')}\n)${engine};\n`;
}

// PostgreSQL's and SQLite's columns are nullable unless said otherwise (a primary key is NOT NULL
// by itself); MySQL's are said either way.
function constraintsOf(column: InboxColumn, dialect: InboxDialect): string {
  if (dialect !== 'mysql') return column.primary ? ' PRIMARY KEY' : column.nullable ? '' : ' NOT NULL';
  return `${column.nullable ? ' NULL' : ' NOT NULL'}${column.primary ? ' PRIMARY KEY' : ''}`;
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
  const columns = `(${INBOX_COLUMNS.map((column) => column.name).join(', ')})`;
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
