// file: exactly-once-drizzle-pglite.ts
import type { PGlite } from '@electric-sql/pglite';
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PaymentConfirmedEvent } from 'nestjs-payments';

const orders = pgTable('orders', { id: text('id').primaryKey(), status: text('status').notNull() });
const orderEvents = pgTable('order_events', { id: serial('id').primaryKey(), orderId: text('order_id').notNull(), kind: text('kind').notNull() });

/**
 * A confirmation handler with Drizzle on PGlite (store: `new PostgresPaymentsStore(pglite,
 * { transactional: true })`). `transaction.client` is PGlite's transaction object, which
 * answers `query()` as PGlite does; Drizzle over it runs inside the outcome's transaction. Do
 * not use the PGlite instance itself in the handler: it waits for this very transaction to end.
 */
export async function markPaidWithDrizzleOnPglite(event: PaymentConfirmedEvent): Promise<void> {
  if (!event.transaction) throw new Error('the payments store is not transactional');
  const db = drizzle({ client: event.transaction.client as PGlite });
  await db.update(orders).set({ status: 'paid' }).where(eq(orders.id, event.developerTrackingId!));
  await db.insert(orderEvents).values({ orderId: event.developerTrackingId!, kind: 'paid' });
}
