// The package's main entry (`nestjs-payments`): what a merchant's Nest app writes. The Nest module
// and its decorators, the payment operations' results, the outcome events, the errors and money.
// Other subpaths: `nestjs-payments/express` (apps without Nest), `nestjs-payments/store` (store
// authors), `nestjs-payments/redis`, `nestjs-payments/postgres`, `nestjs-payments/testing`,
// `nestjs-payments/terminus`, `nestjs-payments/vendure`, `nestjs-payments/medusa`.
// It carries every type a `PaymentsService` method takes or returns, so a merchant's code names them
// from here. Every name here is a decision: api/index.api.md lists them and
// test/package/api-report.spec.ts holds this entry to at most 70.
import 'reflect-metadata';
export {
  PaymentsModule,
  PaymentsService,
  PaymentsWebhookController,
  PaymentsWebhookGuard,
  InjectPayments,
  InjectPaymentsOptions,
  getPaymentsServiceToken,
  InjectPaymentsClient,
  PAYMENTS_WEBHOOK_AUTHENTICATION,
  OnPaymentConfirmed,
  OnPaymentFailed,
  OnPaymentExpired,
  OnPaymentAuthorized,
  OnPaymentDuplicate,
  OnPaymentEvent,
  paymentsOptionsFromConfig,
  PAYMENTS_ENV,
  transactionHostInbox,
} from './nest/index.js';
export type {
  PaymentsModuleOptions,
  PaymentsModuleAsyncOptions,
  PaymentsOptionsFactory,
  PaymentsModuleWebhookOptions,
  PaymentsWebhookRouteOptions,
  PaymentsModuleExtras,
  PaymentEventHandlerOptions,
  PaymentsConfigSettings,
  PaymentsConfigReader,
  TransactionHostInboxOptions,
} from './nest/index.js';
export {
  PaymentsClient,
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
} from './core/index.js';
export type {
  GeneratePaymentInput,
  GeneratedPayment,
  VerifiedPayment,
  PaymentCapture,
  PaymentRefund,
  PaymentCancellation,
  CardBinding,
  ReconcileResult,
  GenerateOptions,
  ReconcileOptions,
  ReconciliationRun,
  OutcomeRecord,
  OutcomePage,
  OutcomeQuery,
  PaymentOutcome,
  PaymentsLogger,
} from './core/index.js';
// The names of the plugin's spans and metrics, for dashboards and alerts written in code.
export { SPAN_NAMES, METRIC_NAMES } from './core/telemetry/telemetry.names.js';
