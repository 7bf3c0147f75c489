// Public API of the framework-free core. Internal helpers (transport, parsers, DTOs) stay private.
export { PaymentsClient } from './payments.client.js';
export type { ReconciliationRun } from './reconciliation.scheduler.js';
export type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  KnownPaymentStatus,
  PaymentCancellation,
  PaymentCapture,
  PaymentDestination,
  PaymentRefund,
  PaymentsOperations,
  ReconcileExpectation,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
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
  PaymentsStoreUnavailableError,
} from './payments.errors.js';
export type { PaymentsErrorCode, PaymentsFieldError, PaymentsOperation, PaymentsApiErrorDetails, PaymentsConnectionErrorDetails } from './payments.errors.js';
export { toMillimes, fromMillimes } from './money.util.js';
export { PAYMENTS_DEFAULTS } from './payments.options.js';
export type { PaymentsOptions, PaymentFieldDefaults, PaymentsWebhookOptions, PaymentsReconciliationOptions } from './payments.options.js';
export { PAYMENT_FIELDS, DEFAULT_PRE_AUTHORIZATION_FLAG } from './payment.fields.js';
export type { PaymentField, PaymentFieldName, PaymentFieldType, PaymentFieldTypes, PreAuthorizationFlag } from './payment.fields.js';
export type { ValueRule } from './payment.rules.js';
export { outcomeOf } from './payment.outcome.js';
export type { PaymentsLogger } from './payments.logger.js';
export { STORE_METHODS, OUTCOME_PAGE, outcomeCursor, parseOutcomeCursor, outcomeSortsBefore, outcomePageLimit } from './payments.store.js';
export type {
  PaymentsStore,
  PaymentBinding,
  PendingPayment,
  ClaimOutcome,
  PaymentOutcome,
  OutcomeSource,
  HandlerResult,
  OutcomeRecord,
  OutcomeQuery,
  OutcomePage,
  BindingClaim,
  OutcomeFinish,
} from './payments.store.js';
export { MemoryPaymentsStore } from './memory.store.js';
export type { MemoryPaymentsStoreOptions } from './memory.store.js';
export {
  PaymentEvents,
  PaymentOutcomeEvent,
  PaymentConfirmedEvent,
  PaymentFailedEvent,
  PaymentExpiredEvent,
  PaymentAuthorizedEvent,
  PaymentMismatchEvent,
  PaymentCapturedEvent,
  PaymentRefundedEvent,
  PaymentCancelledEvent,
} from './payment.events.js';
export type { PaymentEventName } from './payment.events.js';
export { WebhookProcessor } from './webhook.processor.js';
export type {
  WebhookAnswer,
  WebhookAnswerBody,
  WebhookAuthentication,
  WebhookAuthenticateOptions,
  WebhookAccepted,
  WebhookRefused,
  AuthenticatedWebhook,
} from './webhook.processor.js';
export type { OutcomeDispatcher } from './outcome.processor.js';
export type { WebhookRequest } from './webhook.payload.js';
export { WEBHOOK_TOKEN_PARAM } from './webhook.token.js';
export { webhookProbeUrl } from './webhook.probe.js';
