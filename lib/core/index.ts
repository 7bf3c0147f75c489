// Public API of the framework-free core. Internal helpers (transport, parsers, DTOs) stay private.
export { PaymentsClient } from './payments.client.js';
export type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentRefund,
  PaymentsOperations,
} from './payments.types.js';
export {
  PaymentsError,
  PaymentsValidationError,
  PaymentsApiError,
  RefundNotAllowedError,
  CancellationFailedError,
  InvalidClientIdError,
  PaymentsAuthenticationError,
  PaymentsConnectionError,
} from './payments.errors.js';
export type { PaymentsErrorCode, PaymentsFieldError, PaymentsOperation, PaymentsApiErrorDetails, PaymentsConnectionErrorDetails } from './payments.errors.js';
export { toMillimes, fromMillimes } from './money.util.js';
export { PAYMENTS_DEFAULTS, resolvePaymentsOptions } from './payments.options.js';
export type { PaymentsOptions, PaymentsWebhookOptions, ResolvedPaymentsOptions, ResolvedWebhookOptions } from './payments.options.js';
export type { PaymentsLogger } from './payments.logger.js';
export type { PaymentsStore, PaymentBinding, ClaimOutcome } from './payments.store.js';
export { MemoryPaymentsStore } from './memory.store.js';
export type { MemoryPaymentsStoreOptions } from './memory.store.js';
export { PaymentEvents, PaymentConfirmedEvent, PaymentRefundedEvent, PaymentCancelledEvent } from './payment.events.js';
export type { PaymentEventName } from './payment.events.js';
export { WebhookProcessor } from './webhook.processor.js';
export type { WebhookAnswer, WebhookAuthentication, ConfirmationDispatcher } from './webhook.processor.js';
export type { WebhookRequest } from './webhook.payload.js';
export { WEBHOOK_TOKEN_PARAM } from './webhook.token.js';
