/**
 * `nestjs-payments/express`: the client and webhook router for apps without Nest.
 *
 * An Express app cannot load the main entry (it loads Nest), so this entry also carries the
 * framework-free names such an app writes: the client and its options, the results of its
 * operations, the outcome events its router callbacks receive, the errors to test with
 * `instanceof`, and money. Nest-only names (the module, decorators, `PaymentEvents`) are not here;
 * store authors' names are in `nestjs-payments/store`.
 */
export { createPaymentsClient } from './payments-client.factory.js';
export { createWebhookRouter } from './webhook.router.js';
export type { WebhookRouterOptions } from './webhook.router.js';
export {
  PaymentsClient,
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
  PaymentsError,
  PaymentsValidationError,
  PaymentsApiError,
  RefundNotAllowedError,
  CancellationFailedError,
  InvalidClientIdError,
  PaymentsAuthenticationError,
  PaymentsConnectionError,
  PaymentsRateLimitedError,
  PaymentsStoreUnavailableError,
  toMillimes,
  fromMillimes,
} from '../core/index.js';
// The webhook engine behind the router (`client.webhooks`), for a host that serves the route its own way.
export { WebhookProcessor } from '../core/index.js';
export type {
  WebhookAuthentication,
  WebhookAccepted,
  WebhookRefused,
  AuthenticatedWebhook,
  WebhookAnswer,
  WebhookAnswerBody,
  WebhookRequest,
} from '../core/index.js';
export type {
  PaymentsOptions,
  PaymentsWebhookOptions,
  PaymentsReconciliationOptions,
  PaymentsHandlersOptions,
  PaymentFieldDefaults,
  PaymentsLogger,
  PaymentsErrorCode,
  PaymentEventName,
  PaymentsFieldError,
  GeneratePaymentInput,
  GeneratedPayment,
  VerifiedPayment,
  PaymentCapture,
  PaymentRefund,
  PaymentCancellation,
  CardBinding,
  ReconcileResult,
  OutcomeRecord,
  PaymentsOperations,
  PaymentsOperation,
  PaymentDestination,
  PreAuthorizationFlag,
  KnownPaymentStatus,
  ReconciliationRun,
  PaymentsApiErrorDetails,
  PaymentsConnectionErrorDetails,
  AfterCommitCallback,
  GenerateOptions,
  ReconcileOptions,
  ReconcileExpectation,
} from '../core/index.js';
