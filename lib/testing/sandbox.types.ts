/**
 * Public shapes of the sandbox: start options, the read-only snapshots it hands to tests, and
 * its logs. Kept apart from the implementation so the barrel can export types without code.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Options of {@link PaymentsSandbox.start}. Every field is optional. */
export interface PaymentsSandboxOptions {
  /** Public key the sandbox expects in `Authorization`. Default `'sandbox_public_key'`. */
  publicKey?: string;
  /** Private key the sandbox expects in `Authorization`. Default `'sandbox_private_key'` (a test key, not a secret). */
  privateKey?: string;
  /** TCP port to listen on. Default `0`: a free port chosen by the OS (read it from `url`). */
  port?: number;
  /**
   * Address to listen on. Default `'127.0.0.1'`, so the sandbox is not reachable from other
   * machines unless asked. A wildcard (`'0.0.0.0'`, `'::'`) listens everywhere, but `url`
   * then names the loopback address, since a wildcard is not something a client can dial.
   */
  host?: string;
  /**
   * Clock of the sandbox, in epoch milliseconds. Default `() => Date.now()`. Every timestamp
   * the sandbox writes and every session expiry is measured on it, so a test can move time
   * forward instead of waiting.
   */
  now?: () => number;
  /**
   * Total number of webhook delivery attempts per confirmation (first try included).
   * Default `3`. Waits between attempts: 100 ms, then 300 ms, then three times longer each time.
   */
  webhookRetries?: number;
  /** Timeout of each webhook delivery attempt, in ms. Default `5000`. */
  webhookTimeoutMs?: number;
}

/**
 * States of a sandbox payment. The spec names only "completed" (here `paid`), "pre-authorized"
 * and "cancelled"; the sandbox adds `pending` (created, not yet paid), `failed` (customer
 * declined), `expired` (session timed out) and `refunded` (the spec does not show the state
 * after a refund; the sandbox picks a distinct one so a second refund is refused).
 */
export type SandboxPaymentState = 'pending' | 'paid' | 'failed' | 'expired' | 'refunded' | 'preauthorized' | 'cancelled';

/** Kind of payment: one made through `generate_payment`, or a test-made pre-authorization. */
export type SandboxPaymentKind = 'standard' | 'preauthorized';

/** Read-only snapshot of a payment as the sandbox stores it (camelCase; not a wire shape). */
export interface SandboxPayment {
  /** Identifier: `pay_` followed by 24 hex characters. */
  readonly paymentId: string;
  /** How the payment was made. */
  readonly kind: SandboxPaymentKind;
  /** Current state, with session expiry already applied. */
  readonly state: SandboxPaymentState;
  /** Amount in millimes, a string of digits without leading zeros. */
  readonly amount: string;
  /** Merchant's tracking id, when one was given. */
  readonly developerTrackingId?: string;
  /** Customer id, for pre-authorized payments made with one. */
  readonly clientId?: string;
  /** Redirect target after success (standard payments only). */
  readonly successLink?: string;
  /** Redirect target after failure (standard payments only). */
  readonly failLink?: string;
  /** Confirmation URL, exactly as received. */
  readonly webhook?: string;
  /** Image URL, when one was given. The checkout page does not load it (no external assets). */
  readonly imageUrl?: string;
  /** Whether card payments are accepted. Default false, as in the spec. */
  readonly acceptCard: boolean;
  /** Session timeout in seconds. Default 1200, as in the spec. */
  readonly sessionTimeoutSecs: number;
  /** Checkout link (standard payments only). */
  readonly link?: string;
  /** ISO 8601 UTC creation time, on the sandbox clock. */
  readonly createdAt: string;
  /** ISO 8601 UTC time at which a pending payment expires (standard payments only). */
  readonly expiresAt?: string;
  /** ISO 8601 UTC time of payment. */
  readonly paidAt?: string;
  /** ISO 8601 UTC time of the decline. */
  readonly failedAt?: string;
  /** ISO 8601 UTC time of the refund. */
  readonly refundedAt?: string;
  /** Identifier of the refund: `ref_` followed by 24 hex characters. */
  readonly refundId?: string;
  /** ISO 8601 UTC time of the cancellation. */
  readonly cancelledAt?: string;
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

/** Input of {@link PaymentsSandbox.createPreauthorizedPayment}. */
export interface SandboxPreauthorizationInput {
  /** Amount in millimes: a string of ASCII digits, greater than zero. */
  amount: string;
  /** Merchant's tracking id. Default: none. */
  developerTrackingId?: string;
  /** Customer identifier. Default: none. */
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
  /** Headers, names in lower case (Node's `IncomingHttpHeaders`). */
  readonly headers: IncomingHttpHeaders;
  /** Raw body as UTF-8 text; `''` when empty or over the 1 MiB limit. */
  readonly body: string;
}

/** One webhook delivery attempt. */
export interface SandboxDelivery {
  /** Payment being confirmed. */
  readonly paymentId: string;
  /** URL posted to, exactly the payment's `webhook`. */
  readonly url: string;
  /** Attempt number, from 1. */
  readonly attempt: number;
  /** HTTP status of the receiver's answer; absent when there was none. */
  readonly status?: number;
  /** Why there was no answer (network error, timeout, sandbox closed). */
  readonly error?: string;
  /** The exact JSON body sent. */
  readonly payload: string;
}

/** Outcome of the webhook delivery of one confirmation. */
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

/** Result of {@link PaymentsSandbox.completePayment} and {@link PaymentsSandbox.failPayment}. */
export interface SandboxSettlement {
  /** The payment after the state change. */
  readonly payment: SandboxPayment;
  /** Delivery outcome; absent when the payment has no webhook URL. */
  readonly webhook?: SandboxWebhookOutcome;
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
