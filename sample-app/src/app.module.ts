import { type DynamicModule, type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { PaymentsModule } from 'nestjs-payments';
import { PaymentsDeskModule } from 'nestjs-payments/desk';
import { AdminLoginController } from './admin/admin-login.controller.js';
import { AdminController } from './admin/admin.controller.js';
import { FlashMessages } from './admin/admin.flash.js';
import { CatalogController } from './catalog/catalog.controller.js';
import { Catalog } from './catalog/catalog.service.js';
import { createPaymentsOptions } from './config/payments.factory.js';
import { SHOP_SANDBOX } from './config/sandbox.provider.js';
import { ShopConfigModule } from './config/shop-config.module.js';
import { SHOP_SETTINGS, type ShopRuntime } from './config/shop.settings.js';
import { SHOP_DATABASE, type ShopDatabase } from './db/database.js';
import { OrdersController } from './orders/orders.controller.js';
import { OrdersRepository } from './orders/orders.repository.js';
import { PaymentEventsHandler } from './orders/payment-events.handler.js';
import { StartupReconciliation } from './orders/startup-reconciliation.js';
import { PAYMENTS_DESK_PATH, PaymentsStaffGuard, SHOP_ADMIN } from './security/payments-staff.guard.js';
import { ShopSecurity, ShopSecurityMiddleware } from './security/shop-security.js';

const SHOP_CONTROLLERS = [CatalogController, OrdersController, AdminLoginController, AdminController];

/** The shop: catalog, checkout, return pages, admin, the payments desk, and the payments plugin configured from the environment. */
@Module({})
export class AppModule implements NestModule {
  /**
   * @param config `ConfigModule.forRoot(...)` (process.env and .env, or the variables a test gives)
   * @param runtime the listening port, and the sandbox port asked for in code
   * @param database the opened, migrated database (orders and the plugin's store)
   */
  static forRoot(config: Promise<DynamicModule>, runtime: ShopRuntime, database: ShopDatabase): DynamicModule {
    const databaseModule: DynamicModule = {
      module: class ShopDatabaseModule {},
      global: true,
      providers: [{ provide: SHOP_DATABASE, useValue: database }],
      exports: [SHOP_DATABASE],
    };
    return {
      module: AppModule,
      imports: [
        databaseModule,
        ShopConfigModule.forRoot(config, runtime),
        PaymentsModule.forRootAsync({
          inject: [ConfigService, SHOP_SETTINGS, SHOP_SANDBOX, SHOP_DATABASE],
          useFactory: createPaymentsOptions,
        }),
        // What needs a person about payments, behind the admin's sign-in; its forms carry tokens of
        // their own, so the shop's CSRF middleware is not applied to its routes.
        PaymentsDeskModule.forRoot({
          path: PAYMENTS_DESK_PATH,
          guard: PaymentsStaffGuard,
          principal: () => SHOP_ADMIN,
        }),
      ],
      controllers: SHOP_CONTROLLERS,
      providers: [
        Catalog,
        OrdersRepository,
        PaymentEventsHandler,
        StartupReconciliation,
        FlashMessages,
        ShopSecurity,
        ShopSecurityMiddleware,
      ],
    };
  }

  /** Customer cookie, admin session and CSRF checks on the shop's own routes; the plugin's webhook is left alone. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ShopSecurityMiddleware).forRoutes(...SHOP_CONTROLLERS);
  }
}
