// file: inbox-nest-cls.ts
import { Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { DataSource, EntitySchema, type EntityManager } from 'typeorm';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  transactionHostInbox,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';

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
export const SHOP_ENTITIES = [Order, OrderEvent];

/** A service of the app, written as any other: its writes go through the TransactionHost. */
@Injectable()
export class PaidOrdersService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Both writes commit with the payment's inbox row, or neither does. */
  @OnPaymentConfirmed()
  async markPaid(event: PaymentConfirmedEvent): Promise<void> {
    await this.txHost.tx.update(Order, { id: event.developerTrackingId! }, { status: 'paid' });
    await this.txHost.tx.insert(OrderEvent, { orderId: event.developerTrackingId!, kind: 'paid' });
  }
}

/**
 * The shop. `database` is your module that provides TypeORM's `DataSource` (`TypeOrmModule.forRoot()`
 * or a provider of your own), `dialect` its database's, `payments` the plugin's other options.
 */
@Module({})
export class TransactionalShopModule {
  static register(database: Type, dialect: 'postgres' | 'mysql', payments: PaymentsModuleOptions): DynamicModule {
    return {
      module: TransactionalShopModule,
      imports: [
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
          plugins: [
            new ClsPluginTransactional({
              imports: [database],
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }),
            }),
          ],
        }),
        PaymentsModule.forRoot({
          ...payments,
          isGlobal: true,
          inbox: transactionHostInbox({
            transactionHost: TransactionHost,
            dialect,
            query: (tx: EntityManager, sql, params) => tx.query(sql, params),
          }),
        }),
      ],
      providers: [PaidOrdersService],
    };
  }
}
