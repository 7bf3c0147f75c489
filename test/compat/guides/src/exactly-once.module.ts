// The harness's wiring of docs/exactly-once.md's recipe (pasted into src/guides/ by prepare.mjs):
// the default account's registration on the recipe's transactional store, over a pg Pool of the
// orders' database, and a confirmation handler that is the recipe's markPaidWithSql.
import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  paymentsOptionsFromConfig,
  type PaymentConfirmedEvent,
} from 'nestjs-payments';
import type { PaymentsStore } from 'nestjs-payments/store';
import { Pool } from 'pg';

/** What the recipe exports. */
export interface ExactlyOnceRecipe {
  transactionalStore(pool: Pool): PaymentsStore;
  markPaidWithSql(sendReceipt: (orderId: string) => Promise<void>): (event: PaymentConfirmedEvent) => Promise<void>;
}

const ORDERS_POOL = Symbol('orders pool');
const RECIPE = Symbol('exactly-once recipe');

/** The orders' database, ended when the app stops (a pool passed to the store stays the app's). */
@Module({
  imports: [ConfigModule.forRoot()],
  providers: [
    {
      provide: ORDERS_POOL,
      inject: [ConfigService],
      useFactory: (config: ConfigService) => new Pool({ connectionString: config.getOrThrow<string>('DATABASE_URL') }),
    },
  ],
  exports: [ORDERS_POOL],
})
class OrdersDatabase implements OnApplicationShutdown {
  constructor(@Inject(ORDERS_POOL) private readonly pool: Pool) {}
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

@Injectable()
class Orders {
  readonly #markPaid: (event: PaymentConfirmedEvent) => Promise<void>;
  constructor(@Inject(RECIPE) recipe: ExactlyOnceRecipe) {
    this.#markPaid = recipe.markPaidWithSql(async () => undefined);
  }

  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent): Promise<void> {
    return this.#markPaid(event);
  }
}

/** The default account's registration with the recipe's store and handler. */
export function exactlyOnceModule(recipe: ExactlyOnceRecipe): DynamicModule {
  @Module({})
  class ExactlyOnceModule {}
  return {
    module: ExactlyOnceModule,
    imports: [
      PaymentsModule.forRootAsync({
        imports: [ConfigModule.forRoot(), OrdersDatabase],
        inject: [ConfigService, ORDERS_POOL],
        useFactory: (config: ConfigService, pool: Pool) =>
          paymentsOptionsFromConfig(config, { store: recipe.transactionalStore(pool) }),
        isGlobal: true,
      }),
    ],
    providers: [{ provide: RECIPE, useValue: recipe }, Orders],
  };
}
