// What the other folders of the core, and the plugin's folders outside it, may import from api/
// (the service's wire, fields and rules, errors, types, and the operations' store records).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of api/ to this file.
// The card on a platform's payment (Vendure's `metadata.public`, Medusa's `data`), from verify's details.
export { cardDetailsOf } from './card.details.js';
export type { CardDetails } from './card.details.js';
export { HttpTransport } from './http.transport.js';
export { fromMillimes, normalizeMillimes, pathSegmentId } from './wire.values.js';
// The per-order hook of Vendure's and Medusa's `paymentRequest` option, kept to the fields a platform may set.
export { adjustedPaymentRequest } from './payment.adjust.js';
export type { PaymentRequestAdjustments } from './payment.adjust.js';
export {
  DEFAULT_PRE_AUTHORIZATION_FLAG,
  OPTION_DEFAULTED_FIELDS,
  optionFieldType,
  ruleOf,
  serviceDefaultOf,
} from './payment.fields.js';
export { checkPaymentInput, toPaymentWire } from './payment.fields.js';
export type { OptionDefaultedFieldName, OptionDefaultedFieldType, PreAuthorizationFlag } from './payment.fields.js';
export {
  boolean,
  httpUrl,
  identifier,
  integerBetween,
  matches,
  millimes,
  minLength,
  oneOf,
  positiveInteger,
} from './payment.rules.js';
export type { ValueRule } from './payment.rules.js';
export { bounded, CheckoutDesk } from './payments.checkout.js';
export type { CheckoutTicket } from './payments.checkout.js';
export { captureRefusal, noteDuplicateRefund } from './payments.duplicates.js';
// isCancelled: Vendure's cancelPayment finds a release an earlier call made, and sends none again.
export { isCancelled, noteCancellation } from './payments.cancellations.js';
export {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsRateLimitedError,
  PaymentsStoreUnavailableError,
  PaymentsValidationError,
  RefundNotAllowedError,
} from './payments.errors.js';
export type { PaymentsFieldError, PaymentsOperation } from './payments.errors.js';
export { lateEntry, PaymentRecorder } from './payments.recorder.js';
export type {
  CardBinding,
  GeneratedPayment,
  GenerateOptions,
  GeneratePaymentInput,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  PaymentsOperations,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
} from './payments.types.js';
export { RETRY_POLICY } from './http.transport.js';
export { callService, checkId, isFlatSuccess, ServiceCalls, unexpected } from './service.calls.js';
export type { CallObserver, PaymentRefunder, PaymentVerifier, ServiceRequest } from './service.calls.js';
export {
  fromBindingWire,
  fromCancellationWire,
  fromCaptureWire,
  fromGeneratePaymentWire,
  fromRefundWire,
  fromVerifyWire,
  interpretResponse,
  SERVICE_PATHS,
} from './wire.mapper.js';
export { isJsonObject } from './wire.values.js';
export type { JsonObject } from './wire.values.js';
