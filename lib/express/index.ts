// Public API of `nestjs-payments/express`: the client and webhook router for apps without Nest.
export { createPaymentsClient } from './payments-client.factory.js';
export { createWebhookRouter } from './webhook.router.js';
export type { WebhookRouterOptions } from './webhook.router.js';
export { PaymentsClient } from '../core/payments.client.js';
export { PaymentEvents, PaymentConfirmedEvent } from '../core/payment.events.js';
export * from '../core/payments.errors.js';
export type { PaymentsOptions } from '../core/payments.options.js';
export { toMillimes, fromMillimes } from '../core/money.util.js';
