// file: inbox-knex.ts
import type { Knex } from 'knex';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

/** The inbox on a Knex instance (`pg`, `mysql2` or `mysql` client): the handlers run in its `transaction()`. */
export function knexInbox(knex: Knex): PaymentsInbox {
  const postgres = knex.client.config.client === 'pg';
  return sqlInbox({
    dialect: postgres ? 'postgres' : 'mysql',
    transaction: (run) =>
      knex.transaction((trx) =>
        run({
          client: trx,
          query: async (sql, params) => {
            // Knex writes `?` on every database; the inbox's `$1, $2...` come in order.
            const result = await trx.raw(sql.replace(/\$\d+/g, '?'), params as Knex.RawBinding[]);
            return postgres ? result.rows : result[0];
          },
        }),
      ),
  });
}

/** A confirmation handler with the Knex transaction. */
export async function markPaidWithKnex(event: PaymentConfirmedEvent): Promise<void> {
  const trx = event.transaction!.client as Knex.Transaction;
  await trx('orders').where({ id: event.developerTrackingId! }).update({ status: 'paid' });
  await trx('order_events').insert({ order_id: event.developerTrackingId!, kind: 'paid' });
}
