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
import { applyFault, SandboxFaults } from './sandbox.faults.js';
import { indexPage, messagePage } from './sandbox.html.js';
import { readBody, sendHtml, sendJson } from './sandbox.http.js';
import { SandboxState, type Settlement } from './sandbox.state.js';
import type {
  PaymentsSandboxOptions,
  SandboxBinding,
  SandboxBindingInput,
  SandboxClientOptions,
  SandboxDelivery,
  SandboxFault,
  SandboxPayment,
  SandboxPreauthorizationInput,
  SandboxRequest,
  SandboxSettlement,
} from './sandbox.types.js';
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

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`PaymentsSandbox: ${name} must be a positive integer`);
  return value;
}

/**
 * A running emulator of the payment service. Start one with {@link PaymentsSandbox.start},
 * point the plugin at it with {@link PaymentsSandbox.options}, and close it with
 * {@link PaymentsSandbox.close}.
 *
 * Choices where the spec says "not shown" are documented on the modules that make them:
 * `sandbox.api.ts` (statuses, codes, 401), `sandbox.webhook.ts` (payload, retries),
 * `sandbox.types.ts` (payment states). Request bodies over 1 MiB get 413, on the API in the
 * nested shape `{"result":{"status":413,"message":"Payload Too Large"}}`.
 */
export class PaymentsSandbox {
  /** The public key the sandbox accepts. */
  readonly publicKey: string;
  /** The private key the sandbox accepts (a test key; hidden from `JSON.stringify` and `inspect` anyway). */
  declare readonly privateKey: string;
  /**
   * Every request received under `/api/v2/`, oldest first, including refused ones (401, 404...).
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
  private readonly authorization: string;
  private baseUrl = '';
  private closing?: Promise<void>;

  private constructor(options: PaymentsSandboxOptions) {
    this.publicKey = options.publicKey ?? SANDBOX_PUBLIC_KEY;
    // Non-enumerable, so the key stays out of JSON, inspect and test-failure diffs of the sandbox.
    Object.defineProperty(this, 'privateKey', { value: options.privateKey ?? SANDBOX_PRIVATE_KEY, enumerable: false });
    this.authorization = `Bearer ${this.publicKey}:${this.privateKey}`;
    Object.defineProperty(this, 'authorization', { enumerable: false });
    this.webhookAttempts = positiveInteger('webhookRetries', options.webhookRetries, 3);
    this.webhookTimeoutMs = positiveInteger('webhookTimeoutMs', options.webhookTimeoutMs, 5000);
    this.state = new SandboxState(options.now ?? (() => Date.now()), () => this.baseUrl);
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
   * Pays a pending payment, as the customer clicking Pay: the state becomes `paid`, then the
   * confirmation is delivered to the payment's webhook URL (if any, with retries).
   * Resolves once delivery is over, successful or not.
   *
   * @throws Error when the payment is unknown or not pending
   */
  completePayment(paymentId: string): Promise<SandboxSettlement> {
    return this.settleOrThrow(paymentId, 'paid');
  }

  /**
   * Declines a pending payment, as the customer clicking Decline: the state becomes `failed`.
   * Nothing is delivered: the spec's webhook receives payment confirmation only, so a
   * declined payment is silent (a plugin must never read a decline as a confirmation).
   *
   * @throws Error when the payment is unknown or not pending
   */
  failPayment(paymentId: string): Promise<SandboxSettlement> {
    return this.settleOrThrow(paymentId, 'failed');
  }

  /**
   * Creates a payment in state `preauthorized`, to test `cancel_payment`. The spec does not
   * show how the service creates one, so this is a test-only shortcut with no HTTP endpoint.
   *
   * @returns the payment id
   * @throws TypeError when `amount` is not a positive string of ASCII digits
   */
  async createPreauthorizedPayment(input: SandboxPreauthorizationInput): Promise<string> {
    const amount = parseMillimes(input.amount);
    if (amount === undefined) throw new TypeError('PaymentsSandbox: amount must be a positive number of millimes as a string of digits');
    return this.state.createPreauthorized({ ...input, amount }).paymentId;
  }

  /**
   * Stores a card binding for a customer (the spec does not show the endpoint that creates
   * bindings). `binding_id` is a random UUID, `created_at` the sandbox clock, `status` default `'active'`.
   *
   * @throws TypeError when `clientId` is one `bindings/list` would refuse
   */
  addBinding(input: SandboxBindingInput): SandboxBinding {
    if (!isValidClientId(input.clientId)) throw new TypeError('PaymentsSandbox: clientId must be 1-128 characters of [A-Za-z0-9._:@-]');
    return this.state.addBinding(input);
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
   * `'/api/v2/refund_payment'`; `null` clears it. Applied to matching requests after they are
   * logged, before authentication. See {@link SandboxFault} for the fields and their defaults.
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
  toJSON(): { url: string; publicKey: string } {
    return { url: this.url, publicKey: this.publicKey };
  }

  /** What `util.inspect` and `console.log` show: no private key, no logs. */
  [inspect.custom](): string {
    return `PaymentsSandbox { url: '${this.url}', publicKey: '${this.publicKey}' }`;
  }

  private async settleOrThrow(paymentId: string, outcome: Settlement): Promise<SandboxSettlement> {
    const result = await this.settle(paymentId, outcome);
    if (result.ok) return result.settlement;
    const verb = outcome === 'paid' ? 'complete' : 'fail';
    throw new Error(
      result.reason === 'unknown'
        ? `PaymentsSandbox: cannot ${verb} payment ${paymentId}: no such payment`
        : `PaymentsSandbox: cannot ${verb} payment ${paymentId}: it is ${result.reason}, not pending`,
    );
  }

  private async settle(paymentId: string, outcome: Settlement): Promise<SettleOutcome> {
    const result = this.state.settle(paymentId, outcome);
    if ('error' in result) return { ok: false, reason: result.error };
    if (result.webhook === undefined || outcome !== 'paid') return { ok: true, settlement: { payment: result } };
    const webhook = await deliverWebhook(result, result.webhook, {
      attempts: this.webhookAttempts,
      timeoutMs: this.webhookTimeoutMs,
      signal: this.lifetime.signal,
      log: (delivery) => (this.deliveries as SandboxDelivery[]).push(delivery),
    });
    return { ok: true, settlement: { payment: result, webhook } };
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
          headers: Object.freeze({ ...req.headers }),
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
      handleApiRequest({ state: this.state, authorization: this.authorization }, req, res, url, body.text);
      return;
    }
    const checkout = { state: this.state, settle: (id: string, outcome: Settlement) => this.settle(id, outcome) };
    if (await handleCheckoutRequest(checkout, req, res, url)) return;
    this.handlePage(req, res, url);
  }

  /** The sandbox's own pages: the index, and the default success and failure targets. */
  private handlePage(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const readable = req.method === 'GET' || req.method === 'HEAD';
    if (readable && url.pathname === '/') return sendHtml(res, 200, indexPage(this.url, this.state.list()));
    if (readable && url.pathname === SANDBOX_SUCCESS_PATH) return sendHtml(res, 200, messagePage('Payment successful', 'The sandbox payment succeeded. You can close this page.'));
    if (readable && url.pathname === SANDBOX_FAIL_PATH) return sendHtml(res, 200, messagePage('Payment failed', 'The sandbox payment failed or was declined. You can close this page.'));
    sendHtml(res, 404, messagePage('Not found', 'There is nothing at this address.'));
  }
}
