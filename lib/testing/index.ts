/**
 * `nestjs-payments/testing`: the payment service sandbox, an in-process emulator of the whole
 * service (API, checkout page, webhooks) for tests and local development.
 */
export { PaymentsSandbox } from './sandbox.server.js';
export { SANDBOX_PRIVATE_KEY, SANDBOX_PUBLIC_KEY } from './sandbox.options.js';
export { SandboxWebhookError } from './sandbox.errors.js';
export { SANDBOX_VERIFY_STATUSES } from './sandbox.status.js';
export type {
  PaymentsSandboxOptions,
  SandboxDestination,
  SandboxGenerateAnswer,
  SandboxPaymentIdInUrl,
  SandboxRateLimit,
  SandboxSettleOptions,
  SandboxVerifyStatus,
  SandboxWebhookMethod,
  SandboxBinding,
  SandboxBindingInput,
  SandboxBindingStatus,
  SandboxClientOptions,
  SandboxDelivery,
  SandboxFault,
  SandboxPayment,
  SandboxPaymentKind,
  SandboxPaymentState,
  SandboxPreauthorizationInput,
  SandboxRequest,
  SandboxSettlement,
  SandboxWebhookFailure,
  SandboxWebhookOutcome,
} from './sandbox.types.js';
