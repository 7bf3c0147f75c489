import type { PostgresQueryable, PostgresQueryResult } from './postgres.options.js';
import { nestedStatement, transactionControl } from './postgres.control.js';

/** Reads the transaction id, assigning one: the same for every statement of one transaction. */
export const TRANSACTION_ID_SQL = 'SELECT txid_current()::text AS xid';

/**
 * Keeps an outcome's handlers inside the outcome's transaction. What they send through
 * `event.transaction` (its `query()`, and the driver's handle on it) passes {@link rewrite}: a
 * nested transaction becomes a savepoint, a statement that would end the outcome's transaction is
 * refused. What no rewrite can see (several statements in one string, a statement sent on the
 * driver's connection itself) is caught by {@link check}, before the done marker is written: the
 * transaction must still be the one that began, or the attempt fails.
 */
export class TransactionGuard {
  #depth = 0;
  #refused: string | undefined;
  #xid: string | undefined;

  /** Remembers the transaction's id, read on its connection ({@link TRANSACTION_ID_SQL}) as it began. */
  began(xid: string | undefined): void {
    this.#xid = xid;
  }

  /**
   * The text to send for a handler's statement.
   * @throws Error when the statement would end the outcome's transaction (the attempt then fails, even if the handler catches it)
   */
  rewrite(text: string): string {
    const decision = nestedStatement(transactionControl(text), this.#depth);
    switch (decision.kind) {
      case 'send':
        return text;
      case 'savepoint':
        this.#depth = decision.depth;
        return decision.text;
      case 'refuse':
        this.#refused ??= decision.reason;
        throw refusal(decision.reason);
      default:
        return assertNever(decision);
    }
  }

  /**
   * Throws unless the outcome's transaction is still the one that began and no statement was
   * refused: run before the done marker is written, so that it never commits on its own.
   * @param queryable the transaction's connection
   */
  async check(queryable: PostgresQueryable): Promise<void> {
    if (this.#refused !== undefined) throw refusal(this.#refused);
    if (this.#xid === undefined) return;
    const now = xidOf(await queryable.query(TRANSACTION_ID_SQL, []));
    if (now !== this.#xid) {
      throw new Error(
        'PostgresPaymentsStore: the outcome’s transaction was ended while its handlers ran (a COMMIT or ROLLBACK on the driver’s connection, ' +
          'or several statements in one query): the done marker is not written and the handlers run again later. Never end the transaction ' +
          'yourself; a nested transaction (BEGIN, an ORM’s .transaction()) on event.transaction becomes a savepoint.',
      );
    }
  }
}

/** The transaction id of a {@link TRANSACTION_ID_SQL} answer (pg answers an array for several statements). */
export function xidOf(result: PostgresQueryResult | PostgresQueryResult[]): string | undefined {
  const last = Array.isArray(result) ? result.at(-1) : result;
  const row = last?.rows?.[0] as { xid?: unknown } | undefined;
  return typeof row?.xid === 'string' ? row.xid : undefined;
}

/** A `pg` client's `query(textOrConfig, values?, callback?)`. */
type PgQuery = (first: unknown, ...rest: unknown[]) => unknown;

/**
 * The `pg` PoolClient the handlers get as `event.transaction.client`: the client itself, except
 * that what it is asked to run passes the guard (so that Drizzle's `.transaction()` on it nests)
 * and that it cannot be released by a handler (the plugin gives it back once it committed).
 */
export function guardedPgClient<C extends object>(client: C, guard: TransactionGuard): C {
  return new Proxy(client, {
    get(target, property) {
      if (property === 'query') {
        const query = (target as unknown as { query: PgQuery }).query.bind(target);
        return (first: unknown, ...rest: unknown[]) => {
          let statement: unknown;
          try {
            statement = rewriteStatement(first, guard);
          } catch (thrown) {
            const error = thrown instanceof Error ? thrown : new Error(String(thrown));
            const callback = rest.find((arg) => typeof arg === 'function') as ((e: Error) => void) | undefined;
            if (!callback) return Promise.reject(error);
            queueMicrotask(() => callback(error));
            return undefined;
          }
          return query(statement, ...rest);
        };
      }
      if (property === 'release') {
        return () => {
          throw new Error(
            'PostgresPaymentsStore: the outcome’s transaction client is released by the plugin once the transaction ends, not by a handler',
          );
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** PGlite's transaction object (`@electric-sql/pglite`), as far as the handlers may use it. */
interface PgliteTransaction {
  query(text: string, params?: unknown[], options?: unknown): Promise<PostgresQueryResult>;
  sql(strings: TemplateStringsArray, ...values: unknown[]): Promise<PostgresQueryResult>;
  exec(text: string, options?: unknown): Promise<unknown>;
  listen?(...args: unknown[]): Promise<unknown>;
  readonly closed: boolean;
}

/**
 * PGlite's transaction object as the handlers get it: its statements pass the guard, `rollback()`
 * is refused, and `transaction(callback)` (what Drizzle's `.transaction()` calls) runs the
 * callback in a savepoint.
 */
export function guardedPgliteTransaction(tx: PgliteTransaction, guard: TransactionGuard): object {
  const guarded: Record<string, unknown> = {
    query: (text: string, params?: unknown[], options?: unknown) =>
      run(() => tx.query(guard.rewrite(text), params, options)),
    sql: (strings: TemplateStringsArray, ...values: unknown[]) =>
      run(() => {
        guard.rewrite(strings.join('$'));
        return tx.sql(strings, ...values);
      }),
    exec: (text: string, options?: unknown) => run(() => tx.exec(guard.rewrite(text), options)),
    rollback: () => run(() => Promise.resolve(guard.rewrite('ROLLBACK'))),
    listen: (...args: unknown[]) =>
      run(() => tx.listen?.(...args) ?? Promise.reject(new TypeError('listen() is not available'))),
    get closed() {
      return tx.closed;
    },
    transaction: async <T>(callback: (nested: object) => Promise<T>): Promise<T> => {
      await tx.query(guard.rewrite('BEGIN'));
      let result: T;
      try {
        result = await callback(guarded);
      } catch (error) {
        await tx.query(guard.rewrite('ROLLBACK'));
        throw error;
      }
      await tx.query(guard.rewrite('COMMIT'));
      return result;
    },
  };
  return guarded;
}

// A refusal as a rejected promise, as the driver's own failures are.
async function run<T>(send: () => Promise<T>): Promise<T> {
  return send();
}

// The statement with its text rewritten: a string, or a config object (`{ text, values, ... }`)
// copied when plain, changed in place when a driver's object (a cursor, a stream).
function rewriteStatement(first: unknown, guard: TransactionGuard): unknown {
  if (typeof first === 'string') return guard.rewrite(first);
  if (typeof first !== 'object' || first === null) return first;
  const text = (first as { text?: unknown }).text;
  if (typeof text !== 'string') return first;
  const rewritten = guard.rewrite(text);
  if (rewritten === text) return first;
  if (Object.getPrototypeOf(first) === Object.prototype) return { ...first, text: rewritten };
  (first as { text: string }).text = rewritten;
  return first;
}

function refusal(reason: string): Error {
  return new Error(
    `PostgresPaymentsStore: a handler tried to end the outcome’s transaction: ${reason}. The plugin commits it once the handlers return ` +
      '(or rolls it back when one throws); a nested transaction (BEGIN, an ORM’s .transaction()) becomes a savepoint.',
  );
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected decision: ${JSON.stringify(value)}`);
}
