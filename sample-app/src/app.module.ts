import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { PaymentsModule } from 'nestjs-payments';
import { AdminController } from './admin/admin.controller.js';
import { FlashMessages } from './admin/admin.flash.js';
import { CatalogController } from './catalog/catalog.controller.js';
import { Catalog } from './catalog/catalog.service.js';
import { createPaymentsOptions } from './config/payments.factory.js';
import { SHOP_SANDBOX } from './config/sandbox.provider.js';
import { ShopConfigModule } from './config/shop-config.module.js';
import { SHOP_SETTINGS, type ShopRuntime } from './config/shop.settings.js';
import { OrdersController } from './orders/orders.controller.js';
import { OrdersStore } from './orders/orders.store.js';
import { PaymentEventsHandler } from './orders/payment-events.handler.js';

/** The shop: catalog, checkout, return pages, admin, and the payments plugin configured from the environment. */
@Module({})
export class AppModule {
  /**
   * @param config `ConfigModule.forRoot(...)` (process.env and .env, or the variables a test gives)
   * @param runtime the listening port, and the sandbox port asked for in code
   */
  static forRoot(config: Promise<DynamicModule>, runtime: ShopRuntime): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ShopConfigModule.forRoot(config, runtime),
        PaymentsModule.forRootAsync({
          inject: [ConfigService, SHOP_SETTINGS, SHOP_SANDBOX],
          useFactory: createPaymentsOptions,
        }),
      ],
      controllers: [CatalogController, OrdersController, AdminController],
      providers: [Catalog, OrdersStore, PaymentEventsHandler, FlashMessages],
    };
  }
}
