// file: inbox-mikro-orm.ts
import { EntitySchema } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type InboxDialect, type PaymentsInbox } from 'nestjs-payments/store';

const Order = new EntitySchema<{ id: string; status: string }>({
  name: 'Order',
  tableName: 'orders',
  properties: { id: { type: 'string', primary: true }, status: { type: 'string' } },
});
const OrderEvent = new EntitySchema<{ id: number; orderId: string; kind: string }>({
  name: 'OrderEvent',
  tableName: 'order_events',
  properties: {
    id: { type: 'number', primary: true, autoincrement: true },
    orderId: { type: 'string', fieldName: 'order_id' },
    kind: { type: 'string' },
  },
});

/** The entities the handler writes: add them to `MikroORM.init({ entities })`. */
export const MIKRO_ORDER_ENTITIES = [Order, OrderEvent];

/**
 * The inbox on MikroORM (`@mikro-orm/postgresql`, `@mikro-orm/mysql`, `@mikro-orm/mariadb`): the
 * handlers run in `transactional()` of a fork of `em` (pass `orm.em`).
 */
export function mikroOrmInbox(em: EntityManager, dialect: InboxDialect): PaymentsInbox {
  return sqlInbox({
    dialect,
    transaction: (run) =>
      em.fork().transactional((tx) =>
        // MikroORM writes `?` on every database; the inbox's `$1, $2...` come in order.
        run({ client: tx, query: (sql, params) => tx.execute(sql.replace(/\$\d+/g, '?'), params) }),
      ),
  });
}

/** A confirmation handler with the transaction's EntityManager. */
export async function markPaidWithMikroOrm(event: PaymentConfirmedEvent): Promise<void> {
  const em = event.transaction!.client as EntityManager;
  await em.nativeUpdate(Order, { id: event.developerTrackingId! }, { status: 'paid' });
  await em.insert(OrderEvent, { orderId: event.developerTrackingId!, kind: 'paid' });
}
