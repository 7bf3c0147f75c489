// Public API of the Nest layer.
export { PaymentsModule } from './payments.module.js';
export { PAYMENTS_MODULE_OPTIONS } from './payments.module-definition.js';
export type { PaymentsModuleOptions, PaymentsOptionsFactory, PaymentsModuleExtras } from './payments.module-definition.js';
export { PaymentsService } from './payments.service.js';
export { PaymentsWebhookController } from './webhook.controller.js';
export { PaymentsWebhookGuard } from './webhook.guard.js';
export { OnPaymentConfirmed, OnPaymentEvent, InjectPaymentsOptions } from './payments.decorators.js';
export type { PaymentEventHandlerOptions } from './payments.decorators.js';
export { paymentsOptionsFromConfig, PAYMENTS_ENV } from './payments.config.js';
export type { PaymentsConfigReader } from './payments.config.js';
