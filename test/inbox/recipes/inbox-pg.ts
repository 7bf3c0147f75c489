// file: inbox-pg.ts
import type { Pool, PoolClient } from 'pg';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

/** The inbox on the orders' pool: each outcome's handlers run in one transaction of it, with the inbox row. */
export function pgInbox(pool: Pool): PaymentsInbox {
  return sqlInbox({
    dialect: 'postgres',
    transaction: async (run) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await run({ client, query: async (sql, params) => (await client.query(sql, params)).rows });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
  });
}

/** A confirmation handler in plain SQL: both writes commit with the inbox row, or neither does. */
export async function markPaidWithPg(event: PaymentConfirmedEvent): Promise<void> {
  const client = event.transaction!.client as PoolClient;
  const orderId = event.developerTrackingId!;
  await client.query(`UPDATE orders SET status = 'paid' WHERE id = $1`, [orderId]);
  await client.query(`INSERT INTO order_events (order_id, kind) VALUES ($1, 'paid')`, [orderId]);
}
