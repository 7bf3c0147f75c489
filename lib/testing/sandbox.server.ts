/**
 * `PaymentsSandbox`: an in-process HTTP emulator of the whole payment service (API, checkout
 * page, webhooks), for tests and local development. Node built-ins only, so it runs wherever
 * the plugin does and needs no network access.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { handleApiRequest } from './sandbox.api.js';
import { handleCheckoutRequest, type SettleOutcome } from './sandbox.checkout.js';
import { SandboxWebhookError } from './sandbox.errors.js';
import { applyFault, SandboxFaults } from './sandbox.faults.js';
import { indexPage, messagePage, PAGE_SECURITY_HEADERS } from './sandbox.html.js';
import { readBody, send, sendHtml, sendJson } from './sandbox.http.js';
import { validateRateLimit, VerifyLimiter } from './sandbox.ratelimit.js';
import { SandboxState, type Settlement } from './sandbox.state.js';
import { isWebhookStatus, verifyStatusOf } from './sandbox.status.js';
import type {
  PaymentsSandboxOptions,
  SandboxBinding,
  SandboxBindingInput,
  SandboxClientOptions,
  SandboxDelivery,
  SandboxFault,
  SandboxGenerateAnswer,
  SandboxPayment,
  SandboxPreauthorizationInput,
  SandboxRateLimit,
  SandboxRequest,
  SandboxSettleOptions,
  SandboxSettlement,
  SandboxWebhookMethod,
} from './sandbox.types.js';
import type { SandboxPaymentIdInUrl } from './sandbox.url.js';
import { isValidClientId, parseMillimes } from './sandbox.validation.js';
import { deliverWebhook } from './sandbox.webhook.js';

/** Default public key of a sandbox. */
export const SANDBOX_PUBLIC_KEY = 'sandbox_public_key';
/** Default private key of a sandbox: a fixed test key, deliberately not a secret. */
export const SANDBOX_PRIVATE_KEY = 'sandbox_private_key';
/** Path of the sandbox's own success page, the default `successLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_SUCCESS_PATH = '/sandbox/success';
/** Path of the sandbox's own failure page, the default `failLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_FAIL_PATH = '/sandbox/fail';

const API_PREFIX = '/api/v2';

function isApiPath(pathname: string): boolean {
  return pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`);
}

/** The host part of a URL for a listening address; wildcards become loopback, which a client can dial. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? values[0] : values;
  }
  return query;
}

/**
 * The `Authorization` value as the request log keeps it: scheme and public key, never what follows
 * the colon (the private key, right or wrong), so a log printed in a failing test leaks nothing.
 */
export function redactAuthorization(value: string): string {
  const prefix = /^\S+ [^:]*:/.exec(value)?.[0];
  return prefix === undefined ? '[redacted]' : `${prefix}[redacted]`;
}

function loggedHeaders(headers: IncomingMessage['headers']): IncomingMessage['headers'] {
  const copy = { ...headers };
  if (typeof copy.authorization === 'string') copy.authorization = redactAuthorization(copy.authorization);
  return Object.freeze(copy);
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`PaymentsSandbox: ${name} must be a positive integer`);
  return value;
}

function oneOf<T extends string>(name: string, value: T | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value)) throw new TypeError(`PaymentsSandbox: ${name} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  return value;
}

/** Total webhook attempts from `webhookAttempts` or its deprecated alias `webhookRetries`. */
function webhookAttemptsOf(options: PaymentsSandboxOptions): number {
  const attempts = positiveInteger('webhookAttempts', options.webhookAttempts, 3);
  const legacy = positiveInteger('webhookRetries', options.webhookRetries, attempts);
  if (options.webhookAttempts !== undefined && options.webhookRetries !== undefined && legacy !== attempts) {
    throw new TypeError('PaymentsSandbox: webhookRetries is a deprecated name of webhookAttempts; give one of them');
  }
  return legacy;
}

/** The favicon browsers ask for before reading the page's `<link rel="icon">`: nothing, but no 404. */
const FAVICON_PATH = '/favicon.ico';

/**
 * A running emulator of the payment service. Start one with {@link PaymentsSandbox.start},
 * point the plugin at it with {@link PaymentsSandbox.options}, and close it with
 * {@link PaymentsSandbox.close}.
 *
 * Choices where the spec and the public docs are silent are documented on the modules that make
 * them: `sandbox.api.ts` (HTTP statuses, error codes, 401, 404, 429), `sandbox.verify.ts` (the
 * verify answer), `sandbox.status.ts` (verify status of each state), `sandbox.webhook.ts`
 * (payload, methods, retries), `sandbox.url.ts` (adding `payment_id` to URLs),
 * `sandbox.checkout.ts` (redirects, cross-site refusal), `sandbox.types.ts` (payment states).
 * Request bodies over 1 MiB get 413, on the API in the nested shape
 * `{"result":{"status":413,"message":"Payload Too Large"}}`.
 */
export class PaymentsSandbox {
  /** The public key the sandbox accepts. */
  readonly publicKey: string;
  /** The private key the sandbox accepts (a test key; hidden from `JSON.stringify` and `inspect` anyway). */
  declare readonly privateKey: string;
  /**
   * Every request received under `/api/v2/`, oldest first, including refused ones (401, 404...),
   * with the private key cut out of `Authorization` (see `authorized` for whether it matched).
   * The same array for the sandbox's whole life; {@link clearRequests} empties it in place.
   */
  readonly requests: readonly SandboxRequest[] = [];
  /** Every webhook delivery attempt, oldest first. */
  readonly deliveries: readonly SandboxDelivery[] = [];

  private readonly server: http.Server;
  private readonly state: SandboxState;
  private readonly faults = new SandboxFaults();
  private readonly lifetime = new AbortController();
  private readonly webhookAttempts: number;
  private readonly webhookTimeoutMs: number;
  private readonly webhookMethod: SandboxWebhookMethod;
  private readonly webhookPaymentIdInUrl: SandboxPaymentIdInUrl;
  private readonly generateAnswer: SandboxGenerateAnswer;
  private readonly verifyLimiter: VerifyLimiter;
  private readonly authorization: string;
  private baseUrl = '';
  private closing?: Promise<void>;

  private constructor(options: PaymentsSandboxOptions) {
    this.publicKey = options.publicKey ?? SANDBOX_PUBLIC_KEY;
    // Non-enumerable, so the key stays out of JSON, inspect and test-failure diffs of the sandbox.
    Object.defineProperty(this, 'privateKey', { value: options.privateKey ?? SANDBOX_PRIVATE_KEY, enumerable: false });
    this.authorization = `Bearer ${this.publicKey}:${this.privateKey}`;
    Object.defineProperty(this, 'authorization', { enumerable: false });
    this.webhookAttempts = webhookAttemptsOf(options);
    this.webhookTimeoutMs = positiveInteger('webhookTimeoutMs', options.webhookTimeoutMs, 5000);
    this.webhookMethod = oneOf('webhookMethod', options.webhookMethod, ['POST', 'GET'], 'POST');
    this.webhookPaymentIdInUrl = oneOf('webhookPaymentIdInUrl', options.webhookPaymentIdInUrl, ['none', 'append', 'naive'], 'append');
    if (this.webhookMethod === 'GET' && this.webhookPaymentIdInUrl === 'none') {
      throw new TypeError("PaymentsSandbox: webhookMethod 'GET' carries payment_id in the URL only, so webhookPaymentIdInUrl cannot be 'none'");
    }
    this.generateAnswer = oneOf('generateAnswer', options.generateAnswer, ['full', 'minimal'], 'full');
    validateRateLimit(options.verifyRateLimit);
    const now = options.now ?? (() => Date.now());
    this.verifyLimiter = new VerifyLimiter(now, options.verifyRateLimit ? { ...options.verifyRateLimit } : null);
    this.state = new SandboxState(now, () => this.baseUrl);
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch(() => {
        // A bug in a handler must not take the test process down; answer 500 and go on.
        if (res.headersSent) res.destroy();
        else sendJson(res, 500, { result: { status: 500, message: 'Internal Server Error' } });
      });
    });
  }

  /**
   * Starts a sandbox listening on `host:port` (default `127.0.0.1`, a random free port).
   *
   * @throws TypeError for invalid options; the listen error (e.g. `EADDRINUSE`) when the port is taken
   */
  static async start(options: PaymentsSandboxOptions = {}): Promise<PaymentsSandbox> {
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError('PaymentsSandbox: port must be an integer from 0 to 65535');
    const host = options.host ?? '127.0.0.1';
    const sandbox = new PaymentsSandbox(options);
    await new Promise<void>((resolve, reject) => {
      sandbox.server.once('error', reject);
      sandbox.server.listen(port, host, () => {
        sandbox.server.off('error', reject);
        resolve();
      });
    });
    const address = sandbox.server.address() as AddressInfo;
    sandbox.baseUrl = `http://${urlHost(host)}:${address.port}`;
    return sandbox;
  }

  /** Base URL of the sandbox, e.g. `http://127.0.0.1:43211`: the plugin's `baseUrl`. */
  get url(): string {
    return this.baseUrl;
  }

  /**
   * Plugin options pointing at this sandbox, for `PaymentsModule.forRoot(sandbox.options())`:
   * its keys, `baseUrl`, and its own success and failure pages, overridden or extended by `extra`.
   */
  options<E extends object = Record<never, never>>(extra?: E): SandboxClientOptions & E {
    const base: SandboxClientOptions = {
      publicKey: this.publicKey,
      privateKey: this.privateKey,
      baseUrl: this.url,
      successLink: `${this.url}${SANDBOX_SUCCESS_PATH}`,
      failLink: `${this.url}${SANDBOX_FAIL_PATH}`,
    };
    return { ...base, ...extra } as SandboxClientOptions & E;
  }

  /**
   * Pays a pending payment, as the customer clicking Pay: the state becomes `paid` (`preauthorized`
   * for a pre-authorization: the amount is held), a payment with a `client_id` gets a binding, then
   * the outcome (`SUCCESS` / `PREAUTH_SUCCESS`) is delivered to the payment's webhook URL, if any,
   * with retries. Resolves once delivery is over.
   *
   * @throws SandboxWebhookError when the payment has a webhook URL and no attempt got a 2xx
   *   answer (the payment stays paid), unless `options.requireDelivery` is false
   * @throws Error when the payment is unknown or not pending
   */
  completePayment(paymentId: string, options?: SandboxSettleOptions): Promise<SandboxSettlement> {
    return this.settleOrThrow(paymentId, 'paid', options);
  }

  /**
   * Declines a pending payment, as the customer clicking Decline: the state becomes `failed`,
   * then the `FAILURE` outcome is delivered to the payment's webhook URL, if any (the public
   * pages describe failure webhooks too, public-api-facts §2).
   *
   * @throws SandboxWebhookError when the payment has a webhook URL and no attempt got a 2xx
   *   answer (the payment stays failed), unless `options.requireDelivery` is false
   * @throws Error when the payment is unknown or not pending
   */
  failPayment(paymentId: string, options?: SandboxSettleOptions): Promise<SandboxSettlement> {
    return this.settleOrThrow(paymentId, 'failed', options);
  }

  /**
   * Ends a pending payment's session now, as if `session_timeout_secs` had passed: verify answers
   * `EXPIRED`. No webhook is sent (see `sandbox.status.ts` for why), so the result always has
   * `attempts: 0`.
   *
   * @throws Error when the payment is unknown or not pending
   */
  expirePayment(paymentId: string): Promise<SandboxSettlement> {
    return this.settleOrThrow(paymentId, 'expired', { requireDelivery: false });
  }

  /**
   * Creates a pre-authorization already held (state `preauthorized`, verify `PREAUTH_SUCCESS`),
   * without a checkout, to test confirm_payment and cancel_payment quickly. Through the API the
   * same is `generate_payment` with `pre_auth: true`, then Pay. With `clientId`, a binding is
   * created, as for any paid payment.
   *
   * @returns the payment id
   * @throws TypeError when `amount` is not positive millimes or `clientId` is one bindings/list refuses
   */
  async createPreauthorizedPayment(input: SandboxPreauthorizationInput): Promise<string> {
    const amount = parseMillimes(input.amount, true);
    if (amount === undefined) throw new TypeError('PaymentsSandbox: amount must be a positive number of millimes (a string of digits or a safe integer)');
    if (input.clientId !== undefined && !isValidClientId(input.clientId))
      throw new TypeError('PaymentsSandbox: clientId must be a non-blank string of at most 256 characters, without control characters');
    return this.state.createPreauthorized({ ...input, amount }).paymentId;
  }

  /**
   * Stores a card binding for a customer directly (bindings are otherwise created by paying a
   * payment made with `client_id`). `binding_id` is a random UUID, `created_at` the sandbox
   * clock, `status` default `'active'`.
   *
   * @throws TypeError when `clientId` is one `bindings/list` would refuse
   */
  addBinding(input: SandboxBindingInput): SandboxBinding {
    if (!isValidClientId(input.clientId))
      throw new TypeError('PaymentsSandbox: clientId must be a non-blank string of at most 256 characters, without control characters');
    return this.state.addBinding(input);
  }

  /**
   * Number of authenticated verify_payment calls received for `paymentId` (those answered 404 or
   * 429 included), or for all payment ids when omitted: lets a test hold a client to its call
   * budget (the docs warn that repeated verify calls get rate-limited or banned).
   */
  verifyCalls(paymentId?: string): number {
    return this.verifyLimiter.calls(paymentId);
  }

  /**
   * Sets (or, with null, removes) the verify_payment rate limit at run time, with the meaning of
   * the `verifyRateLimit` start option. Open windows are forgotten; call counts are kept.
   *
   * @throws TypeError for a limit that is not two positive integers
   */
  setVerifyRateLimit(limit: SandboxRateLimit | null): void {
    this.verifyLimiter.setLimit(limit);
  }

  /** Read-only snapshot of a payment (session expiry applied), or undefined when unknown. */
  getPayment(paymentId: string): SandboxPayment | undefined {
    return this.state.get(paymentId);
  }

  /** Snapshots of every payment, oldest first. */
  payments(): SandboxPayment[] {
    return this.state.list();
  }

  /** Empties {@link requests} (in place). */
  clearRequests(): void {
    (this.requests as SandboxRequest[]).length = 0;
  }

  /**
   * Injects a fault on one path (exact match on the path, query string ignored), e.g.
   * `'/api/v2/refund_payment'`, or on every path under a prefix with a trailing `/*`, e.g.
   * `'/api/v2/verify_payment/*'` (an exact path wins over a prefix); `null` clears it. Applied to
   * matching requests after they are logged, before authentication. See {@link SandboxFault}
   * for the fields and their defaults.
   *
   * @throws TypeError for an invalid spec
   */
  fault(path: string, spec: SandboxFault | null): void {
    this.faults.set(path, spec);
  }

  /**
   * Stops the sandbox: no new connections, open (keep-alive) sockets destroyed, pending delays
   * and webhook retries cancelled. Idempotent: every call returns the same promise.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.lifetime.abort();
      this.faults.clear();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  /** What `JSON.stringify` shows: no private key. */
  toJSON(): Record<'url' | 'publicKey', string> {
    return { url: this.url, publicKey: this.publicKey };
  }

  /** What `util.inspect` and `console.log` show: no private key, no logs. */
  [inspect.custom](): string {
    return `PaymentsSandbox { url: '${this.url}', publicKey: '${this.publicKey}' }`;
  }

  private async settleOrThrow(paymentId: string, outcome: Settlement, options: SandboxSettleOptions = {}): Promise<SandboxSettlement> {
    const result = await this.settle(paymentId, outcome);
    if (result.ok) {
      const { settlement } = result;
      if (settlement.webhook && !settlement.delivered && options.requireDelivery !== false) throw new SandboxWebhookError(settlement);
      return settlement;
    }
    const verb = outcome === 'paid' ? 'complete' : outcome === 'failed' ? 'fail' : 'expire';
    throw new Error(
      result.reason === 'unknown'
        ? `PaymentsSandbox: cannot ${verb} payment ${paymentId}: no such payment`
        : `PaymentsSandbox: cannot ${verb} payment ${paymentId}: it is ${result.reason}, not pending`,
    );
  }

  /** The one path from a pending payment to its outcome, for the checkout page and the test methods alike. */
  private async settle(paymentId: string, outcome: Settlement): Promise<SettleOutcome> {
    const payment = this.state.settle(paymentId, outcome);
    if ('error' in payment) return { ok: false, reason: payment.error };
    const status = verifyStatusOf(payment.state);
    if (payment.webhook === undefined || !isWebhookStatus(status)) {
      return { ok: true, settlement: { payment, status, delivered: false, attempts: 0 } };
    }
    const webhook = await deliverWebhook(payment.webhook, payment.paymentId, status, {
      attempts: this.webhookAttempts,
      timeoutMs: this.webhookTimeoutMs,
      method: this.webhookMethod,
      paymentIdInUrl: this.webhookPaymentIdInUrl,
      signal: this.lifetime.signal,
      log: (delivery) => (this.deliveries as SandboxDelivery[]).push(delivery),
    });
    const settlement: SandboxSettlement = {
      payment,
      status,
      delivered: webhook.delivered,
      attempts: webhook.attempts,
      ...(webhook.status !== 0 && { lastStatus: webhook.status }),
      webhook,
    };
    return { ok: true, settlement };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    } catch {
      sendHtml(res, 400, messagePage('Bad request', 'The request target is not a valid URL.'));
      return;
    }
    const body = await readBody(req);
    const api = isApiPath(url.pathname);
    if (api) {
      (this.requests as SandboxRequest[]).push(
        Object.freeze({
          method: req.method ?? 'GET',
          path: url.pathname,
          query: Object.freeze(queryOf(url.searchParams)),
          url: req.url ?? '/',
          headers: loggedHeaders(req.headers),
          authorized: req.headers.authorization === this.authorization,
          body: body.text,
        }),
      );
    }
    const fault = this.faults.take(url.pathname);
    if (fault && (await applyFault(fault, req, res, this.lifetime.signal))) return;

    if (body.tooLarge) {
      if (api) sendJson(res, 413, { result: { status: 413, message: 'Payload Too Large' } });
      else sendHtml(res, 413, messagePage('Payload too large', 'Request bodies are limited to 1 MiB.'));
      return;
    }
    if (api) {
      const context = { state: this.state, authorization: this.authorization, generateAnswer: this.generateAnswer, verifyLimiter: this.verifyLimiter };
      handleApiRequest(context, req, res, url, body.text);
      return;
    }
    const checkout = { state: this.state, settle: (id: string, outcome: 'paid' | 'failed') => this.settle(id, outcome) };
    if (await handleCheckoutRequest(checkout, req, res, url)) return;
    this.handlePage(req, res, url);
  }

  /** The sandbox's own pages: the index, and the default success and failure targets. */
  private handlePage(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const readable = req.method === 'GET' || req.method === 'HEAD';
    if (readable && url.pathname === FAVICON_PATH) return send(res, 204, 'image/x-icon', '', { 'Cache-Control': 'max-age=86400', ...PAGE_SECURITY_HEADERS });
    if (readable && url.pathname === '/') return sendHtml(res, 200, indexPage(this.url, this.state.list()));
    if (readable && url.pathname === SANDBOX_SUCCESS_PATH)
      return sendHtml(res, 200, messagePage('Payment successful', 'The sandbox payment succeeded. You can close this page.'));
    if (readable && url.pathname === SANDBOX_FAIL_PATH)
      return sendHtml(res, 200, messagePage('Payment failed', 'The sandbox payment failed or was declined. You can close this page.'));
    sendHtml(res, 404, messagePage('Not found', 'There is nothing at this address.'));
  }
}
