// Public API of the framework-free core. Internal helpers (transport, parsers, DTOs) stay private.
export { PaymentsClient } from './client/payments.client.js';
export type { ReconciliationRun } from './settlement/reconciliation.scheduler.js';
export type {
  CardBinding,
  GenerateOptions,
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
} from './api/payments.types.js';
export {
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
} from './api/payments.errors.js';
export type {
  PaymentsErrorCode,
  PaymentsFieldError,
  PaymentsOperation,
  PaymentsApiErrorDetails,
  PaymentsConnectionErrorDetails,
} from './api/payments.errors.js';
export { toMillimes, fromMillimes } from './api/wire.values.js';
export { PAYMENTS_DEFAULTS } from './client/payments.options.js';
export type {
  PaymentsOptions,
  PaymentFieldDefaults,
  PaymentsWebhookOptions,
  PaymentsHandlersOptions,
} from './client/payments.options.js';
export type { PaymentsReconciliationOptions } from './settlement/reconciliation.options.js';
export { SYSTEM_CLOCK } from './time/time.clock.js';
export type { Clock, ClockTimer } from './time/time.clock.js';
export { PAYMENT_FIELDS, DEFAULT_PRE_AUTHORIZATION_FLAG } from './api/payment.fields.js';
export type {
  PaymentField,
  PaymentFieldName,
  PaymentFieldType,
  PaymentFieldTypes,
  PreAuthorizationFlag,
} from './api/payment.fields.js';
export type { ValueRule } from './api/payment.rules.js';
export { outcomeOf } from './settlement/settlement.decision.js';
export type { PaymentsLogger } from './common/payments.logger.js';
export { STORE_METHODS, ORDER_LEDGER_METHODS, REFUND_LEDGER_METHODS } from './store/store.ports.js';
export type {
  PaymentsStore,
  BindingStore,
  ClaimStore,
  PendingQueue,
  OutcomeLog,
  RateLimiter,
  OrderLedger,
  RefundLedger,
} from './store/store.ports.js';
export {
  OUTCOME_PAGE,
  outcomeCursor,
  parseOutcomeCursor,
  outcomeSortsBefore,
  outcomePageLimit,
} from './store/store.rules.js';
export type {
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
  DuplicateRefund,
  DuplicateRefundState,
  OrderSettlement,
  OrderCheckout,
  CheckoutOpen,
  CheckoutOpening,
  CheckoutSave,
  CheckoutStanding,
  RefundRecord,
  RefundSwap,
  TransactionQuery,
  TransactionRows,
} from './store/store.types.js';
export { BasicPaymentsStore } from './store/store.base.js';
export { queueGenerated, queueRecheck } from './store/pending.generated.js';
export { isTransactional } from './store/store.transaction.js';
export type {
  PaymentsTransaction,
  PaymentsTransactionResult,
  PaymentsTransactionScope,
  PaymentsTransactionWork,
  TransactionalPaymentsStore,
} from './store/store.transaction.js';
export {
  INBOX_COLUMNS,
  INBOX_TABLE,
  inboxColumnType,
  InboxTableMissingError,
  InboxTransactionEndedError,
  inboxDdl,
  sqlInbox,
} from './store/inbox.sql.js';
export type { InboxColumn, InboxDialect, SqlInboxOptions, SqlInboxTransaction } from './store/inbox.sql.js';
export type { InboxEntry, InboxMark, PaymentsInbox, PaymentsInboxTransaction } from './store/store.inbox.js';
export { MemoryPaymentsStore } from './store/memory.store.js';
export type { MemoryPaymentsStoreOptions } from './store/memory.store.js';
export { MemoryRateLimiter } from './store/memory.limiter.js';
export type { MemoryRateLimiterOptions } from './store/memory.limiter.js';
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
} from './settlement/payment.events.js';
export type { PaymentEventName, PaymentEvent, AfterCommitCallback } from './settlement/payment.events.js';
export { WebhookProcessor } from './webhook/webhook.processor.js';
export type { WebhookAnswer, WebhookAnswerBody } from './webhook/webhook.processor.js';
export type {
  WebhookAuthentication,
  WebhookAccepted,
  WebhookRefused,
  AuthenticatedWebhook,
} from './webhook/webhook.processor.js';
// What a front end registers with the core (`client.setHandlers`): a lookup of its handlers.
export type { HandlerLookup, OutcomeHandler, AnyEventHandler } from './settlement/payment.events.js';
export { everyEventTo } from './settlement/payment.events.js';
// For the CLI's `verify`, which prints the service's answer cut of every secret of the variables.
export { SecretRedactor } from './api/secret.redactor.js';
export { countOverdueOutcomes } from './settlement/reconciliation.lanes.js';
export type { WebhookRequest } from './webhook/webhook.payload.js';
export { WEBHOOK_TOKEN_PARAM } from './webhook/webhook.token.js';
export { webhookProbeUrl } from './webhook/webhook.probe.js';
