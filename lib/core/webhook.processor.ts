import { randomUUID } from 'node:crypto';
import { describe, type HeldClaim, type OutcomeExpectation, type OutcomeProcessor, type SettleResult } from './outcome.processor.js';
import type { ResolvedWebhookOptions } from './payments.options.js';
import type { PaymentsLogger } from './payments.logger.js';
import type { BindingClaim, PaymentBinding, PaymentsStore } from './payments.store.js';
import type { VerifiedPayment } from './payments.types.js';
import { PaymentsTelemetry, WEBHOOK_TRACE, type WebhookTrace } from './payments.telemetry.js';
import { parseWebhook, type WebhookRequest } from './webhook.payload.js';
import { trackingHash, WebhookTokenSigner, type WebhookTokenClaims } from './webhook.token.js';

/** The JSON body of a webhook answer. Never contains secrets or internal error details. */
export interface WebhookAnswerBody {
  /** Whether the delivery was taken (it may still be pending). */
  received: boolean;
  /** The payment's outcome was already handled: nothing ran. */
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

/** A delivery that passed {@link WebhookProcessor.authenticate}: which payment, and what to expect of it. */
export interface AuthenticatedWebhook {
  /** The payment the delivery names. */
  paymentId: string;
  /** What the service's answer must match. @internal */
  expected?: OutcomeExpectation;
  /** The token's claims, when it had no stored binding (to bind it once verified). @internal */
  unboundToken?: WebhookTokenClaims;
  /** The payment's claim, when authenticate() asked for it with the binding lookup. @internal */
  held?: HeldClaim;
}

/** Options of {@link WebhookProcessor.authenticate}. */
export interface WebhookAuthenticateOptions {
  /**
   * Also claim the payment's outcome, in the same store round trip as the token's binding lookup
   * (the webhook's hot path: one round trip instead of two), for a caller that calls
   * {@link WebhookProcessor.deliver} right after, as {@link WebhookProcessor.handle} does. The
   * claim is held until deliver() settles the delivery; a caller that may end up not delivering
   * must call {@link WebhookProcessor.abandon}, or the payment waits for the claim's lease
   * (`webhook.leaseMs`). Default false: only the lookup, nothing claimed.
   */
  claim?: boolean;
}

/** A delivery {@link WebhookProcessor.authenticate} let through. */
export interface WebhookAccepted extends AuthenticatedWebhook {
  /** Accepted. */
  ok: true;
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

const reject = (status: number, error: string, headers?: Record<string, string>): WebhookAnswer => ({
  status,
  body: { received: false, error },
  headers,
});
/** The rate-limit slot of a token without a stored binding: a claim on `token:<nonce>`. */
interface TokenSlot {
  key: string;
  owner: string;
}

/** Where authenticate() leaves a delivery's span for deliver() (a symbol: it survives `{ ...auth }`). */
const TRACE: typeof WEBHOOK_TRACE = WEBHOOK_TRACE;

const unavailable = (seconds = 5): WebhookAnswer => reject(503, 'temporarily unavailable', { 'Retry-After': String(seconds) });

/**
 * The webhook front door shared by the Nest controller and the Express router. A delivery is
 * only a hint that a payment may have settled: it is authenticated cheaply (the signed token,
 * no call to the service for a forged one), then handed to the client's outcome engine, which
 * asks the service and runs the handlers once.
 *
 * Answers: 200 handled or duplicate (or a mismatch, logged and recorded); 202 still pending
 * (reconciliation checks it later); 400 malformed; 401 missing, forged, expired or foreign token
 * (a token without a stored binding naming a payment it was not signed for, or one the service
 * does not know); 409 + Retry-After while another path handles it; 413 too large; 429 +
 * Retry-After unsigned deliveries of one payment, or deliveries of one token without a stored
 * binding, more often than `unsignedIntervalSecs` needs a verify call; 500 a handler failed
 * (redelivery runs it again); 503 + Retry-After the store or the service unavailable, or shutting
 * down.
 */
export class WebhookProcessor {
  // A private field (not `private`): the options hold the webhook secret, which must stay out of
  // util.inspect, JSON.stringify and logs of this object (it is public as `client.webhooks`).
  readonly #options: ResolvedWebhookOptions;
  readonly #signer?: WebhookTokenSigner;
  private inFlight = 0;
  private closing = false;
  private drained?: () => void;
  private draining?: Promise<void>;
  /**
   * Spans and metrics of deliveries; set by the client.
   * @internal
   */
  telemetry: PaymentsTelemetry = PaymentsTelemetry.off;

  /**
   * Built by `PaymentsClient` (its `webhooks`); not meant to be constructed elsewhere.
   * @internal
   * @param options resolved webhook options
   * @param signer the client's token signer (absent when no secret is configured)
   * @param store bindings and claims
   * @param outcomes verifies and runs the handlers
   * @param logger where failures are reported
   */
  constructor(
    options: ResolvedWebhookOptions,
    signer: WebhookTokenSigner | undefined,
    private readonly store: PaymentsStore,
    private readonly outcomes: OutcomeProcessor,
    private readonly logger: PaymentsLogger,
  ) {
    this.#options = options;
    this.#signer = signer;
  }

  /**
   * Checks size, token, body and payment id, without calling the service. Never throws.
   * @param options `claim: true` to take the payment's claim in the same store round trip
   */
  async authenticate(request: WebhookRequest, options: WebhookAuthenticateOptions = {}): Promise<WebhookAuthentication> {
    const claim = options.claim === true;
    if (!this.telemetry.active) return this.check(request, claim);
    // The delivery's span starts here and ends in deliver() (or now, when refused). The route is a
    // template: the token never reaches an attribute.
    const trace = this.telemetry.webhook(`/${this.#options.path}${request.pathToken === undefined ? '' : '/:token'}`);
    const auth = await trace.within(() => this.check(request, claim));
    if (auth.ok) return Object.assign(auth, { [TRACE]: trace });
    trace.end(auth.answer.status, auth.answer.body.probe === true ? 'probe' : auth.answer.status === 200 ? 'duplicate' : 'rejected');
    return auth;
  }

  /**
   * Gives back the claim that `authenticate(request, { claim: true })` took, for a delivery that
   * will not be delivered (e.g. a later check of the host's refused it). Does nothing for an
   * authentication that holds no claim, or once deliver() ran. Never throws.
   */
  async abandon(auth: AuthenticatedWebhook): Promise<void> {
    const held = auth.held;
    if (!held) return;
    auth.held = undefined;
    await this.outcomes.abandon(auth.paymentId, held);
  }

  private async check(request: WebhookRequest, claim: boolean): Promise<WebhookAuthentication> {
    if (!this.#signer && !this.#options.acceptUnsigned) return { ok: false, answer: reject(404, 'webhooks are not configured') };
    const length = Number(Array.isArray(request.contentLength) ? request.contentLength[0] : request.contentLength);
    if (Number.isFinite(length) && length > this.#options.maxBodyBytes) return { ok: false, answer: reject(413, 'payload too large') };

    const parsed = parseWebhook(request, this.#options.maxBodyBytes);
    if (!parsed.ok) return { ok: false, answer: reject(parsed.reason === 'payload too large' ? 413 : 400, `malformed webhook: ${parsed.reason}`) };
    // A set-up probe proves the route is reached; it costs an HMAC, nothing else.
    if (this.#signer?.verifyProbe(parsed.token) === true) return { ok: false, answer: { status: 200, body: { received: true, probe: true } } };

    if (parsed.token === undefined) {
      if (!this.#options.acceptUnsigned) return { ok: false, answer: reject(401, 'missing or invalid webhook token') };
      if (parsed.paymentId === undefined) return { ok: false, answer: reject(400, 'malformed webhook: no payment id') };
      return this.unsigned(parsed.paymentId);
    }
    const claims = this.#signer?.verify(parsed.token);
    if (!claims) return { ok: false, answer: reject(401, 'missing or invalid webhook token') };
    if (parsed.paymentId === undefined) return { ok: false, answer: reject(400, 'malformed webhook: no payment id') };

    let found: BindingClaim & { held?: HeldClaim };
    try {
      found = claim ? await this.outcomes.lookupAndClaim(claims.nonce, parsed.paymentId) : { binding: await this.store.findBinding(claims.nonce) };
    } catch (error) {
      this.logger.error(`webhook: store unreachable while reading a token: ${describe(error)}`);
      return { ok: false, answer: unavailable() };
    }
    const binding = found.binding;
    if (binding) {
      if (binding.paymentId !== parsed.paymentId) return { ok: false, answer: reject(401, 'webhook token was issued for another payment') };
      const accepted: WebhookAccepted = {
        ok: true,
        paymentId: parsed.paymentId,
        expected: { amount: binding.amount, developerTrackingId: binding.developerTrackingId, origin: 'binding' },
      };
      if (found.held) accepted.held = found.held;
      return accepted;
    }
    // The store forgot the token (restart, eviction): the token itself says what to expect.
    return {
      ok: true,
      paymentId: parsed.paymentId,
      expected: {
        amount: claims.amount,
        trackingMatches: (t) => trackingHash(t) === claims.trackingHash,
        identifiesPayment: claims.trackingHash !== '',
        origin: 'token',
      },
      unboundToken: claims,
    };
  }

  /** Settles an authenticated delivery and says how to answer. Never throws. */
  async deliver(auth: AuthenticatedWebhook): Promise<WebhookAnswer> {
    const trace = (auth as { [TRACE]?: WebhookTrace })[TRACE] ?? (this.telemetry.active ? this.telemetry.webhook(`/${this.#options.path}`) : undefined);
    if (this.closing) {
      await this.abandon(auth);
      trace?.end(503, 'shutting-down');
      return reject(503, 'shutting down', { 'Retry-After': '5' });
    }
    this.inFlight++;
    let held = auth.held;
    // Settled from here: a second deliver() of the same authentication claims afresh.
    auth.held = undefined;
    try {
      let slot: TokenSlot | undefined;
      if (auth.unboundToken && held === undefined) {
        const gate = await this.gateUnbound(auth.paymentId, auth.unboundToken);
        if ('answer' in gate) {
          trace?.end(gate.answer.status, gate.result, auth.paymentId);
          return gate.answer;
        }
        ({ held, slot } = gate);
      }
      const settle = () => this.outcomes.settle(auth.paymentId, 'webhook', auth.expected, held);
      const result = await (trace ? trace.within(settle) : settle());
      // A verify that settled a payment was spent well (and a payment is settled once): the next
      // delivery of this token need not wait for the interval.
      if (slot && result.kind === 'handled') await this.store.release(slot.key, slot.owner).catch(() => undefined);
      if (auth.unboundToken && (result.kind === 'handled' || result.kind === 'pending')) await this.rebind(auth, result.verification);
      const answer = answerFor(result);
      trace?.end(answer.status, result.kind, auth.paymentId);
      return answer;
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) this.drained?.();
    }
  }

  /**
   * authenticate() then deliver(): the whole webhook, for front ends without a separate guard.
   * The binding lookup and the claim are then one store round trip (see
   * {@link WebhookAuthenticateOptions.claim}).
   */
  async handle(request: WebhookRequest): Promise<WebhookAnswer> {
    const auth = await this.authenticate(request, { claim: !this.closing });
    return auth.ok ? this.deliver(auth) : auth.answer;
  }

  /**
   * Stops taking new deliveries (they get 503 and will be redelivered) and waits for the ones
   * in flight to finish, so nothing half-done is marked done and nothing done is lost.
   */
  drain(): Promise<void> {
    this.closing = true;
    // One promise for every caller (the Nest module and client.close() both drain).
    this.draining ??= this.inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.drained = resolve));
    return this.draining;
  }

  // Deliveries without a token (a URL set in the service's dashboard) are verify-backed: only
  // payments this plugin generated (queued for reconciliation) are checked, at most once per
  // `unsignedIntervalSecs` each, so a stranger cannot spend the merchant's verify budget.
  private async unsigned(paymentId: string): Promise<WebhookAuthentication> {
    try {
      const pending = await this.store.findPending(paymentId);
      if (!pending) {
        const done = await this.store.getOutcome(paymentId);
        return done ? { ok: false, answer: { status: 200, body: { received: true, duplicate: true } } } : { ok: false, answer: reject(404, 'unknown payment') };
      }
      const slot = await this.store.claim(`unsigned:${paymentId}`, randomUUID(), this.#options.unsignedIntervalSecs * 1000);
      if (slot !== 'claimed')
        return { ok: false, answer: reject(429, 'too many deliveries for this payment', { 'Retry-After': String(this.#options.unsignedIntervalSecs) }) };
      return { ok: true, paymentId, expected: { amount: pending.amount, developerTrackingId: pending.developerTrackingId, origin: 'binding' } };
    } catch (error) {
      this.logger.error(`webhook: store unreachable for an unsigned delivery: ${describe(error)}`);
      return { ok: false, answer: unavailable() };
    }
  }

  // A token without a stored binding costs a verify call whatever payment id comes with it, so a
  // replay of one genuine URL with other ids could spend the merchant's verify budget without
  // limit. As for unsigned deliveries: one verify per token per `unsignedIntervalSecs`. The
  // payment's claim comes first (a done or busy payment costs no verify and answers as usual),
  // then the token's slot; over the limit, 429 with Retry-After (the service delivers again).
  private async gateUnbound(
    paymentId: string,
    claims: WebhookTokenClaims,
  ): Promise<{ held: HeldClaim; slot?: TokenSlot } | { answer: WebhookAnswer; result: string }> {
    let held: HeldClaim;
    try {
      held = await this.outcomes.claimOutcome(paymentId);
    } catch (error) {
      this.logger.error(`webhook: store unreachable while claiming ${paymentId}: ${describe(error)}`);
      return { answer: unavailable(), result: 'store-unavailable' };
    }
    if (held.outcome !== 'claimed') return { held };
    const slot: TokenSlot = { key: `token:${claims.nonce}`, owner: randomUUID() };
    const interval = this.#options.unsignedIntervalSecs;
    let taken;
    try {
      taken = await this.store.claim(slot.key, slot.owner, interval * 1000);
    } catch (error) {
      void this.store.release(slot.key, slot.owner).catch(() => undefined);
      await this.outcomes.abandon(paymentId, held);
      this.logger.error(`webhook: store unreachable while rate-limiting a token: ${describe(error)}`);
      return { answer: unavailable(), result: 'store-unavailable' };
    }
    if (taken === 'claimed') return { held, slot };
    await this.outcomes.abandon(paymentId, held);
    return { answer: reject(429, 'too many deliveries for this webhook token', { 'Retry-After': String(interval) }), result: 'rate-limited' };
  }

  // Once the service confirmed the payment the token was signed for, bind the token to it, so
  // that a replay of the URL naming another payment is refused without a call to the service.
  // Only a token with a tracking id (which the verified one matched) pins its payment down:
  // without one, any payment of the same amount and no tracking id verifies alike, and binding
  // the token to a replay's payment would turn the genuine delivery away (401). First binding
  // wins: an existing one is never replaced.
  private async rebind(auth: AuthenticatedWebhook, verification: VerifiedPayment): Promise<void> {
    const claims = auth.unboundToken as WebhookTokenClaims;
    if (auth.expected?.identifiesPayment !== true) return;
    try {
      const ttl = claims.expiresAt - Date.now();
      if (ttl <= 0 || (await this.store.findBinding(claims.nonce))) return;
      const binding: PaymentBinding = { paymentId: auth.paymentId, amount: claims.amount, createdAt: new Date().toISOString() };
      if (verification.developerTrackingId !== undefined) binding.developerTrackingId = verification.developerTrackingId;
      await this.store.saveBinding(claims.nonce, binding, ttl);
    } catch (error) {
      this.logger.warn(`webhook: could not re-bind a token to ${auth.paymentId}: ${describe(error)}`);
    }
  }
}

/** The HTTP answer for what settling a delivery did. */
export function answerFor(result: SettleResult): WebhookAnswer {
  switch (result.kind) {
    case 'handled':
    case 'mismatch':
      return { status: 200, body: { received: true } };
    case 'duplicate':
      return { status: 200, body: { received: true, duplicate: true } };
    case 'pending':
      return { status: 202, body: { received: true, pending: true } };
    case 'busy':
      return reject(409, 'this payment is being handled', { 'Retry-After': '5' });
    case 'foreign':
      return reject(401, 'webhook token was issued for another payment');
    case 'handlers-failed':
      return reject(500, 'handler failed');
    case 'verify-failed':
      return unavailable(result.retryAfterSecs ?? 5);
    case 'store-unavailable':
      return unavailable();
  }
}
