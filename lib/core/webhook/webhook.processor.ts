import type { ResolvedWebhookOptions } from './webhook.options.js';
import { assertNever, type PaymentsLogger, describe } from '../common/index.js';
import {
  SETTLEMENT_WAITS,
  verifyGate,
  type UnsignedAsk,
  type OutcomeExpectation,
  type SettleRequest,
  type SettleResult,
  type Settlements,
  type TokenLookup,
} from '../settlement/index.js';
import type { PaymentsStore } from '../store/index.js';
import { NO_TELEMETRY, type TelemetryHooks, type WebhookTrace } from '../telemetry/index.js';
import { parseWebhook, type WebhookRequest } from './webhook.payload.js';
import {
  tokenRegistrationVerdict,
  trackingHash,
  WebhookTokenSigner,
  type RegistrationContext,
  type WebhookTokenClaims,
} from './webhook.token.js';

/** The JSON body of a webhook answer. Never contains secrets or internal error details. */
export interface WebhookAnswerBody {
  /** Whether the delivery was taken (it may still be pending). */
  received: boolean;
  /** The payment was already settled: nothing ran. */
  duplicate?: boolean;
  /** The service says the payment is not settled yet: reconciliation checks it later. */
  pending?: boolean;
  /** Why it was refused. */
  error?: string;
  /**
   * The delivery was a set-up probe (`nestjs-payments doctor --probe`), signed with the webhook
   * secret: it reached this route, and nothing was looked up, verified or run.
   */
  probe?: boolean;
}

/** The HTTP answer a webhook front end (Nest controller, Express router) sends. */
export interface WebhookAnswer {
  /** HTTP status. */
  status: number;
  /** JSON body. */
  body: WebhookAnswerBody;
  /** Extra headers, e.g. `Retry-After`. */
  headers?: Record<string, string>;
}

/** A refusal: `received: false`, the reason, and extra headers. */
export const refusal = (status: number, error: string, headers?: Record<string, string>): WebhookAnswer => ({
  status,
  body: { received: false, error },
  headers,
});

/** 503 with a Retry-After: the store or the service could not be reached, or shutting down. */
export const unavailable = (
  seconds: number = SETTLEMENT_WAITS.unavailableRetrySecs,
  error = 'temporarily unavailable',
): WebhookAnswer => refusal(503, error, { 'Retry-After': String(seconds) });

/** The answer to a delivery that was already handled (also an unsigned delivery of a done payment). */
export const duplicate = (): WebhookAnswer => ({ status: 200, body: { received: true, duplicate: true } });

/**
 * The HTTP answer for what settling a delivery did: 200 handled, duplicate or a mismatch (logged
 * and recorded; also a duplicate charge of a paid order, handled); 202 still pending; 401 foreign; 409 + Retry-After busy; 429 + Retry-After over the
 * rate limit of a token without a binding; 500 a handler failed (delivered again later); 503 +
 * Retry-After the store or the service unavailable, or the payment verified moments ago (answered
 * from memory: delivered again later, and re-checked by the plugin meanwhile).
 */
export function answerFor(result: SettleResult): WebhookAnswer {
  switch (result.kind) {
    case 'handled':
    case 'mismatch':
      return { status: 200, body: { received: true } };
    case 'duplicate':
      return duplicate();
    case 'pending':
      return { status: 202, body: { received: true, pending: true } };
    case 'busy':
      return refusal(409, 'this payment is being handled', { 'Retry-After': String(SETTLEMENT_WAITS.busyRetrySecs) });
    case 'foreign':
      return refusal(401, 'webhook token was issued for another payment');
    case 'handlers-failed':
      return refusal(500, 'handler failed');
    case 'order-duplicate':
      // A second charge of a paid order: handled as such (200), or to run again (500: delivered again).
      return result.error === undefined ? { status: 200, body: { received: true } } : refusal(500, 'handler failed');
    case 'verify-failed':
      return unavailable(result.retryAfterSecs);
    case 'rate-limited':
      return refusal(429, 'too many deliveries for this webhook token', {
        'Retry-After': String(result.retryAfterSecs),
      });
    case 'store-unavailable':
      return unavailable();
    case 'deferred':
      // Verified moments ago without settling it, or the service is failing: no call now. Never
      // 2xx: a service that takes a 2xx as delivered would not send it again, and this delivery
      // may be the one saying the payment just settled (the plugin re-checks it on its own too).
      return result.pending
        ? refusal(503, 'this payment was checked moments ago; deliver again later', {
            'Retry-After': String(result.retryAfterSecs),
          })
        : unavailable(result.retryAfterSecs);
    default:
      return assertNever(result);
  }
}

/** A delivery that passed {@link WebhookProcessor.authenticate}: which payment, and how to settle it. */
export interface AuthenticatedWebhook {
  /** The payment the delivery names. */
  paymentId: string;
  /** What the service's answer must match, when known without the store's binding (unsigned deliveries). @internal */
  expected?: OutcomeExpectation;
  /** The signed token's claims: its binding is read when the delivery is settled. @internal */
  token?: WebhookTokenClaims;
}

/**
 * A delivery {@link WebhookProcessor.authenticate} let through. It carries its span (when tracing)
 * until one of its methods ends it: whoever holds the delivery settles or abandons it, with no
 * lookup by the object's identity (a copy of it is no delivery).
 */
export interface WebhookAccepted extends AuthenticatedWebhook {
  /** Accepted. */
  ok: true;
  /** Settles the delivery (the settlement runner claims the payment) and says how to answer. Never throws. */
  deliver(): Promise<WebhookAnswer>;
  /**
   * Ends the delivery without settling it (a host interceptor answered first): its span ends with
   * the status sent. Nothing is held, so nothing else is given back. Does nothing once delivered.
   * Never throws.
   * @param status the HTTP status the host sent; default 0 (unknown)
   */
  abandon(status?: number): Promise<void>;
}

/** A delivery {@link WebhookProcessor.authenticate} refused, and the answer to send. */
export interface WebhookRefused {
  /** Refused. */
  ok: false;
  /** The answer to send (401, 400, 413, 429, 503...). */
  answer: WebhookAnswer;
}

/** Outcome of {@link WebhookProcessor.authenticate}. */
export type WebhookAuthentication = WebhookAccepted | WebhookRefused;

/** What the checks let through, before it becomes a {@link WebhookAccepted}. */
type Checked = ({ ok: true } & AuthenticatedWebhook) | WebhookRefused;

/** How an accepted delivery is settled: by its processor, with the span it carries (if any). */
type Settle = (auth: AuthenticatedWebhook, trace: WebhookTrace | undefined) => Promise<WebhookAnswer>;

/** A {@link WebhookAccepted}: the span is its own, taken by the first of deliver() and abandon(). */
class AcceptedDelivery implements WebhookAccepted {
  readonly ok = true;
  readonly paymentId: string;
  readonly expected?: OutcomeExpectation;
  readonly token?: WebhookTokenClaims;
  #trace: WebhookTrace | undefined;
  #delivered = false;
  readonly #settle: Settle;

  constructor(checked: AuthenticatedWebhook, trace: WebhookTrace | undefined, settle: Settle) {
    this.paymentId = checked.paymentId;
    if (checked.expected !== undefined) this.expected = checked.expected;
    if (checked.token !== undefined) this.token = checked.token;
    this.#trace = trace;
    this.#settle = settle;
  }

  deliver(): Promise<WebhookAnswer> {
    const trace = this.#trace;
    this.#trace = undefined;
    this.#delivered = true;
    return this.#settle(this, trace);
  }

  async abandon(status = 0): Promise<void> {
    if (this.#delivered) return;
    this.#trace?.end(status, 'not-delivered');
    this.#trace = undefined;
  }
}

/**
 * The webhook front door shared by the Nest controller and the Express router. A delivery is only
 * a hint that a payment may have settled. {@link authenticate} checks it without the store or the
 * service (size, body, signed token: a forged one costs nothing); {@link deliver} hands it to the
 * settlement runner, which owns the payment's claim from then on, and maps the runner's result to
 * the HTTP answer (`answerFor`, below).
 */
export class WebhookProcessor {
  // A private field (not `private`): the options hold the webhook secret, which must stay out of
  // util.inspect, JSON.stringify and logs of this object (it is public as `client.webhooks`).
  readonly #options: ResolvedWebhookOptions;
  readonly #signer?: WebhookTokenSigner;
  #inFlight = 0;
  #closing = false;
  #soleRegistration = true;
  #registrations?: RegistrationContext;
  #misrouted = 0;
  #drained?: () => void;
  #draining?: Promise<void>;
  /** How an accepted delivery is settled: by this processor (one function, not one per delivery). */
  readonly #settleAccepted: Settle = (auth, trace) => this.#settle(auth, trace);
  /** The route's templates as spans name them (the token never reaches an attribute). */
  readonly #routes: { plain: string; token: string };

  /**
   * Built by `PaymentsClient` (its `webhooks`); not meant to be constructed elsewhere.
   * @internal
   * @param options resolved webhook options
   * @param signer the client's token signer (absent when no secret is configured)
   * @param store bindings, the queue and rate limits
   * @param runner settles delivered payments
   * @param logger where failures are reported
   * @param telemetry what observes deliveries
   */
  constructor(
    options: ResolvedWebhookOptions,
    signer: WebhookTokenSigner | undefined,
    private readonly store: PaymentsStore,
    private readonly runner: Settlements,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: TelemetryHooks = NO_TELEMETRY,
  ) {
    this.#options = options;
    this.#signer = signer;
    this.#routes = { plain: `/${options.path}`, token: `/${options.path}/:token` };
  }

  /**
   * Checks size, body, token and payment id, without calling the service; a signed delivery
   * touches no store either. Never throws.
   */
  async authenticate(request: WebhookRequest): Promise<WebhookAuthentication> {
    const settle = this.#settleAccepted;
    if (!this.telemetry.active) {
      const checked = await this.#check(request);
      return checked.ok ? new AcceptedDelivery(checked, undefined, settle) : checked;
    }
    const trace = this.telemetry.webhook(request.pathToken === undefined ? this.#routes.plain : this.#routes.token);
    const checked = await trace.within(() => this.#check(request));
    if (!checked.ok) {
      trace.end(
        checked.answer.status,
        checked.answer.body.probe === true ? 'probe' : checked.answer.status === 200 ? 'duplicate' : 'rejected',
      );
      return checked;
    }
    return new AcceptedDelivery(checked, trace, settle);
  }

  /**
   * `auth.abandon(status)` for a delivery {@link authenticate} accepted; nothing for any other.
   * @param status the HTTP status the host sent
   */
  async abandon(auth: AuthenticatedWebhook, status = 0): Promise<void> {
    if (auth instanceof AcceptedDelivery) await auth.abandon(status);
  }

  /**
   * `auth.deliver()` for a delivery {@link authenticate} accepted; any other authenticated
   * delivery (built by hand) is settled the same way, with a span of its own. Never throws.
   */
  deliver(auth: AuthenticatedWebhook): Promise<WebhookAnswer> {
    return auth instanceof AcceptedDelivery ? auth.deliver() : this.#settle(auth, undefined);
  }

  async #settle(auth: AuthenticatedWebhook, carried: WebhookTrace | undefined): Promise<WebhookAnswer> {
    const trace = carried ?? (this.telemetry.active ? this.telemetry.webhook(this.#routes.plain) : undefined);
    if (this.#closing) {
      trace?.end(503, 'shutting-down');
      return unavailable(undefined, 'shutting down');
    }
    this.#inFlight++;
    try {
      const request = this.#request(auth);
      const settle = () => this.runner.settle(request);
      const result = await (trace ? trace.within(settle) : settle());
      const answer = answerFor(result);
      trace?.end(answer.status, result.kind, auth.paymentId);
      return answer;
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) this.#drained?.();
    }
  }

  /**
   * Says whether this registration is the app's only one (the Nest module tells, at start-up):
   * only then is a token minted before tokens named their registration accepted. Default true.
   * @internal
   */
  setSoleRegistration(sole: boolean): void {
    this.#soleRegistration = sole;
  }

  /**
   * Tells this route how its registration is named and which other registrations the app has
   * (the Nest module at start-up, the Express router from its app): a token one of them minted
   * is then answered 421 with a warning naming both, even when their secrets differ.
   * @internal
   */
  setRegistrations(context: RegistrationContext): void {
    this.#registrations = context;
  }

  /**
   * Whether this registration minted a token (signed with its secret or a previous one, naming
   * it; expired or not). What another registration's route asks of it; never reveals a secret.
   * @internal
   */
  minted(token: string): boolean {
    return this.#signer?.minted(token) ?? false;
  }

  /**
   * Logs a warning when `webhook.publicUrl` does not lead to the path the route is served at
   * (see `publicUrlMismatch`). For front ends that learn their mount path only from a request.
   * @internal
   * @param servedPath the path the route is served at, e.g. Express's `req.baseUrl`
   * @param registration how the registration is named in the warning
   * @returns whether it warned
   */
  warnIfUnreachable(servedPath: string, registration: string): boolean {
    const warning = this.#options.enabled
      ? publicUrlMismatch(this.#options.publicUrl, servedPath, registration)
      : undefined;
    if (warning) this.logger.warn(warning);
    return warning !== undefined;
  }

  /** authenticate() then deliver(): the whole webhook, for front ends without a separate guard. */
  async handle(request: WebhookRequest): Promise<WebhookAnswer> {
    const auth = await this.authenticate(request);
    return auth.ok ? auth.deliver() : auth.answer;
  }

  /**
   * Stops taking new deliveries (they get 503 and will be redelivered) and waits for the ones
   * in flight to finish, so nothing half-done is marked done and nothing done is lost.
   */
  drain(): Promise<void> {
    this.#closing = true;
    // One promise for every caller (the Nest module and client.close() both drain).
    this.#draining ??=
      this.#inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.#drained = resolve));
    return this.#draining;
  }

  #request(auth: AuthenticatedWebhook): SettleRequest {
    const claims = auth.token;
    if (!claims) return { paymentId: auth.paymentId, source: 'webhook', expected: auth.expected };
    // The store forgot the token (restart, eviction): the token itself says what to expect.
    const expected: OutcomeExpectation = {
      amount: claims.amount,
      trackingMatches: (t) => trackingHash(t) === claims.trackingHash,
      identifiesPayment: claims.trackingHash !== '',
      origin: 'token',
    };
    const token: TokenLookup = { id: claims.nonce, expected, amount: claims.amount, expiresAt: claims.expiresAt };
    return { paymentId: auth.paymentId, source: 'webhook', token };
  }

  async #check(request: WebhookRequest): Promise<Checked> {
    if (!this.#signer && !this.#options.acceptUnsigned)
      return { ok: false, answer: refusal(404, 'webhooks are not configured') };
    const length = Number(Array.isArray(request.contentLength) ? request.contentLength[0] : request.contentLength);
    if (Number.isFinite(length) && length > this.#options.maxBodyBytes)
      return { ok: false, answer: refusal(413, 'payload too large') };

    const parsed = parseWebhook(request, this.#options.maxBodyBytes);
    if (!parsed.ok)
      return {
        ok: false,
        answer: refusal(parsed.reason === 'payload too large' ? 413 : 400, `malformed webhook: ${parsed.reason}`),
      };
    // A set-up probe proves the route is reached; it costs an HMAC, nothing else.
    if (this.#signer?.verifyProbe(parsed.token) === true)
      return { ok: false, answer: { status: 200, body: { received: true, probe: true } } };

    if (parsed.token === undefined) {
      if (!this.#options.acceptUnsigned) return { ok: false, answer: refusal(401, 'missing or invalid webhook token') };
      if (parsed.paymentId === undefined)
        return { ok: false, answer: refusal(400, 'malformed webhook: no payment id') };
      return this.#unsigned(parsed.paymentId);
    }
    const checked = this.#signer?.check(parsed.token) ?? { kind: 'invalid' };
    if (checked.kind === 'invalid') {
      // Not ours: another registration's (its own secret) is misrouted, anything else forged.
      const owner = this.#owner(parsed.token);
      return owner === undefined
        ? { ok: false, answer: refusal(401, 'missing or invalid webhook token') }
        : { ok: false, answer: this.#misroute(owner) };
    }
    const verdict = tokenRegistrationVerdict(checked.registration, this.#soleRegistration);
    switch (verdict) {
      case 'accept':
        break;
      case 'misrouted':
        return { ok: false, answer: this.#misroute(this.#owner(parsed.token)) };
      default: {
        const never: never = verdict;
        return never;
      }
    }
    if (parsed.paymentId === undefined) return { ok: false, answer: refusal(400, 'malformed webhook: no payment id') };
    return { ok: true, paymentId: parsed.paymentId, token: checked.claims };
  }

  // Which other registration of the app minted a token, by its label (each checks with its own
  // secrets). Only for tokens this route refuses: a forged one costs an HMAC per registration.
  #owner(token: string): string | undefined {
    return this.#registrations?.others().find((other) => other.minted(token))?.label;
  }

  // Another registration's token reached this route: its webhook.publicUrl points here. Handling
  // it would run its payment under this account (and again under its own), so it is refused, and
  // said loudly (the 1st, 2nd, 4th, 8th... time: a flood of them does not flood the log). The
  // warning names the registrations, never a secret.
  #misroute(owner: string | undefined): WebhookAnswer {
    this.#misrouted++;
    if ((this.#misrouted & (this.#misrouted - 1)) === 0) {
      const route = this.#registrations?.route ?? `/${this.#options.path}`;
      const self = this.#registrations === undefined ? '' : ` of ${this.#registrations.label}`;
      this.logger.warn(
        `webhook: refused ${this.#misrouted === 1 ? 'a delivery' : `${this.#misrouted} deliveries`} on route '${route}'${self} carrying a token ` +
          `minted by another registration of this app${owner === undefined ? '' : `, ${owner}`}: that registration's webhook.publicUrl points at this route instead of its own`,
      );
    }
    return refusal(421, 'webhook token of another registration: its webhook.publicUrl points at the wrong route');
  }

  // Deliveries without a token (a URL set in the service's dashboard) are verify-backed: only
  // payments this plugin generated (queued for reconciliation) are checked, at most once per
  // `unsignedIntervalSecs` each, so a stranger cannot spend the merchant's verify budget.
  // The verify gate decides (settlement.gate.ts); what it asks for is read or spent here.
  async #unsigned(paymentId: string): Promise<Checked> {
    try {
      const pending = await this.store.findPending(paymentId);
      const interval = this.#options.unsignedIntervalSecs;
      let ask: UnsignedAsk = { stage: 'unsigned', intervalSecs: interval, queued: Boolean(pending) };
      for (;;) {
        const gate = verifyGate(ask);
        switch (gate.kind) {
          case 'ask':
            ask =
              gate.what === 'record'
                ? { ...ask, recorded: Boolean(await this.store.getOutcome(paymentId)) }
                : { ...ask, slot: await this.store.rateLimits.take(`unsigned:${paymentId}`, interval * 1000) };
            break;
          case 'done':
            return { ok: false, answer: duplicate() };
          case 'unknown':
            return { ok: false, answer: refusal(404, 'unknown payment') };
          case 'rate-limited':
            return {
              ok: false,
              answer: refusal(429, 'too many deliveries for this payment', {
                'Retry-After': String(gate.retryAfterSecs),
              }),
            };
          case 'verify':
            // The gate lets only a queued payment through; this says so to the compiler.
            if (!pending) return { ok: false, answer: refusal(404, 'unknown payment') };
            return {
              ok: true,
              paymentId,
              expected: { amount: pending.amount, developerTrackingId: pending.developerTrackingId, origin: 'binding' },
            };
          default:
            return assertNever(gate);
        }
      }
    } catch (error) {
      this.logger.error(`webhook: store unreachable for an unsigned delivery: ${describe(error)}`);
      return { ok: false, answer: unavailable() };
    }
  }
}

/**
 * The one rule comparing a registration's `webhook.publicUrl` with the route it actually serves
 * (the host's global prefix and mount path included). The URL's path must be the route's, or end
 * with it (a proxy in front may add a prefix of its own and strip it). Otherwise every delivery
 * gets 404, or lands on another route: said once, at start-up (Nest) or at the first delivery
 * (Express, whose mount path is known only then).
 * @param publicUrl the registration's `webhook.publicUrl`; nothing to compare when undefined
 * @param mountedPath the path the route is served at, e.g. `/api/payments/webhook`
 * @param registration how the registration is named in the message
 * @returns the warning to log, or undefined when the URL reaches the route
 */
export function publicUrlMismatch(
  publicUrl: string | undefined,
  mountedPath: string,
  registration: string,
): string | undefined {
  if (publicUrl === undefined || !URL.canParse(publicUrl)) return undefined;
  const published = trim(new URL(publicUrl).pathname);
  const mounted = trim(mountedPath);
  if (published === mounted || (mounted !== '' && published.endsWith(`/${mounted}`))) return undefined;
  return (
    `webhook.publicUrl of ${registration} has the path '/${published}' but its webhook route is served at '/${mounted}': ` +
    `the service's deliveries will get 404 or reach another route. Make webhook.publicUrl end with '/${mounted}' ` +
    '(or change webhook.path, the global prefix or the mount path)'
  );
}

function trim(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}
