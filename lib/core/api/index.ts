// What the other folders of the core, and the plugin's folders outside it, may import from api/
// (the service's wire, fields and rules, errors, types, and the operations' store records).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of api/ to this file.
export { HttpTransport } from './http.transport.js';
export { pathSegmentId } from './identifier.rule.js';
export { isJsonObject } from './json.util.js';
export type { JsonObject } from './json.util.js';
export { normalizeMillimes } from './money.util.js';
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
export { bounded, CheckoutDesk, checkoutKey, orderLedgerKey } from './payments.checkout.js';
export type { CheckoutTicket } from './payments.checkout.js';
export { captureRefusal, noteDuplicateRefund } from './payments.duplicates.js';
export { noteCancellation } from './payments.cancellations.js';
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
export { interpretResponse } from './response.parser.js';
export { RETRY_POLICY } from './retry.policy.js';
export {
  fromBindingWire,
  fromCancellationWire,
  fromCaptureWire,
  fromGeneratePaymentWire,
  fromRefundWire,
  fromVerifyWire,
  SERVICE_PATHS,
} from './wire.mapper.js';
