import type { InjectionToken } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { PaymentsValidationError } from '../core/api/index.js';
import { sqlInbox, type InboxDialect, type PaymentsInbox, type SqlInboxTransaction } from '../core/index.js';

/** What {@link transactionHostInbox} builds the inbox from. */
export interface TransactionHostInboxOptions<Tx = unknown> {
  /**
   * The injection token of `@nestjs-cls/transactional`'s `TransactionHost`: the `TransactionHost`
   * class itself, or `getTransactionHostToken(connectionName)` for a named connection. It is
   * resolved from the app's providers once the app is up (`ClsPluginTransactional` provides it).
   */
  transactionHost: InjectionToken;
  /** The dialect of the adapter's database: `postgres`, or `mysql` for MySQL and MariaDB. */
  dialect: InboxDialect;
  /**
   * Runs one SQL statement (the dialect's placeholders) on the adapter's transaction, `txHost.tx`,
   * and answers the rows of one that returns rows (an array). TypeORM:
   * `(tx: EntityManager, sql, params) => tx.query(sql, params)`; docs/exactly-once.md has Knex,
   * Kysely, Drizzle, Prisma and pg-promise.
   * @param tx the adapter's transaction (`txHost.tx` inside the outcome's transaction)
   * @param sql the statement
   * @param params its parameters
   */
  query(tx: Tx, sql: string, params: unknown[]): Promise<unknown>;
  /** The inbox table, created from `nestjs-payments inbox-ddl`. Default `payments_inbox`. */
  table?: string;
}

/** What the inbox uses of a `TransactionHost`: the plugin never imports `@nestjs-cls/transactional`. */
interface TransactionHostShape {
  readonly tx: unknown;
  withTransaction(propagation: string, fn: () => Promise<unknown>): Promise<unknown>;
}

// `Propagation.RequiresNew`: the outcome's transaction is always one of its own, committed when the
// handlers return, before the store's done marker. Joined to a transaction of the caller (a
// `verifyReturn()` from a `@Transactional()` method) its commit would be the caller's, later, and
// the store would mark the payment done over writes that may still roll back.
const REQUIRES_NEW = 'REQUIRES_NEW';

// The hook the module finds on an inbox of transactionHostInbox(): the host is resolved in the app
// that runs the client, so one options object may serve several apps (each its own providers).
const IN_MODULE = Symbol('nestjs-payments:transaction-host-inbox');

interface ModuleInbox extends PaymentsInbox {
  [IN_MODULE](moduleRef: ModuleRef): PaymentsInbox;
}

/**
 * The inbox (docs/exactly-once.md) of an app that uses `@nestjs-cls/transactional`: the `inbox`
 * option of `PaymentsModule.forRoot()`. Each outcome's handlers run inside
 * `TransactionHost.withTransaction()` (a new transaction, whatever the caller's), with the inbox
 * row: a handler written as any other method of the app (`this.txHost.tx.order.update(...)`)
 * commits with the row, or not at all. Its own statements go through `query` on `txHost.tx`.
 * The `TransactionHost` is looked up when the module starts (start-up fails without it); this
 * inbox works only in `PaymentsModule`.
 * @param options the `TransactionHost`'s token, the dialect, how to run SQL on `txHost.tx`, the table
 */
export function transactionHostInbox<Tx = unknown>(options: TransactionHostInboxOptions<Tx>): PaymentsInbox {
  // Checks the dialect and the table now, where the options are written.
  sqlInbox({ dialect: options.dialect, table: options.table, transaction: () => Promise.reject(new Error()) });
  const inbox: ModuleInbox = {
    transaction: () =>
      Promise.reject(
        new Error('transactionHostInbox() is an inbox of PaymentsModule: give it as the `inbox` of PaymentsModule'),
      ),
    [IN_MODULE]: (moduleRef) => boundInbox(options, moduleRef),
  };
  return inbox;
}

/**
 * The inbox a registration's client runs: one of {@link transactionHostInbox} bound to the app's
 * `TransactionHost`, any other as given.
 * @param inbox the `inbox` option
 * @param moduleRef the registration's module
 */
export function inboxInModule(
  inbox: PaymentsInbox | undefined,
  moduleRef: ModuleRef | undefined,
): PaymentsInbox | undefined {
  if (!inbox || !(IN_MODULE in inbox) || !moduleRef) return inbox;
  return (inbox as ModuleInbox)[IN_MODULE](moduleRef);
}

function boundInbox<Tx>(options: TransactionHostInboxOptions<Tx>, moduleRef: ModuleRef): PaymentsInbox {
  const lookUp = (): TransactionHostShape => {
    let host: unknown;
    try {
      host = moduleRef.get(options.transactionHost, { strict: false });
    } catch {
      host = undefined;
    }
    if (typeof (host as Partial<TransactionHostShape> | undefined)?.withTransaction !== 'function')
      throw new PaymentsValidationError(
        [
          {
            field: 'inbox',
            messages: [
              `transactionHostInbox(): no TransactionHost of @nestjs-cls/transactional is provided as ${tokenName(options.transactionHost)} (register ClsModule with ClsPluginTransactional)`,
            ],
          },
        ],
        'payments options',
      );
    return host as TransactionHostShape;
  };
  // Now, to fail at start-up. Nest may not have built the host yet (what it answers now can be a
  // placeholder): the instance is looked up again at the first transaction, once the app is up.
  lookUp();
  let host: TransactionHostShape | undefined;
  return sqlInbox({
    dialect: options.dialect,
    table: options.table,
    transaction: <T>(run: (tx: SqlInboxTransaction) => Promise<T>) => {
      host ??= lookUp();
      const txHost = host;
      // The handlers run in this callback's async context: CLS hands them its transaction as `txHost.tx`.
      return txHost.withTransaction(REQUIRES_NEW, () => {
        const tx = txHost.tx as Tx;
        return run({ client: tx, query: (sql, params) => options.query(tx, sql, params) });
      }) as Promise<T>;
    },
  });
}

function tokenName(token: InjectionToken): string {
  return typeof token === 'function' ? token.name : String(token);
}
