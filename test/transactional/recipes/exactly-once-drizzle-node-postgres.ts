// file: exactly-once-drizzle-node-postgres.ts
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PoolClient } from 'pg';
import type { PaymentConfirmedEvent } from 'nestjs-payments';

const orders = pgTable('orders', { id: text('id').primaryKey(), status: text('status').notNull() });
const orderEvents = pgTable('order_events', { id: serial('id').primaryKey(), orderId: text('order_id').notNull(), kind: text('kind').notNull() });

/**
 * A confirmation handler with Drizzle on node-postgres (store: `new PostgresPaymentsStore(pool,
 * { transactional: true })`). Drizzle runs on the transaction's own pool client, so its
 * statements are part of the outcome's transaction.
 */
export async function markPaidWithDrizzle(event: PaymentConfirmedEvent): Promise<void> {
  if (!event.transaction) throw new Error('the payments store is not transactional');
  const db = drizzle({ client: event.transaction.client as PoolClient });
  await db.update(orders).set({ status: 'paid' }).where(eq(orders.id, event.developerTrackingId!));
  await db.insert(orderEvents).values({ orderId: event.developerTrackingId!, kind: 'paid' });
}
