// Public API of `nestjs-payments/express`: the client and webhook router for apps without Nest.
export { createPaymentsClient } from './payments-client.factory.js';
export { createWebhookRouter } from './webhook.router.js';
export type { WebhookRouterOptions } from './webhook.router.js';
export { PaymentsClient } from '../core/client/payments.client.js';
export {
  PaymentEvents,
  PaymentOutcomeEvent,
  PaymentConfirmedEvent,
  PaymentFailedEvent,
  PaymentExpiredEvent,
  PaymentAuthorizedEvent,
  PaymentMismatchEvent,
  PaymentDuplicateEvent,
  PaymentCapturedEvent,
  PaymentRefundedEvent,
  PaymentCancelledEvent,
} from '../core/settlement/payment.events.js';
export type {
  GenerateOptions,
  GeneratePaymentInput,
  GeneratedPayment,
  VerifiedPayment,
  PaymentCapture,
  ReconcileResult,
  ReconcileOptions,
} from '../core/api/payments.types.js';
export type { OutcomeRecord, OutcomePage, OutcomeQuery, PaymentOutcome } from '../core/store/store.types.js';
export type { PaymentsStore } from '../core/store/store.ports.js';
export * from '../core/api/payments.errors.js';
export type { PaymentsOptions } from '../core/client/payments.options.js';
export { toMillimes, fromMillimes } from '../core/api/money.util.js';
