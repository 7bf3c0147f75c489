/**
 * The sandbox's start options and the choices they take: how it answers, how it sends webhooks,
 * when it rate-limits verify.
 */
import { allowedHostsOf } from './sandbox.exposure.js';
import type { SandboxPaymentIdInUrl } from './sandbox.url.js';

/** Default public key of a sandbox. */
export const SANDBOX_PUBLIC_KEY = 'sandbox_public_key';
/** Default private key of a sandbox: a fixed test key, deliberately not a secret. */
export const SANDBOX_PRIVATE_KEY = 'sandbox_private_key';

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
   *
   * Beyond loopback (a wildcard, a LAN address, a host name) the sandbox refuses to start with
   * the published default `privateKey` (anyone reaching it could create and pay payments), and
   * with a key of your own starts with a warning (see `onWarning`).
   */
  host?: string;
  /**
   * Hosts, besides loopback ones (`localhost`, `127.0.0.0/8`, `::1`), that webhooks may be sent
   * to: host names or IP addresses, without port, compared case-insensitively; `'*'` allows any
   * host. Default `[]`: a webhook to another host is not sent, and its delivery is recorded with
   * an error naming this option. Keeps a reachable sandbox from relaying requests anywhere.
   */
  webhookAllowedHosts?: readonly string[];
  /**
   * Receives the sandbox's warnings (listening beyond loopback). Default: written to stderr.
   */
  onWarning?: (message: string) => void;
  /**
   * Called once for each webhook delivery that no attempt delivered (after the last attempt),
   * with its URL cut before its token. Default: none. The CLI prints one line for each.
   */
  onWebhookFailed?: (failure: SandboxWebhookFailure) => void;
  /**
   * Clock of the sandbox, in epoch milliseconds. Default `() => Date.now()`. Every timestamp
   * the sandbox writes and every session expiry is measured on it, so a test can move time
   * forward instead of waiting.
   */
  now?: () => number;
  /**
   * A file the sandbox keeps its payments and bindings in: read at start (when it exists) and
   * rewritten, atomically, after every change, so a sandbox restarted on the same file still
   * knows the payments taken before (refund, capture and cancel them; verify answers as before).
   * Default: none, the payments live in memory only.
   */
  stateFile?: string;
  /**
   * Total number of webhook delivery attempts per outcome, the first one included (so `1` means
   * no retry). Default `3`. Waits between attempts: 100 ms, then 300 ms, then three times longer.
   */
  webhookAttempts?: number;
  /**
   * @deprecated Use {@link webhookAttempts}: despite its name this always counted total attempts,
   * not retries. Still accepted with that meaning; giving both with different values is an error.
   */
  webhookRetries?: number;
  /** Timeout of each webhook delivery attempt, in ms. Default `5000`. */
  webhookTimeoutMs?: number;
  /**
   * How webhooks are sent. Default `'POST'`, with the JSON body `{"payment_id","status"}`.
   * `'GET'` sends no body and puts `payment_id` and `status` in the query instead (public
   * clients accept both; the real payload is undocumented).
   */
  webhookMethod?: SandboxWebhookMethod;
  /**
   * Whether and how the delivery URL gets `payment_id`. Default `'append'` (`?` or `&`, as the
   * redirects). `'naive'` always adds a second `?`, to test a receiver against a careless service;
   * `'none'` leaves the URL as given. With `webhookMethod: 'GET'` the id can only travel in the
   * URL, so `'none'` is refused there.
   */
  webhookPaymentIdInUrl?: SandboxPaymentIdInUrl;
  /**
   * Shape of a successful `generate_payment` answer. Default `'full'`: the documented
   * `{result:{success,payment_id,link,developer_tracking_id?},name,code,version}`. `'minimal'`:
   * `{result:{payment_id,link}}` only, as two public doc pages show, to prove a client accepts both.
   */
  generateAnswer?: SandboxGenerateAnswer;
  /**
   * Rate limit of `verify_payment`, per payment id, on the sandbox clock. Default: none. Once
   * `max` calls for one payment id were answered within `windowMs`, further calls get 429 with
   * `Retry-After` until the window (which starts at that id's first call) is over. The docs warn
   * that repeated verify calls are rate-limited but give no numbers, so there is no default.
   */
  verifyRateLimit?: SandboxRateLimit | null;
}

/** A webhook delivery that failed; see {@link PaymentsSandboxOptions.onWebhookFailed}. */
export interface SandboxWebhookFailure {
  /** Payment whose webhook was not delivered. */
  readonly paymentId: string;
  /** The webhook URL's origin and path, its last path segment (the token) replaced by `…`, without query. */
  readonly url: string;
  /** Attempts made (`0` when the host is not allowed). */
  readonly attempts: number;
  /** HTTP status of the last answer, when there was one. */
  readonly status?: number;
  /** Why the last attempt got no answer, or why none was made. */
  readonly error?: string;
}

/** A limit of {@link PaymentsSandboxOptions.verifyRateLimit}. */
export interface SandboxRateLimit {
  /** Calls allowed per payment id per window; a positive integer. */
  max: number;
  /** Length of the window in ms, on the sandbox clock; a positive integer. */
  windowMs: number;
}

/** HTTP method of webhook deliveries; see {@link PaymentsSandboxOptions.webhookMethod}. */
export type SandboxWebhookMethod = 'POST' | 'GET';

/** Shape of the `generate_payment` answer; see {@link PaymentsSandboxOptions.generateAnswer}. */
export type SandboxGenerateAnswer = 'full' | 'minimal';

/** A positive integer option, or its default; a TypeError naming it otherwise. */
export function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new TypeError(`PaymentsSandbox: ${name} must be a positive integer`);
  return value;
}

/** One of the allowed values, or the default; a TypeError naming the option otherwise. */
export function oneOf<T extends string>(name: string, value: T | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value))
    throw new TypeError(`PaymentsSandbox: ${name} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  return value;
}

/** Total webhook attempts from `webhookAttempts` or its deprecated alias `webhookRetries`. */
export function webhookAttemptsOf(options: PaymentsSandboxOptions): number {
  const attempts = positiveInteger('webhookAttempts', options.webhookAttempts, 3);
  const legacy = positiveInteger('webhookRetries', options.webhookRetries, attempts);
  if (options.webhookAttempts !== undefined && options.webhookRetries !== undefined && legacy !== attempts) {
    throw new TypeError('PaymentsSandbox: webhookRetries is a deprecated name of webhookAttempts; give one of them');
  }
  return legacy;
}

/** How the sandbox delivers webhooks, resolved from its start options. */
export interface WebhookDeliverySettings {
  /** Total attempts per outcome. */
  attempts: number;
  /** Timeout of one attempt, in ms. */
  timeoutMs: number;
  /** POST with a JSON body, or GET with the query only. */
  method: SandboxWebhookMethod;
  /** How `payment_id` is added to the URL. */
  paymentIdInUrl: SandboxPaymentIdInUrl;
  /** Hosts besides loopback that webhooks may go to (`'*'`: any). */
  allowedHosts: readonly string[];
  /** Told of each delivery no attempt delivered. */
  onFailed?: (failure: SandboxWebhookFailure) => void;
}

/** The webhook delivery settings of a sandbox's options, each checked (TypeError naming it). */
export function webhookDeliveryOf(options: PaymentsSandboxOptions): WebhookDeliverySettings {
  const method = oneOf('webhookMethod', options.webhookMethod, ['POST', 'GET'], 'POST');
  const paymentIdInUrl = oneOf(
    'webhookPaymentIdInUrl',
    options.webhookPaymentIdInUrl,
    ['none', 'append', 'naive'],
    'append',
  );
  if (method === 'GET' && paymentIdInUrl === 'none') {
    throw new TypeError(
      "PaymentsSandbox: webhookMethod 'GET' carries payment_id in the URL only, so webhookPaymentIdInUrl cannot be 'none'",
    );
  }
  return {
    attempts: webhookAttemptsOf(options),
    timeoutMs: positiveInteger('webhookTimeoutMs', options.webhookTimeoutMs, 5000),
    method,
    paymentIdInUrl,
    allowedHosts: allowedHostsOf(options.webhookAllowedHosts),
    ...(options.onWebhookFailed && { onFailed: options.onWebhookFailed }),
  };
}
