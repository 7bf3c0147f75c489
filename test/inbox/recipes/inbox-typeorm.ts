// file: inbox-typeorm.ts
import { EntitySchema, type DataSource, type EntityManager } from 'typeorm';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type PaymentsInbox } from 'nestjs-payments/store';

const Order = new EntitySchema<{ id: string; status: string }>({
  name: 'Order',
  tableName: 'orders',
  columns: { id: { type: String, primary: true }, status: { type: String } },
});
const OrderEvent = new EntitySchema<{ id: number; orderId: string; kind: string }>({
  name: 'OrderEvent',
  tableName: 'order_events',
  columns: {
    id: { type: Number, primary: true, generated: true },
    orderId: { type: String, name: 'order_id' },
    kind: { type: String },
  },
});

/** The entities the handler writes: add them to the DataSource's `entities`. */
export const ORDER_ENTITIES = [Order, OrderEvent];

/** The inbox on a TypeORM DataSource (PostgreSQL, MySQL or MariaDB): the handlers run in its `transaction()`. */
export function typeormInbox(dataSource: DataSource): PaymentsInbox {
  return sqlInbox({
    dialect: dataSource.options.type === 'postgres' ? 'postgres' : 'mysql',
    transaction: (run) =>
      dataSource.transaction((manager) => run({ client: manager, query: (sql, params) => manager.query(sql, params) })),
  });
}

/** A confirmation handler with TypeORM's EntityManager of the outcome's transaction. */
export async function markPaidWithTypeorm(event: PaymentConfirmedEvent): Promise<void> {
  const manager = event.transaction!.client as EntityManager;
  await manager.update(Order, { id: event.developerTrackingId! }, { status: 'paid' });
  await manager.insert(OrderEvent, { orderId: event.developerTrackingId!, kind: 'paid' });
}
