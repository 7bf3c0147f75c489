import type { RequestContext, TransactionalConnection } from '@vendure/core';
import { Column, Entity, PrimaryColumn, type ColumnOptions } from 'typeorm';
import {
  INBOX_COLUMNS,
  sqlInbox,
  type InboxColumn,
  type InboxDialect,
  type PaymentsInbox,
} from '../core/store/index.js';

/** The inbox table in Vendure's database (created by Vendure's synchronize or migrations). */
export const VENDURE_INBOX_TABLE = 'nestjs_payments_inbox';

/**
 * One row of the plugin's inbox in Vendure's database: a payment whose outcome the plugin
 * handled, written in the same transaction as the order's Payment and state transition. Its
 * columns are the core's inbox columns (`INBOX_COLUMNS`); the plugin writes it in SQL only.
 * @internal
 */
export class NestjsPaymentsInboxEntry {
  /** The payment (the table's key). */
  paymentId!: string;
  /** The event handled. */
  event!: string;
  /** The order's tracking id, when the payment has one. */
  orderId!: string | null;
  /** When the attempt began handling it. */
  handledAt!: Date;
  /** The attempt that wrote the row. */
  attempt!: string;
}

/** A column's TypeORM options: the same on every database Vendure runs on. */
function columnOptions(column: InboxColumn): ColumnOptions & { nullable: boolean } {
  const nullable = column.nullable;
  if (column.kind === 'timestamp') return { name: column.name, type: Date, nullable };
  return { name: column.name, type: 'varchar', length: column.length ?? 191, nullable };
}

const camel = (name: string): string => name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());

// The entity is declared from the core's column list, so that the CLI's DDL and Vendure's table
// have one source.
Entity(VENDURE_INBOX_TABLE)(NestjsPaymentsInboxEntry);
for (const column of INBOX_COLUMNS) {
  const { nullable, ...options } = columnOptions(column);
  const decorate = column.primary ? PrimaryColumn(options) : Column({ ...options, nullable });
  decorate(NestjsPaymentsInboxEntry.prototype, camel(column.name));
}

/**
 * The inbox dialect of a TypeORM database type (Vendure's `dbConnectionOptions.type`), or
 * undefined for a database the inbox does not write (then the settlement runs without it). Pure.
 * @param type the TypeORM driver type
 */
export function inboxDialectOf(type: string | undefined): InboxDialect | undefined {
  switch (type) {
    case 'postgres':
      return 'postgres';
    case 'mysql':
    case 'mariadb':
    case 'aurora-mysql':
      return 'mysql';
    case 'sqljs':
    case 'sqlite':
    case 'better-sqlite3':
    case 'capacitor':
    case 'cordova':
    case 'expo':
    case 'nativescript':
    case 'react-native':
      return 'sqlite';
    default:
      return undefined;
  }
}

/**
 * Whether the plugin settles orders through the inbox in Vendure's database, or why not (pure):
 * - `inbox`: Vendure's database is one the inbox writes, and the store is not transactional;
 * - `none`: a transactional store (its own transaction is the commit path: the core refuses both),
 *   or a database the inbox does not write; the order's Payment is then recognised by its
 *   transaction id, which a retry after a crash sees but a concurrent settlement may not.
 */
export type VendureInboxPlan = { kind: 'inbox'; dialect: InboxDialect } | { kind: 'none'; reason: string };

/**
 * The one rule of {@link VendureInboxPlan}.
 * @param setup Vendure's database type, and whether the plugin's store is transactional
 */
export function vendureInboxPlanOf(setup: {
  dbType: string | undefined;
  transactionalStore: boolean;
}): VendureInboxPlan {
  if (setup.transactionalStore)
    return {
      kind: 'none',
      reason:
        "the store is transactional (PostgresPaymentsStore with transactional: true): its transaction is not Vendure's; set transactional: false for exactly-once settlements in Vendure's database",
    };
  const dialect = inboxDialectOf(setup.dbType);
  if (!dialect)
    return { kind: 'none', reason: `Vendure's database (${setup.dbType ?? 'unknown'}) is not one the inbox writes` };
  return { kind: 'inbox', dialect };
}

/**
 * The inbox in Vendure's own database: each settlement runs in one `withTransaction` of Vendure's
 * `TransactionalConnection`, the inbox row's statements on that transaction's own query runner,
 * and the handlers are handed its `RequestContext` (`event.transaction.client`).
 * @param connection Vendure's connection
 * @param dialect the dialect of Vendure's database
 * @param requestContext the context the transaction is opened on (the admin API's, default channel)
 */
export function vendureInbox(
  connection: TransactionalConnection,
  dialect: InboxDialect,
  requestContext: () => Promise<RequestContext>,
): PaymentsInbox {
  return sqlInbox({
    dialect,
    table: VENDURE_INBOX_TABLE,
    transaction: async (run) =>
      connection.withTransaction(await requestContext(), (tx) =>
        run({
          client: tx,
          query: (sql, params) => connection.getRepository(tx, NestjsPaymentsInboxEntry).query(sql, params),
        }),
      ),
  });
}
