import { Logger, Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { PaymentsClient } from '../core/payments.client.js';
import {
  PAYMENTS_CLIENT,
  PAYMENTS_MODULE_OPTIONS,
  PaymentsConfigurableModule,
  type PaymentsModuleOptions,
} from './payments.module-definition.js';
import { PaymentsService } from './payments.service.js';
import { PaymentsWebhookController } from './webhook.controller.js';
import { PaymentsWebhookGuard } from './webhook.guard.js';

/**
 * The emitter the plugin emits on. Not global, so it never shadows the host's own
 * EventEmitterModule; its loader registers every @OnEvent/@OnPaymentConfirmed method on this
 * emitter exactly once, whether or not the host has an emitter of its own.
 */
const PAYMENTS_EVENTS = EventEmitterModule.forRoot({ global: false, wildcard: true, delimiter: '.' });

// Nest's PATH_METADATA key; spelled out because its import path differs between Nest 11 and 12.
const PATH_METADATA = 'path';

function createClient(options: PaymentsModuleOptions): PaymentsClient {
  const client = new PaymentsClient({ ...options, logger: options.logger ?? new Logger('Payments') });
  // The route is known only once the (possibly async) options are resolved, which Nest does
  // before it registers routes; the controller's path is set here for that reason.
  Reflect.defineMetadata(PATH_METADATA, client.webhookPath, PaymentsWebhookController);
  return client;
}

/**
 * The plugin's Nest module: `PaymentsModule.forRoot(options)` or
 * `PaymentsModule.forRootAsync({ imports, inject, useFactory | useClass | useExisting, isGlobal })`.
 * Options are validated at start-up; a missing or invalid one stops the app with a message
 * naming it (never its value).
 */
@Module({
  imports: [PAYMENTS_EVENTS],
  controllers: [PaymentsWebhookController],
  providers: [
    { provide: PAYMENTS_CLIENT, useFactory: createClient, inject: [PAYMENTS_MODULE_OPTIONS] },
    PaymentsService,
    PaymentsWebhookGuard,
  ],
  exports: [PaymentsService, PAYMENTS_MODULE_OPTIONS],
})
export class PaymentsModule extends PaymentsConfigurableModule {}
