import type { SharedClock } from '../time/index.js';
import { PAYMENTS_DEFAULTS, type ResolvedPaymentsOptions } from './payments.options.js';
import { queueGenerated, type PaymentBinding, type PaymentsStore, type PendingPayment } from '../store/index.js';
import type { TelemetryHooks } from '../telemetry/index.js';
import { WebhookTokenSigner } from '../webhook/index.js';
import {
  type HttpTransport,
  normalizeMillimes,
  checkPaymentInput,
  toPaymentWire,
  bounded,
  CheckoutDesk,
  type CheckoutTicket,
  PaymentsValidationError,
  lateEntry,
  PaymentRecorder,
  type GenerateOptions,
  type GeneratePaymentInput,
  type GeneratedPayment,
  fromGeneratePaymentWire,
  isJsonObject,
  SERVICE_PATHS,
  type JsonObject,
} from '../api/index.js';
import { callService, checkId, unexpected } from '../api/index.js';
import { checkoutKey } from '../settlement/index.js';

/** The largest epoch time in ms a Date can hold. */
const MAX_DATE_MS = 8.64e15;

/**
 * generatePayment's path: the input checked, the order's open payment reused (one payment per
 * checkout), the payment created, and what the plugin must remember of it (its token's binding
 * and its place in the reconciliation queue) written to the store.
 */
export class PaymentGenerator {
  readonly #checkouts: CheckoutDesk;
  readonly #recorder: PaymentRecorder;
  /** The signed webhook URL of a token (`webhook.publicUrl` parsed once); absent without a signer. */
  readonly #webhookUrl: ((token: string) => string) | undefined;

  /**
   * @param options the resolved options (defaults of generatePayment, the webhook settings)
   * @param transport sends the requests
   * @param store bindings and the reconciliation queue
   * @param signer issues webhook tokens (absent when no secret is configured)
   * @param telemetry what observes the calls
   * @param clock the time shared with the other instances (the queue's due times)
   */
  constructor(
    private readonly options: ResolvedPaymentsOptions,
    private readonly transport: HttpTransport,
    private readonly store: PaymentsStore,
    private readonly signer: WebhookTokenSigner | undefined,
    private readonly telemetry: TelemetryHooks,
    private readonly clock: SharedClock,
  ) {
    this.#checkouts = new CheckoutDesk(
      store,
      { enabled: options.orders.reuseOpenPayment, leaseMs: options.timeoutMs * 3, registration: options.name },
      options.logger,
      clock,
    );
    this.#recorder = new PaymentRecorder(options.logger, clock.local);
    // A signer is made only with a public URL (the resolver's `webhook.enabled`).
    this.#webhookUrl = signer && WebhookTokenSigner.urlMaker(options.webhook.publicUrl as string);
  }

  /** Lets the store writes of created payments finish (each tried once more, then reported). */
  close(): Promise<void> {
    return this.#recorder.close();
  }

  /**
   * Creates a payment (see `PaymentsOperations.generatePayment`).
   * @param input the payment
   * @param settings the call's options (the idempotency key)
   */
  async generatePayment(input: GeneratePaymentInput, settings: GenerateOptions = {}): Promise<GeneratedPayment> {
    // The module's defaults passed the same rules when the options were resolved: only the caller's
    // own fields are checked here, and the defaults are read in place, never merged into a copy
    // (checking the links again dominated the call's cost: docs/performance.md).
    // One shallow snapshot: what is checked is what is sent, even if the caller's object
    // has getters or is changed while the call is under way.
    const own = (isJsonObject(input) ? { ...input } : input) as GeneratePaymentInput;
    const defaults = this.options.defaults;
    const errors = checkPaymentInput(own, defaults);
    if (errors.length > 0) throw new PaymentsValidationError(errors, 'generatePayment input');

    const amount = normalizeMillimes(own.amount) as string;
    const trackingId = isSet(own.developerTrackingId) ? own.developerTrackingId : undefined;
    const idempotencyKey = settings?.idempotencyKey ?? undefined;
    if (idempotencyKey !== undefined) checkId(idempotencyKey, 'idempotencyKey', 'generatePayment');
    // One payment per checkout: the order's open payment answers a repeated request (payments.checkout.ts).
    const orderKey = checkoutKey(idempotencyKey, trackingId, this.options.name);
    // The fingerprint is the body as sent without the plugin's webhook token: the body itself when
    // no token is added (built and serialised once).
    const order =
      orderKey === undefined
        ? undefined
        : {
            orderKey,
            amount,
            fingerprint: JSON.stringify(toPaymentWire(own, this.options.preAuthorizationFlag, defaults)),
            developerTrackingId: trackingId,
          };
    const desk = await this.#checkouts.begin(order);
    if ('reuse' in desk) return desk.reuse;
    try {
      return await this.#create(own, amount, trackingId, desk.ticket, order?.fingerprint);
    } catch (error) {
      desk.ticket?.abandon();
      throw error;
    }
  }

  async #create(
    own: GeneratePaymentInput,
    amount: string,
    trackingId: string | undefined,
    ticket: CheckoutTicket | undefined,
    unsigned: string | undefined,
  ): Promise<GeneratedPayment> {
    const defaults = this.options.defaults;
    const issued =
      !isSet(own.webhook) && this.signer
        ? this.signer.issue(amount, trackingId, this.options.webhook.tokenTtlMs)
        : undefined;
    const fallback = issued
      ? {
          ...defaults,
          webhook: (this.#webhookUrl as (token: string) => string)(issued.token),
        }
      : defaults;

    // A created payment is one with an id and a link and no error shape, with or without
    // `result.success` (two documented answers lack it): refusing it would orphan a real payment.
    const json = await callService(
      this.transport,
      this.telemetry,
      {
        operation: 'generatePayment',
        method: 'POST',
        path: SERVICE_PATHS.generate,
        // Without a token the body is the order's fingerprint, serialised already.
        body:
          issued || unsigned === undefined ? toPaymentWire(own, this.options.preAuthorizationFlag, fallback) : unsigned,
      },
      isGenerated,
    );
    const payment = fromGeneratePaymentWire(json.result as JsonObject);
    if (!payment)
      throw unexpected(
        'generatePayment',
        'the payment id or the link is missing or malformed, or the tracking id is malformed',
      );

    if (this.clock.due) await bounded(this.clock.sync(), this.clock).catch(() => undefined);
    // Times read on a clock that never reached the store's are this instance's own, maybe an hour
    // off: written as a late write's are, moved by what the clock learns by then (the store may
    // answer the writes already, its clock having been out of reach a moment ago).
    const unsynced = !this.clock.known;
    const mark = this.clock.mark();
    const createdAt = mark.at;
    const sessionSecs =
      (isSet(own.sessionTimeoutSecs) ? own.sessionTimeoutSecs : defaults.sessionTimeoutSecs) ??
      PAYMENTS_DEFAULTS.serviceSessionTimeoutSecs;
    // Any positive safe integer is a valid session length; beyond the last date a Date can hold
    // (year 275760) toISOString() would throw after the payment was created, orphaning it.
    const at = (ms: number) => Math.min(ms, MAX_DATE_MS);
    const binding: PaymentBinding = {
      paymentId: payment.paymentId,
      amount,
      createdAt: new Date(createdAt).toISOString(),
      sessionEndsAt: new Date(at(createdAt + sessionSecs * 1000)).toISOString(),
    };
    if (trackingId !== undefined) binding.developerTrackingId = trackingId;
    const dueAt = at(createdAt + (sessionSecs + this.options.reconciliation.graceSecs) * 1000);
    const checkout = ticket?.record(payment, binding.sessionEndsAt as string);
    await this.#recorder.record(
      payment.paymentId,
      async (late) => {
        const saveBinding = () =>
          issued && this.store.saveBinding(issued.claims.nonce, binding, this.options.webhook.tokenTtlMs);
        if (!late && !unsynced) {
          // Copied, then counted: a spread with a property added (`{ ...binding, checks: 0 }`)
          // takes V8 a slow path, ten times the copy's cost.
          const entry = Object.assign({}, binding) as PendingPayment;
          entry.checks = 0;
          // Independent writes, made together (one round trip's wait, not three in a row).
          await Promise.all([saveBinding(), queueGenerated(this.store, entry, dueAt), checkout?.()]);
          return;
        }
        await saveBinding();
        // A path that found it pending meanwhile (a webhook faster than this write, or than the
        // store's outage) put it in the pending lane: merged with, never replaced (queueGenerated).
        const moved = await lateEntry(binding, this.clock, mark);
        await queueGenerated(this.store, moved.entry, dueAt + moved.shift);
        await checkout?.();
      },
      dueAt - createdAt,
    );
    return payment;
  }
}

/** Keys set to undefined or null mean "not set": they must not hide the module's defaults. */
function isSet<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

function isGenerated(json: JsonObject): boolean {
  return isJsonObject(json.result) && json.result.payment_id !== undefined && json.result.link !== undefined;
}
