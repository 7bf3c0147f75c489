// file: inbox-kysely.ts
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type InboxDialect, type PaymentsInbox } from 'nestjs-payments/store';

/** The tables the handler writes (Kysely's database interface). */
export interface ShopDatabase {
  orders: { id: string; status: string };
  order_events: { id?: number; order_id: string; kind: string };
}

/** The inbox on a Kysely instance (PostgresDialect or MysqlDialect): the handlers run in its `transaction()`. */
export function kyselyInbox(db: Kysely<ShopDatabase>, dialect: InboxDialect): PaymentsInbox {
  return sqlInbox({
    dialect,
    transaction: (run) =>
      db.transaction().execute((trx) =>
        run({
          client: trx,
          query: async (sql, params) => (await trx.executeQuery(CompiledQuery.raw(sql, params))).rows,
        }),
      ),
  });
}

/** A confirmation handler with the Kysely transaction. */
export async function markPaidWithKysely(event: PaymentConfirmedEvent): Promise<void> {
  const trx = event.transaction!.client as Transaction<ShopDatabase>;
  await trx.updateTable('orders').set({ status: 'paid' }).where('id', '=', event.developerTrackingId!).execute();
  await trx.insertInto('order_events').values({ order_id: event.developerTrackingId!, kind: 'paid' }).execute();
}
