// file: exactly-once-pg.ts
import type { Pool } from 'pg';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { PostgresPaymentsStore } from 'nestjs-payments/postgres';

/** The plugin's store on the pool of the orders: one database, so one transaction spans both. */
export function transactionalStore(pool: Pool): PostgresPaymentsStore {
  return new PostgresPaymentsStore(pool, { transactional: true });
}

/**
 * A confirmation handler in plain SQL. Both writes commit with the outcome's done marker, or
 * neither does: no status guard, no unique index needed. The receipt goes out after the commit.
 */
export function markPaidWithSql(sendReceipt: (orderId: string) => Promise<void>) {
  return async (event: PaymentConfirmedEvent): Promise<void> => {
    const tx = event.transaction;
    if (!tx) throw new Error('the payments store is not transactional');
    const orderId = event.developerTrackingId!;
    await tx.query(`UPDATE orders SET status = 'paid' WHERE id = $1`, [orderId]);
    await tx.query(`INSERT INTO order_events (order_id, kind) VALUES ($1, 'paid')`, [orderId]);
    event.afterCommit(() => sendReceipt(orderId));
  };
}
