// file: inbox-drizzle-mysql2.ts
import { eq, sql } from 'drizzle-orm';
import { int, mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import type { MySql2Database, MySql2Transaction } from 'drizzle-orm/mysql2';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

const orders = mysqlTable('orders', {
  id: varchar('id', { length: 64 }).primaryKey(),
  status: varchar('status', { length: 16 }).notNull(),
});
const orderEvents = mysqlTable('order_events', {
  id: int('id').autoincrement().primaryKey(),
  orderId: varchar('order_id', { length: 64 }).notNull(),
  kind: varchar('kind', { length: 16 }).notNull(),
});

/** The inbox on Drizzle over mysql2 (MySQL, MariaDB): the handlers run in its `transaction()`. */
export function drizzleMysqlInbox(db: MySql2Database): PaymentsInbox {
  return sqlInbox({
    dialect: 'mysql',
    transaction: (run) =>
      db.transaction((tx) =>
        run({
          client: tx,
          query: async (text, params) => {
            // The inbox's statement with its `?` as Drizzle's parameters, in order.
            const [first, ...rest] = text.split('?');
            const pieces = rest.flatMap((piece, i) => [sql.param(params[i]), sql.raw(piece)]);
            return (await tx.execute(sql.join([sql.raw(first), ...pieces])))[0];
          },
        }),
      ),
  });
}

/** A confirmation handler with the Drizzle transaction. */
export async function markPaidWithDrizzleMysql(event: PaymentConfirmedEvent): Promise<void> {
  const tx = event.transaction!.client as MySql2Transaction<Record<string, never>, Record<string, never>>;
  await tx.update(orders).set({ status: 'paid' }).where(eq(orders.id, event.developerTrackingId!));
  await tx.insert(orderEvents).values({ orderId: event.developerTrackingId!, kind: 'paid' });
}
