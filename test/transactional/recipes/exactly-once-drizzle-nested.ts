// file: exactly-once-drizzle-nested.ts
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PoolClient } from 'pg';
import type { PaymentConfirmedEvent } from 'nestjs-payments';

const orders = pgTable('orders', { id: text('id').primaryKey(), status: text('status').notNull() });
const orderEvents = pgTable('order_events', { id: serial('id').primaryKey(), orderId: text('order_id').notNull(), kind: text('kind').notNull() });

/**
 * Code that opens its own transaction (a service shared with the rest of the app) runs as is on
 * the outcome's transaction: Drizzle's `.transaction()` on `event.transaction.client` becomes a
 * savepoint. Its commit is the outcome's; its rollback undoes only its own writes.
 */
export async function markPaidInNestedTransaction(event: PaymentConfirmedEvent): Promise<void> {
  if (!event.transaction) throw new Error('the payments store is not transactional');
  const db = drizzle({ client: event.transaction.client as PoolClient });
  await db.transaction(async (tx) => {
    await tx.update(orders).set({ status: 'paid' }).where(eq(orders.id, event.developerTrackingId!));
    await tx.insert(orderEvents).values({ orderId: event.developerTrackingId!, kind: 'paid' });
  });
}
