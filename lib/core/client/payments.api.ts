import type { SharedClock } from '../time/index.js';
import {
  PaymentCancelledEvent,
  PaymentCapturedEvent,
  PaymentEvents,
  PaymentRefundedEvent,
  type PaymentEventName,
} from '../settlement/index.js';
import { PAYMENTS_DEFAULTS, type ResolvedPaymentsOptions } from './payments.options.js';
import type { PaymentBinding, PaymentsStore } from '../store/index.js';
import type { TelemetryHooks } from '../telemetry/index.js';
import { WebhookTokenSigner } from '../webhook/index.js';
import {
  type HttpTransport,
  normalizeMillimes,
  checkPaymentInput,
  toPaymentWire,
  identifier,
  millimes,
  pathSegmentId,
  bounded,
  CheckoutDesk,
  checkoutKey,
  type CheckoutTicket,
  noteDuplicateRefund,
  PaymentsApiError,
  PaymentsValidationError,
  type PaymentsOperation,
  lateEntry,
  PaymentRecorder,
  type CardBinding,
  type GenerateOptions,
  type GeneratePaymentInput,
  type GeneratedPayment,
  type PaymentCancellation,
  type PaymentCapture,
  type PaymentRefund,
  type PaymentsOperations,
  type VerifiedPayment,
  interpretResponse,
  fromBindingWire,
  fromCancellationWire,
  fromCaptureWire,
  fromGeneratePaymentWire,
  fromRefundWire,
  fromVerifyWire,
  isJsonObject,
  SERVICE_PATHS,
  type JsonObject,
} from '../api/index.js';

/** The largest epoch time in ms a Date can hold. */
const MAX_DATE_MS = 8.64e15;

/** Where the operations' own events go (capture, refund, cancellation): the settlement runner's emit. */
export interface OperationEvents {
  /** Emits an event; handler failures are logged, never thrown (the service has already acted). */
  emitOperation(
    name: PaymentEventName,
    event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
  ): Promise<void>;
}

/**
 * The service's six operations: input checked, the request sent through the transport, the
 * answer read, and what the plugin must remember of a generated payment (its token's binding and
 * its place in the reconciliation queue) written to the store. A successful capture, refund or
 * cancellation emits its event, so Nest and Express hosts alike receive it.
 */
export class PaymentsApi implements Omit<PaymentsOperations, 'reconcilePayment'> {
  readonly #checkouts: CheckoutDesk;
  readonly #recorder: PaymentRecorder;

  /**
   * @param options the resolved options (defaults of generatePayment, the webhook settings)
   * @param transport sends the requests
   * @param store bindings and the reconciliation queue
   * @param signer issues webhook tokens (absent when no secret is configured)
   * @param events where capture, refund and cancellation events go
   * @param telemetry what observes the calls
   * @param clock the time shared with the other instances (the queue's due times)
   */
  constructor(
    private readonly options: ResolvedPaymentsOptions,
    private readonly transport: HttpTransport,
    private readonly store: PaymentsStore,
    private readonly signer: WebhookTokenSigner | undefined,
    private readonly events: OperationEvents,
    private readonly telemetry: TelemetryHooks,
    private readonly clock: SharedClock,
  ) {
    this.#checkouts = new CheckoutDesk(
      store,
      { enabled: options.orders.reuseOpenPayment, leaseMs: options.timeoutMs * 3 },
      options.logger,
      clock,
    );
    this.#recorder = new PaymentRecorder(options.logger, clock);
  }

  /** Lets the store writes of created payments finish (each tried once more, then reported). */
  close(): Promise<void> {
    return this.#recorder.close();
  }

  /** @inheritdoc */
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
    const fingerprint =
      orderKey === undefined ? '' : JSON.stringify(toPaymentWire(own, this.options.preAuthorizationFlag, defaults));
    const desk = await this.#checkouts.begin(
      orderKey === undefined ? undefined : { orderKey, amount, fingerprint, developerTrackingId: trackingId },
    );
    if ('reuse' in desk) return desk.reuse;
    try {
      return await this.#create(own, amount, trackingId, desk.ticket);
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
  ): Promise<GeneratedPayment> {
    const defaults = this.options.defaults;
    const issued =
      !isSet(own.webhook) && this.signer
        ? this.signer.issue(amount, trackingId, this.options.webhook.tokenTtlMs)
        : undefined;
    const fallback = issued
      ? {
          ...defaults,
          webhook: WebhookTokenSigner.urlWithToken(this.options.webhook.publicUrl as string, issued.token),
        }
      : defaults;

    // A created payment is one with an id and a link and no error shape, with or without
    // `result.success` (two documented answers lack it): refusing it would orphan a real payment.
    const json = await this.#call(
      'generatePayment',
      'POST',
      SERVICE_PATHS.generate,
      toPaymentWire(own, this.options.preAuthorizationFlag, fallback),
      undefined,
      isGenerated,
    );
    const payment = fromGeneratePaymentWire(json.result as JsonObject);
    if (!payment)
      throw unexpected(
        'generatePayment',
        'the payment id or the link is missing or malformed, or the tracking id is malformed',
      );

    await bounded(this.clock.sync(), this.clock).catch(() => undefined);
    const createdAt = this.clock.now();
    const offset = this.clock.offsetMs;
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
        if (issued) await this.store.saveBinding(issued.claims.nonce, binding, this.options.webhook.tokenTtlMs);
        // Late: a path that found it pending meanwhile may have queued it in the pending lane; kept.
        const late_ = late ? await lateEntry(this.store, binding, this.clock, offset) : undefined;
        if (!late || late_)
          await this.store.schedulePending(late_?.entry ?? { ...binding, checks: 0 }, dueAt + (late_?.shift ?? 0));
        await checkout?.();
      },
      dueAt,
    );
    return payment;
  }

  /** @inheritdoc */
  async verifyPayment(paymentId: string): Promise<VerifiedPayment> {
    checkId(paymentId, 'paymentId', 'verifyPayment');
    const json = await this.#call(
      'verifyPayment',
      'GET',
      SERVICE_PATHS.verify + encodeURIComponent(paymentId),
      undefined,
      undefined,
      isVerified,
    );
    const verified = fromVerifyWire(paymentId, json.result as JsonObject);
    if (!verified)
      throw unexpected(
        'verifyPayment',
        'the status or the amount is missing or malformed, or the tracking id or the type is malformed',
      );
    return verified;
  }

  /** @inheritdoc */
  async capturePayment(paymentId: string, options: { amount?: string | number } = {}): Promise<PaymentCapture> {
    checkId(paymentId, 'paymentId', 'capturePayment');
    const body: JsonObject = { payment_id: paymentId };
    if (options?.amount !== undefined && options.amount !== null) {
      const problem = millimes(options.amount);
      if (problem)
        throw new PaymentsValidationError([{ field: 'amount', messages: [problem] }], 'capturePayment input');
      body.amount = normalizeMillimes(options.amount);
    }
    const json = await this.#call(
      'capturePayment',
      'POST',
      SERVICE_PATHS.capture,
      body,
      undefined,
      (j) => isJsonObject(j.result) && (j.status === 'success' || j.result.status !== undefined),
    );
    const capture = fromCaptureWire(paymentId, json.result as JsonObject);
    if (!capture) throw unexpected('capturePayment', 'no status, or a malformed payment id');
    await this.events.emitOperation(
      PaymentEvents.CAPTURED,
      new PaymentCapturedEvent(
        capture.paymentId,
        capture.amount,
        capture.capturedAt,
        capture.status,
        this.options.name,
      ),
    );
    return capture;
  }

  /** @inheritdoc */
  /**
   * @inheritdoc
   * @param duplicateOf for the event: the payment that settled the order of this duplicate (default: from its record)
   */
  async refundPayment(paymentId: string, duplicateOf?: string): Promise<PaymentRefund> {
    checkId(paymentId, 'paymentId', 'refundPayment');
    const json = await this.#call(
      'refundPayment',
      'POST',
      SERVICE_PATHS.refund,
      { payment_id: paymentId },
      undefined,
      isFlatSuccess,
    );
    const refund = fromRefundWire(json.result as JsonObject);
    if (!refund) throw unexpected('refundPayment', 'no refund id, or the payment id is missing or malformed');
    const settledBy =
      duplicateOf ?? (await noteDuplicateRefund(this.store, refund, this.options.outcomeRecordTtlMs, this.clock));
    await this.events.emitOperation(
      PaymentEvents.REFUNDED,
      new PaymentRefundedEvent(
        refund.paymentId,
        refund.refundId,
        refund.amount,
        refund.refundedAt,
        this.options.name,
        settledBy,
      ),
    );
    return refund;
  }

  /** @inheritdoc */
  async cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    checkId(paymentId, 'paymentId', 'cancelPayment');
    const json = await this.#call(
      'cancelPayment',
      'POST',
      SERVICE_PATHS.cancel,
      { payment_id: paymentId },
      undefined,
      isFlatSuccess,
    );
    const cancellation = fromCancellationWire(json.result as JsonObject);
    if (!cancellation) throw unexpected('cancelPayment', 'the payment id is missing or malformed');
    await this.events.emitOperation(
      PaymentEvents.CANCELLED,
      new PaymentCancelledEvent(cancellation.paymentId, cancellation.cancelledAt, this.options.name),
    );
    return cancellation;
  }

  /** @inheritdoc */
  async listBindings(clientId: string): Promise<CardBinding[]> {
    checkId(clientId, 'clientId', 'listBindings');
    const json = await this.#call(
      'listBindings',
      'GET',
      SERVICE_PATHS.bindings,
      undefined,
      { client_id: clientId },
      (j) => isJsonObject(j.result) && j.result.success === true && Array.isArray(j.result.bindings),
    );
    const bindings = ((json.result as JsonObject).bindings as unknown[]).map(fromBindingWire);
    if (bindings.some((b) => b === undefined)) throw unexpected('listBindings', 'a binding without an id');
    return bindings as CardBinding[];
  }

  async #call(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    path: string,
    body: object | undefined,
    query: Record<string, string> | undefined,
    isSuccess: (json: JsonObject) => boolean,
  ): Promise<JsonObject> {
    if (!this.telemetry.active)
      return interpretResponse(
        operation,
        await this.transport.send({ operation, method, path, body, query }),
        isSuccess,
      );
    // Traced: a CLIENT span and the call's metrics (telemetry.otel.ts); the payment id stays out of the template.
    const template = path.startsWith(SERVICE_PATHS.verify) ? `${SERVICE_PATHS.verify}{payment_id}` : path;
    return this.telemetry.call(operation, method, template, async (stats) => {
      const response = await this.transport.send({ operation, method, path, body, query }, stats);
      stats.status = response.status;
      return interpretResponse(operation, response, isSuccess);
    });
  }
}

/** Keys set to undefined or null mean "not set": they must not hide the module's defaults. */
function isSet<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

function isVerified(json: JsonObject): boolean {
  return json.success === true && isJsonObject(json.result);
}

function isGenerated(json: JsonObject): boolean {
  return isJsonObject(json.result) && json.result.payment_id !== undefined && json.result.link !== undefined;
}

/** Refuses an id that is not one (PaymentsValidationError naming the field), before any call. */
export function checkId(value: unknown, field: string, operation: string): asserts value is string {
  // A payment id may go into a request path (verify); one rule for every operation taking one.
  const problem = field === 'paymentId' ? pathSegmentId(value) : identifier(value);
  if (problem) throw new PaymentsValidationError([{ field, messages: [problem] }], `${operation} input`);
}

function isFlatSuccess(json: JsonObject): boolean {
  return json.status === 'success' && isJsonObject(json.result);
}

function unexpected(operation: PaymentsOperation, what: string): PaymentsApiError {
  return new PaymentsApiError('INVALID_RESPONSE', {
    operation,
    httpStatus: 200,
    bodyExcerpt: `success answer without the expected fields: ${what}`,
  });
}
