/**
 * Public shapes of the sandbox: start options, the read-only snapshots it hands to tests, and
 * its logs. Kept apart from the implementation so the barrel can export types without code.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { SandboxWebhookMethod } from './sandbox.options.js';
import type { SandboxPaymentState, SandboxVerifyStatus } from './sandbox.status.js';
export type { SandboxPaymentState } from './sandbox.status.js';

export type { SandboxVerifyStatus } from './sandbox.status.js';
export type { SandboxPaymentIdInUrl } from './sandbox.url.js';
export type {
  PaymentsSandboxOptions,
  SandboxRateLimit,
  SandboxWebhookMethod,
  SandboxGenerateAnswer,
  SandboxWebhookFailure,
} from './sandbox.options.js';

/**
 * Kind of payment: a standard one, or a pre-authorization (made with `generate_payment` and
 * `pre_auth` / `pre_authorization: true`, or directly with `createPreauthorizedPayment`): paying
 * it holds the amount (`preauthorized`) until confirm_payment captures it or cancel_payment releases it.
 */
export type SandboxPaymentKind = 'standard' | 'preauthorized';

/** One share of a split payment, exactly as sent in `destination` (and echoed by verify). */
export interface SandboxDestination {
  /** Share in millimes, a positive JSON integer. */
  readonly amount: number;
  /** Receiving merchant's id. */
  readonly destination: string;
}

/** Read-only snapshot of a payment as the sandbox stores it (camelCase; not a wire shape). */
export interface SandboxPayment {
  /** Identifier: `pay_` followed by 24 hex characters. */
  readonly paymentId: string;
  /** How the payment was made. */
  readonly kind: SandboxPaymentKind;
  /** Current state, with session expiry already applied. */
  readonly state: SandboxPaymentState;
  /** Amount in millimes (held amount for a pre-authorization), digits without leading zeros. */
  readonly amount: string;
  /** Merchant's tracking id, when one was given. */
  readonly developerTrackingId?: string;
  /** Customer id (`client_id`), when one was given: paying creates a binding for it. */
  readonly clientId?: string;
  /** Split of the amount (`destination`), when one was given. */
  readonly destinations?: readonly SandboxDestination[];
  /** Redirect target after success (payments made with `generate_payment`). */
  readonly successLink?: string;
  /** Redirect target after failure (payments made with `generate_payment`). */
  readonly failLink?: string;
  /** Webhook URL, exactly as received. */
  readonly webhook?: string;
  /** Image URL, when one was given. The checkout page does not load it (no external assets). */
  readonly imageUrl?: string;
  /** Whether card payments are accepted. Default false, as the service's. */
  readonly acceptCard: boolean;
  /** Session timeout in seconds. Default 1200, as the service's. */
  readonly sessionTimeoutSecs: number;
  /** Checkout link (payments made with `generate_payment`). */
  readonly link?: string;
  /** The service's order number, shown in verify `result.details.order_number`. */
  readonly orderNumber: string;
  /** ISO 8601 UTC creation time, on the sandbox clock. */
  readonly createdAt: string;
  /** ISO 8601 UTC time at which a pending payment expires (payments made with `generate_payment`). */
  readonly expiresAt?: string;
  /** ISO 8601 UTC time of payment (for a pre-authorization: when the amount was held). */
  readonly paidAt?: string;
  /** Approval code of the card payment, six digits, once paid. */
  readonly approvalCode?: string;
  /** Id of the binding created by paying, when the payment had a `client_id`. */
  readonly bindingId?: string;
  /** ISO 8601 UTC time of the decline. */
  readonly failedAt?: string;
  /** ISO 8601 UTC time at which the session ended unpaid (set by `expirePayment` or the clock). */
  readonly expiredAt?: string;
  /** ISO 8601 UTC time of the refund. */
  readonly refundedAt?: string;
  /** Identifier of the refund: `ref_` followed by 24 hex characters. */
  readonly refundId?: string;
  /** ISO 8601 UTC time of the cancellation. */
  readonly cancelledAt?: string;
  /** Captured millimes of a pre-authorization (at most `amount`; the rest was released). */
  readonly capturedAmount?: string;
  /** ISO 8601 UTC time of the capture. */
  readonly capturedAt?: string;
}

/** Status of a card binding. The spec shows only `active`; others are allowed for tests. */
export type SandboxBindingStatus = 'active' | (string & {});

/** A card binding, in the wire's snake_case: exactly what `bindings/list` returns. */
export interface SandboxBinding {
  /** Identifier, a random UUID. */
  readonly binding_id: string;
  /** The merchant's identifier of the customer. */
  readonly client_id: string;
  /** Last four digits of the card. */
  readonly card_last_four: string;
  /** Card network name. */
  readonly card_brand: string;
  /** Binding status. */
  readonly status: SandboxBindingStatus;
  /** ISO 8601 UTC creation time, on the sandbox clock. */
  readonly created_at: string;
}

/** Input of {@link PaymentsSandbox.addBinding}. */
export interface SandboxBindingInput {
  /** Customer identifier, as `bindings/list` will be queried with. */
  clientId: string;
  /** Last four digits of the card. */
  cardLastFour: string;
  /** Card network name, e.g. `'VISA'`. */
  cardBrand: string;
  /** Binding status. Default `'active'`. */
  status?: SandboxBindingStatus;
}

/** Input of {@link PaymentsSandbox.createPreauthorizedPayment}: a pre-authorization already held. */
export interface SandboxPreauthorizationInput {
  /** Amount in millimes: a string of ASCII digits (or a safe integer), greater than zero. */
  amount: string | number;
  /** Merchant's tracking id. Default: none. */
  developerTrackingId?: string;
  /** Customer identifier. Default: none. With one, a binding is created, as for a paid payment. */
  clientId?: string;
}

/** One request received under `/api/v2/`, as it arrived. */
export interface SandboxRequest {
  /** HTTP method, e.g. `'POST'`. */
  readonly method: string;
  /** Path without the query string, e.g. `'/api/v2/generate_payment'`. */
  readonly path: string;
  /** Query parameters; a name repeated in the URL maps to an array. */
  readonly query: Readonly<Record<string, string | string[]>>;
  /** The raw request target, path and query string as sent. */
  readonly url: string;
  /**
   * Headers, names in lower case (Node's `IncomingHttpHeaders`). `authorization` keeps only the
   * scheme and public key (`'Bearer pk:[redacted]'`, or `'[redacted]'` when malformed), so the log
   * can be printed in a failing test without leaking a key.
   */
  readonly headers: IncomingHttpHeaders;
  /** Whether `Authorization` was exactly the one the sandbox accepts. */
  readonly authorized: boolean;
  /** Raw body as UTF-8 text; `''` when empty or over the 1 MiB limit. */
  readonly body: string;
}

/** One webhook delivery attempt. */
export interface SandboxDelivery {
  /** Payment whose webhook is delivered. */
  readonly paymentId: string;
  /** Outcome delivered: the payment's verify status at that moment. */
  readonly paymentStatus: SandboxVerifyStatus;
  /** HTTP method used (see `webhookMethod`). */
  readonly method: SandboxWebhookMethod;
  /** URL requested: the payment's `webhook` with the query added per `webhookPaymentIdInUrl` / `webhookMethod`. */
  readonly url: string;
  /** Attempt number, from 1. */
  readonly attempt: number;
  /** HTTP status of the receiver's answer; absent when there was none. */
  readonly status?: number;
  /** Why there was no answer (network error, timeout, sandbox closed). */
  readonly error?: string;
  /** The exact body sent; `''` for GET. */
  readonly payload: string;
}

/** Outcome of the webhook delivery of one payment outcome. */
export interface SandboxWebhookOutcome {
  /** HTTP status of the last attempt's answer; `0` when the last attempt got none. */
  readonly status: number;
  /** Number of attempts made. */
  readonly attempts: number;
  /** Whether an attempt got a 2xx answer. */
  readonly delivered: boolean;
  /** Error of the last attempt, when it got no answer. */
  readonly error?: string;
}

/**
 * Result of {@link PaymentsSandbox.completePayment}, {@link PaymentsSandbox.failPayment} and
 * {@link PaymentsSandbox.expirePayment}. The flat fields answer "did the shop hear about it?"
 * without digging into `webhook`.
 */
export interface SandboxSettlement {
  /** The payment after the state change. */
  readonly payment: SandboxPayment;
  /** What verify_payment now answers for it (and what the webhook carried). */
  readonly status: SandboxVerifyStatus;
  /** Whether a webhook attempt got a 2xx answer; false when nothing was sent. */
  readonly delivered: boolean;
  /** Webhook attempts made; `0` when the payment has no webhook URL or the outcome sends none. */
  readonly attempts: number;
  /** HTTP status of the last attempt's answer, when it got one. */
  readonly lastStatus?: number;
  /** Delivery details; absent when nothing was sent. */
  readonly webhook?: SandboxWebhookOutcome;
}

/** Options of {@link PaymentsSandbox.completePayment} and {@link PaymentsSandbox.failPayment}. */
export interface SandboxSettleOptions {
  /**
   * Reject with `SandboxWebhookError` when the payment has a webhook URL and no attempt got a
   * 2xx answer. Default `true`: a test that settles a payment almost always means "and the shop
   * heard about it"; pass `false` to test the shop's behaviour without the webhook.
   */
  requireDelivery?: boolean;
}

/** A fault to inject on one path; see {@link PaymentsSandbox.fault}. */
export interface SandboxFault {
  /** Answer this HTTP status instead of handling the request. Default 200 when only `body` is set. */
  status?: number;
  /** Raw body of the faulty answer. Default `''`. */
  body?: string;
  /** Wait this many ms first, then handle the request normally (or apply the rest of the fault). */
  delayMs?: number;
  /** Destroy the connection without answering (the client sees a reset / socket hang up). */
  reset?: boolean;
  /** Apply the fault this many times, then clear it. Default: until cleared. */
  times?: number;
  /** Content-Type of the faulty answer. Default `application/json` when `body` parses as JSON, else `text/html`. */
  contentType?: string;
}

/** Plugin options pointing at a sandbox; see {@link PaymentsSandbox.options}. */
export interface SandboxClientOptions {
  /** The sandbox's public key. */
  publicKey: string;
  /** The sandbox's private key (a test key). */
  privateKey: string;
  /** The sandbox's URL. */
  baseUrl: string;
  /** The sandbox's own success page. */
  successLink: string;
  /** The sandbox's own failure page. */
  failLink: string;
}
