// file: inbox-mysql2.ts
import type { Pool, PoolConnection } from 'mysql2/promise';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

/** The inbox on the orders' MySQL or MariaDB pool: the handlers and the inbox row, one transaction. */
export function mysqlInbox(pool: Pool): PaymentsInbox {
  return sqlInbox({
    dialect: 'mysql',
    transaction: async (run) => {
      const connection = await pool.getConnection();
      try {
        await connection.beginTransaction();
        const result = await run({
          client: connection,
          query: async (sql, params) => (await connection.query(sql, params))[0],
        });
        await connection.commit();
        return result;
      } catch (error) {
        await connection.rollback().catch(() => undefined);
        throw error;
      } finally {
        connection.release();
      }
    },
  });
}

/** A confirmation handler with mysql2: both writes commit with the inbox row, or neither does. */
export async function markPaidWithMysql2(event: PaymentConfirmedEvent): Promise<void> {
  const connection = event.transaction!.client as PoolConnection;
  const orderId = event.developerTrackingId!;
  await connection.query(`UPDATE orders SET status = 'paid' WHERE id = ?`, [orderId]);
  await connection.query(`INSERT INTO order_events (order_id, kind) VALUES (?, 'paid')`, [orderId]);
}
