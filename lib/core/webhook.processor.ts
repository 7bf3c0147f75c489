import { randomUUID } from 'node:crypto';
import { PaymentConfirmedEvent, PaymentEvents } from './payment.events.js';
import type { PaymentsLogger } from './payments.logger.js';
import type { ResolvedWebhookOptions } from './payments.options.js';
import type { PaymentBinding, PaymentsStore } from './payments.store.js';
import { parseWebhook, type WebhookRequest } from './webhook.payload.js';
import { safeEqual, WEBHOOK_TOKEN_PARAM, WebhookTokenSigner } from './webhook.token.js';
import type { JsonObject } from './wire.mapper.js';

/** The HTTP answer a webhook front end (Nest controller, Express router) sends. */
export interface WebhookAnswer {
  /** HTTP status. */
  status: number;
  /** JSON body. Never contains secrets or internal error details. */
  body: { received: boolean; duplicate?: boolean; error?: string };
  /** Extra headers, e.g. `Retry-After`. */
  headers?: Record<string, string>;
}

/** Outcome of {@link WebhookProcessor.authenticate}. */
export type WebhookAuthentication =
  | { ok: true; binding: PaymentBinding; body: JsonObject; query: JsonObject }
  | { ok: false; answer: WebhookAnswer };

/** Runs the handlers of a confirmed payment; a rejection means "not handled, redeliver". */
export type ConfirmationDispatcher = (event: PaymentConfirmedEvent) => Promise<unknown>;

const reject = (status: number, error: string, headers?: Record<string, string>): WebhookAnswer => ({
  status,
  body: { received: false, error },
  headers,
});

/**
 * The webhook engine shared by the Nest controller and the Express router: authenticates a
 * delivery (signed token bound to one payment), then runs the handlers effectively-once using
 * a claim with a lease in the store.
 *
 * - a handler that throws: 500, the claim is released, a redelivery runs it again;
 * - a duplicate of a handled confirmation: 200, nothing runs;
 * - a duplicate while another delivery is running it: 409 with Retry-After, nothing runs;
 * - the store unreachable or the app shutting down: 503 with Retry-After.
 */
export class WebhookProcessor {
  // A private field (not `private`): the options hold the webhook secret, which must stay out of
  // util.inspect, JSON.stringify and logs of this object (it is public as `client.webhooks`).
  readonly #options: ResolvedWebhookOptions;
  private readonly signer?: WebhookTokenSigner;
  private inFlight = 0;
  private closing = false;
  private drained?: () => void;
  private draining?: Promise<void>;

  /**
   * @param options resolved webhook options
   * @param store bindings and claims
   * @param logger where failures are reported
   */
  constructor(
    options: ResolvedWebhookOptions,
    private readonly store: PaymentsStore,
    private readonly logger: PaymentsLogger,
  ) {
    this.#options = options;
    if (options.enabled && options.secret) this.signer = new WebhookTokenSigner(options.secret);
  }

  /** Checks size, token, body and payment id. Never throws. */
  async authenticate(request: WebhookRequest): Promise<WebhookAuthentication> {
    if (!this.signer) return { ok: false, answer: reject(404, 'webhooks are not configured') };
    const length = Number(Array.isArray(request.contentLength) ? request.contentLength[0] : request.contentLength);
    if (Number.isFinite(length) && length > this.#options.maxBodyBytes) {
      return { ok: false, answer: reject(413, 'payload too large') };
    }
    const query = (typeof request.query === 'object' && request.query !== null ? request.query : {}) as JsonObject;
    const nonce = this.signer.verify(query[WEBHOOK_TOKEN_PARAM]);
    if (!nonce) return { ok: false, answer: reject(401, 'missing or invalid webhook token') };

    const parsed = parseWebhook(request);
    if (!parsed.ok) return { ok: false, answer: reject(400, `malformed webhook: ${parsed.reason}`) };

    let binding: PaymentBinding | undefined;
    try {
      binding = await this.store.findBinding(nonce);
    } catch (error) {
      this.logger.error(`webhook: store unreachable while reading a token: ${describe(error)}`);
      return { ok: false, answer: reject(503, 'temporarily unavailable', { 'Retry-After': '5' }) };
    }
    if (!binding) return { ok: false, answer: reject(401, 'unknown or expired webhook token') };
    // Every payment id the payload names must be the token's payment: a token cannot confirm another payment.
    if (!parsed.paymentIds.every((id) => safeEqual(id, binding.paymentId))) {
      return { ok: false, answer: reject(401, 'webhook token was issued for another payment') };
    }
    return { ok: true, binding, body: parsed.body, query: parsed.query };
  }

  /** Runs the handlers of an authenticated confirmation, at most once to success. Never throws. */
  async deliver(auth: Extract<WebhookAuthentication, { ok: true }>, dispatch: ConfirmationDispatcher): Promise<WebhookAnswer> {
    if (this.closing) return reject(503, 'shutting down', { 'Retry-After': '5' });
    this.inFlight++;
    try {
      return await this.run(auth, dispatch);
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) this.drained?.();
    }
  }

  /** authenticate() then deliver(): the whole webhook, for front ends without a separate guard. */
  async handle(request: WebhookRequest, dispatch: ConfirmationDispatcher): Promise<WebhookAnswer> {
    const auth = await this.authenticate(request);
    return auth.ok ? this.deliver(auth, dispatch) : auth.answer;
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

  private async run(auth: Extract<WebhookAuthentication, { ok: true }>, dispatch: ConfirmationDispatcher): Promise<WebhookAnswer> {
    const { binding } = auth;
    const key = `${PaymentEvents.CONFIRMED}:${binding.paymentId}`;
    const owner = randomUUID();
    let claim;
    try {
      claim = await this.store.claim(key, owner, this.#options.leaseMs);
    } catch (error) {
      this.logger.error(`webhook: store unreachable while claiming ${binding.paymentId}: ${describe(error)}`);
      return reject(503, 'temporarily unavailable', { 'Retry-After': '5' });
    }
    if (claim === 'done') return { status: 200, body: { received: true, duplicate: true } };
    if (claim === 'busy') return reject(409, 'this confirmation is being handled', { 'Retry-After': '5' });

    const event = new PaymentConfirmedEvent(binding.paymentId, binding.amount, binding.developerTrackingId, new Date(), auth.body, auth.query);
    try {
      if (this.#options.verify && !(await this.#options.verify(event))) {
        await this.release(key, owner);
        return reject(403, 'confirmation refused by verify()');
      }
    } catch (error) {
      this.logger.warn(`webhook: verify() failed for ${binding.paymentId}: ${describe(error)}`);
      await this.release(key, owner);
      return reject(503, 'verification unavailable', { 'Retry-After': '5' });
    }
    try {
      await dispatch(event);
    } catch (error) {
      this.logger.warn(`webhook: a payment.confirmed handler failed for ${binding.paymentId}; answering 500 so it is redelivered: ${describe(error)}`);
      await this.release(key, owner);
      return reject(500, 'handler failed');
    }
    try {
      if (!(await this.store.markDone(key, owner, this.#options.doneTtlMs))) {
        this.logger.warn(`webhook: the claim on ${binding.paymentId} expired while its handlers ran (raise webhook.leaseMs)`);
      }
    } catch (error) {
      // The handlers ran; a redelivery after the lease will run them again, which the store cannot prevent now.
      this.logger.error(`webhook: could not mark ${binding.paymentId} done: ${describe(error)}`);
    }
    return { status: 200, body: { received: true } };
  }

  private async release(key: string, owner: string): Promise<void> {
    try {
      await this.store.release(key, owner);
    } catch (error) {
      // The lease expires on its own; a redelivery after it runs the event again.
      this.logger.error(`webhook: could not release ${key}: ${describe(error)}`);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
