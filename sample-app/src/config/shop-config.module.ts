import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { SandboxLifecycle, SHOP_SANDBOX, sandboxProvider } from './sandbox.provider.js';
import { readShopSettings, SHOP_RUNTIME, SHOP_SETTINGS, type ShopRuntime } from './shop.settings.js';

/**
 * The shop's configuration: its settings and the embedded sandbox (or `null`). Global, so the
 * payments options factory and every controller can inject them.
 */
@Module({})
export class ShopConfigModule {
  /**
   * @param config the loaded `ConfigModule.forRoot(...)`
   * @param runtime values known only once the server is listening
   */
  static forRoot(config: Promise<DynamicModule>, runtime: ShopRuntime): DynamicModule {
    return {
      module: ShopConfigModule,
      global: true,
      imports: [config],
      providers: [
        { provide: SHOP_RUNTIME, useValue: runtime },
        { provide: SHOP_SETTINGS, inject: [ConfigService, SHOP_RUNTIME], useFactory: readShopSettings },
        sandboxProvider,
        SandboxLifecycle,
      ],
      exports: [SHOP_SETTINGS, SHOP_SANDBOX],
    };
  }
}
