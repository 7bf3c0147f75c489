import { createHash } from 'node:crypto';
import type { PostgresQueryable, PostgresQueryResult } from './postgres.options.js';

/** Sends one of the store's statements with its parameters on a connection. */
export type StatementSender = (db: PostgresQueryable, text: string, params: unknown[]) => Promise<PostgresQueryResult>;

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
  return typeof candidate.totalCount === 'number' || (typeof candidate.connectionParameters === 'object' && candidate.connectionParameters !== null);
}

/**
 * How the store sends its statements. Prepared: each statement text gets a name (from its hash,
 * so that stores with other tables on the same pool never reuse one), and `pg` parses and plans
 * it once per connection instead of on every call. The store's statements are CTEs over several
 * tables whose planning cost more than their execution: on the PostgreSQL server beside the
 * benchmark, a confirmation's two statements took about 900 µs of the machine's CPU unnamed and
 * 420 µs named, and their throughput went from 1920 to 4075 a second at 16 in flight
 * (bench/postgres-statements.mjs).
 * @param prepared whether the connection takes named statements
 */
export function statementSender(prepared: boolean): StatementSender {
  if (!prepared) return (db, text, params) => db.query(text, params);
  const names = new Map<string, string>();
  return (db, text, params) => {
    let name = names.get(text);
    if (name === undefined) {
      name = `nestjs_payments_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return (db as unknown as PreparingQueryable).query({ name, text, values: params });
  };
}
