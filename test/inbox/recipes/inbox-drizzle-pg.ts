// file: inbox-drizzle-pg.ts
import { eq, sql } from 'drizzle-orm';
import type { NodePgDatabase, NodePgTransaction } from 'drizzle-orm/node-postgres';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

const orders = pgTable('orders', { id: text('id').primaryKey(), status: text('status').notNull() });
const orderEvents = pgTable('order_events', {
  id: serial('id').primaryKey(),
  orderId: text('order_id').notNull(),
  kind: text('kind').notNull(),
});

/** The inbox on Drizzle over node-postgres: the handlers run in its `transaction()`. */
export function drizzlePgInbox(db: NodePgDatabase): PaymentsInbox {
  return sqlInbox({
    dialect: 'postgres',
    transaction: (run) =>
      db.transaction((tx) =>
        run({
          client: tx,
          query: async (text, params) => {
            // The inbox's statement with its `$1, $2...` as Drizzle's parameters, in order.
            const [first, ...rest] = text.split(/\$\d+/);
            const pieces = rest.flatMap((piece, i) => [sql.param(params[i]), sql.raw(piece)]);
            return (await tx.execute(sql.join([sql.raw(first), ...pieces]))).rows;
          },
        }),
      ),
  });
}

/** A confirmation handler with the Drizzle transaction. */
export async function markPaidWithDrizzlePg(event: PaymentConfirmedEvent): Promise<void> {
  const tx = event.transaction!.client as NodePgTransaction<Record<string, never>, Record<string, never>>;
  await tx.update(orders).set({ status: 'paid' }).where(eq(orders.id, event.developerTrackingId!));
  await tx.insert(orderEvents).values({ orderId: event.developerTrackingId!, kind: 'paid' });
}
