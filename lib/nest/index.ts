// Public API of the Nest layer.
export { PaymentsModule } from './payments.module.js';
export type {
  PaymentsModuleOptions,
  PaymentsModuleWebhookOptions,
  PaymentsWebhookRouteOptions,
  PaymentsModuleAsyncOptions,
  PaymentsOptionsFactory,
  PaymentsModuleExtras,
} from './payments.module-options.js';
export {
  PAYMENTS_CLIENT,
  PAYMENTS_MODULE_OPTIONS,
  getPaymentsClientToken,
  getPaymentsOptionsToken,
} from './payments.tokens.js';
export { PaymentsService, getPaymentsServiceToken } from './payments.service.js';
export {
  PaymentsWebhookController,
  PaymentsWebhookGuard,
  PAYMENTS_WEBHOOK_AUTHENTICATION,
} from './webhook.controller.js';
export type { PaymentsWebhookAuthentication } from './webhook.controller.js';
export {
  OnPaymentConfirmed,
  OnPaymentFailed,
  OnPaymentExpired,
  OnPaymentAuthorized,
  OnPaymentDuplicate,
  OnPaymentEvent,
  InjectPaymentsOptions,
  InjectPayments,
  InjectPaymentsClient,
} from './payments.decorators.js';
export type { PaymentEventHandlerOptions } from './payments.decorators.js';
export { transactionHostInbox, type TransactionHostInboxOptions } from './inbox.transaction-host.js';
export { paymentsOptionsFromConfig, PAYMENTS_ENV, type PaymentsConfigSettings } from './payments.config.js';
export type { PaymentsConfigReader } from './payments.config.js';
