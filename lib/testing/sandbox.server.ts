/**
 * `PaymentsSandbox`: an in-process HTTP emulator of the whole payment service (API, checkout
 * page, webhooks), for tests and local development. Node built-ins only, so it runs wherever
 * the plugin does and needs no network access.
 */
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import { handleApiRequest } from './sandbox.api.js';
import { handleCheckoutRequest, type SettleOutcome } from './sandbox.checkout.js';
import { handleControlRequest } from './sandbox.control.js';
import { applyFault, SandboxFaults } from './sandbox.faults.js';
import { indexPage, messagePage, PAGE_SECURITY_HEADERS } from './sandbox.html.js';
import { readBody, send, sendHtml, sendJson } from './sandbox.http.js';
import { listenAsPlanned, listenPlan, sandboxServer } from './sandbox.listen.js';
import { validateRateLimit, VerifyLimiter } from './sandbox.ratelimit.js';
import { isApiPath, loggedRequest } from './sandbox.request.js';
import {
  oneOf,
  SANDBOX_PRIVATE_KEY,
  SANDBOX_PUBLIC_KEY,
  webhookDeliveryOf,
  type WebhookDeliverySettings,
} from './sandbox.options.js';
import { PersistentSandboxState } from './sandbox.persist.js';
import { SandboxState, type Settlement } from './sandbox.state.js';
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
  SandboxSettlement,
  SandboxSettleOptions,
} from './sandbox.types.js';
import { checkClientId, preauthorizedAmount } from './sandbox.validation.js';
import { SandboxWebhookError } from './sandbox.errors.js';
import { isWebhookStatus, verifyStatusOf } from './sandbox.status.js';
import { deliverWebhook } from './sandbox.webhook.js';

/** How a settled payment's webhook is delivered: {@link deliverWebhook}'s options. */
type DeliveryOptions = Parameters<typeof deliverWebhook>[3];

/**
 * The one path from a pending payment to its outcome, for the checkout page and the test methods
 * alike: the state changes, then the webhook (when the payment has one and the status is one the
 * service sends) is delivered and its attempts recorded.
 */
export async function settlePayment(
  state: SandboxState,
  paymentId: string,
  outcome: Settlement,
  delivery: DeliveryOptions,
): Promise<SettleOutcome> {
  const payment = state.settle(paymentId, outcome);
  if ('error' in payment) return { ok: false, reason: payment.error };
  const status = verifyStatusOf(payment.state);
  if (payment.webhook === undefined || !isWebhookStatus(status)) {
    return { ok: true, settlement: { payment, status, delivered: false, attempts: 0 } };
  }
  const webhook = await deliverWebhook(payment.webhook, payment.paymentId, status, delivery);
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

/**
 * A test method's settlement, or the error it throws: no such payment, not pending, or (unless
 * `requireDelivery: false`) a webhook no attempt delivered.
 */
export function settlementOrThrow(
  result: SettleOutcome,
  paymentId: string,
  outcome: Settlement,
  options: SandboxSettleOptions,
): SandboxSettlement {
  if (result.ok) {
    const { settlement } = result;
    if (settlement.webhook && !settlement.delivered && options.requireDelivery !== false)
      throw new SandboxWebhookError(settlement);
    return settlement;
  }
  const verb = outcome === 'paid' ? 'complete' : outcome === 'failed' ? 'fail' : 'expire';
  throw new Error(
    result.reason === 'unknown'
      ? `PaymentsSandbox: cannot ${verb} payment ${paymentId}: no such payment`
      : `PaymentsSandbox: cannot ${verb} payment ${paymentId}: it is ${result.reason}, not pending`,
  );
}

/** Path of the sandbox's own success page, the default `successLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_SUCCESS_PATH = '/sandbox/success';
/** Path of the sandbox's own failure page, the default `failLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_FAIL_PATH = '/sandbox/fail';

/** The favicon browsers ask for before reading the page's `<link rel="icon">`: nothing, but no 404. */
const FAVICON_PATH = '/favicon.ico';

/** The sandbox's own pages: the index, and the default success and failure targets. */
export function handlePage(
  req: IncomingMessage,
  res: ServerResponse,
  baseUrl: string,
  payments: SandboxPayment[],
): void {
  const readable = req.method === 'GET' || req.method === 'HEAD';
  const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  if (readable && url.pathname === FAVICON_PATH)
    return send(res, 204, 'image/x-icon', '', { 'Cache-Control': 'max-age=86400', ...PAGE_SECURITY_HEADERS });
  if (readable && url.pathname === '/') return sendHtml(res, 200, indexPage(baseUrl, payments));
  if (readable && url.pathname === SANDBOX_SUCCESS_PATH)
    return sendHtml(
      res,
      200,
      messagePage('Payment successful', 'The sandbox payment succeeded. You can close this page.'),
    );
  if (readable && url.pathname === SANDBOX_FAIL_PATH)
    return sendHtml(
      res,
      200,
      messagePage('Payment failed', 'The sandbox payment failed or was declined. You can close this page.'),
    );
  sendHtml(res, 404, messagePage('Not found', 'There is nothing at this address.'));
}

/**
 * A running emulator of the payment service. Start one with {@link PaymentsSandbox.start},
 * point the plugin at it with {@link PaymentsSandbox.options}, and close it with
 * {@link PaymentsSandbox.close}.
 *
 * Choices where the service's documentation is silent are documented where they are made:
 * `sandbox.api.ts` (statuses, error codes), `sandbox.verify.ts`, `sandbox.status.ts` (payment
 * states, verify status of each), `sandbox.webhook.ts`, `sandbox.url.ts`, `sandbox.checkout.ts`,
 * `sandbox.router.ts` (bodies over 1 MiB: 413).
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
  private readonly delivery: WebhookDeliverySettings;
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
    this.delivery = webhookDeliveryOf(options);
    this.generateAnswer = oneOf('generateAnswer', options.generateAnswer, ['full', 'minimal'], 'full');
    validateRateLimit(options.verifyRateLimit);
    const now = options.now ?? (() => Date.now());
    this.verifyLimiter = new VerifyLimiter(now, options.verifyRateLimit ? { ...options.verifyRateLimit } : null);
    this.state = options.stateFile
      ? new PersistentSandboxState(options.stateFile, now, () => this.baseUrl)
      : new SandboxState(now, () => this.baseUrl);
    this.server = sandboxServer((req, res) => this.handle(req, res));
  }

  /**
   * Starts a sandbox listening on `host:port` (default `127.0.0.1`, a random free port).
   *
   * @throws TypeError for invalid options, or a `host` beyond loopback with the default private key;
   *   the listen error (e.g. `EADDRINUSE`) when the port is taken
   */
  static async start(options: PaymentsSandboxOptions = {}): Promise<PaymentsSandbox> {
    const plan = listenPlan(options);
    const sandbox = new PaymentsSandbox(options);
    sandbox.baseUrl = await listenAsPlanned(sandbox.server, plan, options.onWarning);
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
   * pages describe failure webhooks too, docs/service-facts.md §2).
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
    const amount = preauthorizedAmount(input);
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
    checkClientId(input.clientId);
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

  private async settleOrThrow(
    paymentId: string,
    outcome: Settlement,
    options: SandboxSettleOptions = {},
  ): Promise<SandboxSettlement> {
    return settlementOrThrow(await this.settle(paymentId, outcome), paymentId, outcome, options);
  }

  /** The one path from a pending payment to its outcome, for the checkout page and the test methods alike. */
  private settle(paymentId: string, outcome: Settlement): Promise<SettleOutcome> {
    const log = (delivery: SandboxDelivery) => (this.deliveries as SandboxDelivery[]).push(delivery);
    return settlePayment(this.state, paymentId, outcome, { ...this.delivery, signal: this.lifetime.signal, log });
  }

  private handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { state, faults, authorization, generateAnswer, verifyLimiter, url: baseUrl } = this;
    const log = (request: SandboxRequest) => (this.requests as SandboxRequest[]).push(request);
    const settle = (id: string, outcome: Settlement) => this.settle(id, outcome);
    const signal = this.lifetime.signal;
    const context = { state, faults, authorization, generateAnswer, verifyLimiter, signal, baseUrl, log, settle };
    return routeRequest(context, req, res);
  }
}

/** What the router needs of a running sandbox. */
export interface SandboxRoutes {
  /** The payments. */
  state: SandboxState;
  /** Injected faults, taken per request. */
  faults: SandboxFaults;
  /** The `Authorization` value the API accepts. */
  authorization: string;
  /** The shape of generate_payment's answer. */
  generateAnswer: SandboxGenerateAnswer;
  /** The verify rate limit. */
  verifyLimiter: VerifyLimiter;
  /** Aborted when the sandbox closes. */
  signal: AbortSignal;
  /** The sandbox's own base URL. */
  baseUrl: string;
  /** Keeps an API request in the log. */
  log: (request: SandboxRequest) => void;
  /** Settles a payment from the checkout page or a control route. */
  settle: (paymentId: string, outcome: Settlement) => Promise<SettleOutcome>;
}

/**
 * One request to the sandbox: logged (API only, without the private key), a fault applied if one
 * was injected, then the API, the checkout page or the sandbox's own pages.
 */
export async function routeRequest(routes: SandboxRoutes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  } catch {
    sendHtml(res, 400, messagePage('Bad request', 'The request target is not a valid URL.'));
    return;
  }
  const body = await readBody(req);
  const api = isApiPath(url.pathname);
  if (api) routes.log(loggedRequest(req, url, body.text, routes.authorization));
  const fault = routes.faults.take(url.pathname);
  if (fault && (await applyFault(fault, req, res, routes.signal))) return;

  if (body.tooLarge) {
    if (api) sendJson(res, 413, { result: { status: 413, message: 'Payload Too Large' } });
    else sendHtml(res, 413, messagePage('Payload too large', 'Request bodies are limited to 1 MiB.'));
    return;
  }
  if (api) {
    const context = {
      state: routes.state,
      authorization: routes.authorization,
      generateAnswer: routes.generateAnswer,
      verifyLimiter: routes.verifyLimiter,
    };
    handleApiRequest(context, req, res, url, body.text);
    return;
  }
  const checkout = { state: routes.state, settle: routes.settle };
  if (await handleCheckoutRequest(checkout, req, res, url)) return;
  if (await handleControlRequest(checkout, req, res, url)) return;
  handlePage(req, res, routes.baseUrl, routes.state.list());
}
