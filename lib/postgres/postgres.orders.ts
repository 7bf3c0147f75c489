import {
  parseOrderCheckout,
  parseOrderSettlement,
  positiveMs,
  settlementText,
  type OrderCheckout,
  type OrderLedger,
  type OrderSettlement,
  type TransactionQuery,
} from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';
import { valueOf } from './postgres.rows.js';
import type { StoreTables } from './postgres.schema.js';

const expiresIn = (param: string) => `statement_timestamp() + ${param}::double precision * interval '1 millisecond'`;

/** The statements of the order ledger, one per operation (values bound, table names quoted). */
export function orderStatements(t: Pick<StoreTables, 'orders'>): Record<keyof OrderLedger, string> {
  // The row is always updated, unchanged while it holds: the update takes its row lock, so a
  // writer in a transaction holds the order until its commit (or rollback), and the statement
  // returns the value that holds after the conflict was resolved, with no second, racy read.
  const expired = 'o.expires_at <= statement_timestamp()';
  const find = (kind: string) =>
    `SELECT value FROM ${t.orders} WHERE order_key = $1::text AND kind = '${kind}' AND expires_at > statement_timestamp()`;
  return {
    settleOrder: `INSERT INTO ${t.orders} AS o (order_key, kind, value, expires_at)
VALUES ($1::text, 'settled', $2::text, ${expiresIn('$3')})
ON CONFLICT (order_key, kind) DO UPDATE SET
  value = CASE WHEN ${expired} THEN EXCLUDED.value ELSE o.value END,
  expires_at = CASE WHEN ${expired} THEN EXCLUDED.expires_at ELSE o.expires_at END
RETURNING value`,
    findOrderSettlement: find('settled'),
    saveCheckout: `INSERT INTO ${t.orders} (order_key, kind, value, expires_at)
VALUES ($1::text, 'checkout', $2::text, ${expiresIn('$3')})
ON CONFLICT (order_key, kind) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
    findCheckout: find('checkout'),
  };
}

/**
 * The {@link OrderLedger} of `PostgresPaymentsStore`: rows of `<prefix>orders`, one per order and
 * kind (`settled`, `checkout`). In the transactional mode the order's settlement is written
 * through the handlers' transaction, so that it commits with the done marker or not at all.
 */
export class PostgresOrderLedger implements OrderLedger {
  /**
   * @param db the store's connection
   * @param sql the statements for the store's tables
   */
  constructor(
    private readonly db: PostgresConnection,
    private readonly sql: Record<keyof OrderLedger, string>,
  ) {}

  /** @inheritdoc */
  async settleOrder(
    orderKey: string,
    settlement: OrderSettlement,
    ttlMs: number,
    transaction?: TransactionQuery,
  ): Promise<OrderSettlement> {
    const params = [orderKey, settlementText(settlement), positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs')];
    const rows = transaction
      ? (await transaction.query(this.sql.settleOrder, params)).rows
      : await this.db.write('settleOrder', this.sql.settleOrder, params);
    const held = parseOrderSettlement(valueOf(rows[0]));
    if (!held)
      throw new Error(
        `PostgresPaymentsStore: the settlement of order ${JSON.stringify(orderKey)} is not one this store wrote`,
      );
    return held;
  }

  /** @inheritdoc */
  async findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined> {
    const rows = await this.db.query('findOrderSettlement', this.sql.findOrderSettlement, [orderKey]);
    return rows.length === 0 ? undefined : parseOrderSettlement(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void> {
    await this.db.write('saveCheckout', this.sql.saveCheckout, [
      orderKey,
      JSON.stringify(checkout),
      positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs'),
    ]);
  }

  /** @inheritdoc */
  async findCheckout(orderKey: string): Promise<OrderCheckout | undefined> {
    const rows = await this.db.query('findCheckout', this.sql.findCheckout, [orderKey]);
    return rows.length === 0 ? undefined : parseOrderCheckout(valueOf(rows[0]));
  }
}
