import { PluginCommonModule, VendurePlugin } from '@vendure/core';
import { createNestjsPaymentsHandler } from './vendure.handler.js';
import { NestjsPaymentsWebhookController } from './vendure.controller.js';
import { NESTJS_PAYMENTS_PLUGIN_OPTIONS, type NestjsPaymentsPluginOptions } from './vendure.options.js';
import { NestjsPaymentsShopResolver, SHOP_API_SCHEMA } from './vendure.resolver.js';
import { NestjsPaymentsService } from './vendure.service.js';

/**
 * The Vendure plugin: registers the `nestjs-payments` PaymentMethodHandler, the shop API's
 * `createNestjsPaymentsLink` and `checkNestjsPaymentsReturn` mutations, and the webhook route
 * `/nestjs-payments/webhook`. Add `NestjsPaymentsPlugin.init(options)` to `plugins`
 * (docs/vendure.md).
 */
@VendurePlugin({
  imports: [PluginCommonModule],
  providers: [
    { provide: NESTJS_PAYMENTS_PLUGIN_OPTIONS, useFactory: () => NestjsPaymentsPlugin.options },
    NestjsPaymentsService,
  ],
  controllers: [NestjsPaymentsWebhookController],
  shopApiExtensions: { schema: SHOP_API_SCHEMA, resolvers: [NestjsPaymentsShopResolver] },
  configuration: (config) => {
    config.paymentOptions.paymentMethodHandlers.push(createNestjsPaymentsHandler());
    return config;
  },
  compatibility: '^3.0.0',
})
export class NestjsPaymentsPlugin {
  /** The options given to {@link NestjsPaymentsPlugin.init} (Vendure's plugin convention). */
  static options: NestjsPaymentsPluginOptions;

  /**
   * Configures the plugin; put the result in `plugins`.
   * @param options the client's options (credentials, `baseUrl`, `webhook`, `store`...) and `preAuthorization`
   */
  static init(options: NestjsPaymentsPluginOptions): typeof NestjsPaymentsPlugin {
    NestjsPaymentsPlugin.options = options;
    return NestjsPaymentsPlugin;
  }
}
