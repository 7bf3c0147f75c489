import { createHash } from 'node:crypto';
import type { PostgresQueryable, PostgresQueryResult } from './postgres.options.js';

/**
 * Sends one of the store's statements with its parameters on a connection. `retry` (default
 * true): whether a statement the server refused as a prepared one may be sent again unnamed; not
 * inside a transaction, which the refusal has aborted.
 */
export type StatementSender = (
  db: PostgresQueryable,
  text: string,
  params: unknown[],
  retry?: boolean,
) => Promise<PostgresQueryResult>;

/** A connection whose `query()` takes `pg`'s statement object, `{ name, text, values }`. */
interface PreparingQueryable {
  query(statement: { name: string; text: string; values: unknown[] }): Promise<PostgresQueryResult>;
}

/**
 * Whether a connection is a `pg` Pool or Client (duck-typed: the host's `pg` may be another copy
 * than any this package could import), whose `query()` takes named statements.
 */
export function isPgConnection(db: PostgresQueryable): boolean {
  const candidate = db as { totalCount?: unknown; connectionParameters?: unknown };
  return (
    typeof candidate.totalCount === 'number' ||
    (typeof candidate.connectionParameters === 'object' && candidate.connectionParameters !== null)
  );
}

/**
 * Whether an error is the server refusing one of the store's named statements because the session
 * is not the one `pg` prepared it on: a pooler in transaction mode (PgBouncer before 1.21, or
 * without `max_prepared_statements`) hands each transaction another server connection, where the
 * name is unknown (SQLSTATE 26000, "does not exist") or was prepared by another client (42P05,
 * "already exists"). The statement did not run: it can be sent again unnamed.
 */
export function isPreparedStatementClash(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (code === '26000' || code === '42P05') && typeof message === 'string' && message.includes(STATEMENT_PREFIX);
}

const STATEMENT_PREFIX = 'nestjs_payments_';

/**
 * How the store sends its statements. Prepared: each statement text gets a name (from its hash,
 * so that stores with other tables on the same pool never reuse one), and `pg` parses and plans
 * it once per connection instead of on every call. The store's statements are CTEs over several
 * tables whose planning costs more than their execution (figures in docs/performance.md).
 *
 * Behind a pooler that does not keep prepared statements (see {@link isPreparedStatementClash}),
 * the first clash switches this sender to unnamed statements for good, says so once through
 * `onClash`, and sends the refused statement again unnamed (unless `retry` is false).
 * @param prepared whether the connection takes named statements
 * @param onClash told once, when the sender falls back to unnamed statements
 */
export function statementSender(prepared: boolean, onClash?: (error: Error) => void): StatementSender {
  const unnamed: StatementSender = (db, text, params) => db.query(text, params);
  if (!prepared) return unnamed;
  const names = new Map<string, string>();
  let fellBack = false;
  return async (db, text, params, retry = true) => {
    if (fellBack) return unnamed(db, text, params);
    let name = names.get(text);
    if (name === undefined) {
      name = `${STATEMENT_PREFIX}${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    try {
      return await (db as unknown as PreparingQueryable).query({ name, text, values: params });
    } catch (error) {
      if (!isPreparedStatementClash(error)) throw error;
      if (!fellBack) {
        fellBack = true;
        onClash?.(error as Error);
      }
      if (!retry) throw error;
      return unnamed(db, text, params);
    }
  };
}
