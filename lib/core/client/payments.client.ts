import { inspect } from 'node:util';
import { HttpTransport } from '../api/http.transport.js';
import { MemoryPaymentsStore } from '../store/memory.store.js';
import { normalizeMillimes } from '../api/money.util.js';
import { describe, OutcomeProcessor, type OutcomeDispatcher, type OutcomeExpectation } from '../settlement/settlement.runner.js';
import { checkPaymentInput, toPaymentWire } from '../api/payment.fields.js';
import { outcomeOf } from '../settlement/settlement.decision.js';
import { identifier, millimes } from '../api/payment.rules.js';
import {
  PaymentsApiError,
  PaymentsStoreUnavailableError,
  PaymentsValidationError,
  type PaymentsFieldError,
  type PaymentsOperation,
} from '../api/payments.errors.js';
import { PAYMENTS_DEFAULTS, resolvePaymentsOptions, type PaymentsOptions, type ResolvedPaymentsOptions } from './payments.options.js';
import type { OutcomePage, OutcomeQuery, OutcomeRecord, PaymentBinding, PaymentsStore } from '../store/payments.store.js';
import type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  PaymentsOperations,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
} from '../api/payments.types.js';
import { PaymentsTelemetry } from '../telemetry/payments.telemetry.js';
import { ReconciliationScheduler, type ReconciliationRun } from '../settlement/reconciliation.scheduler.js';
import { interpretResponse } from '../api/response.parser.js';
import { WebhookProcessor } from '../webhook/webhook.processor.js';
import { WebhookTokenSigner } from '../webhook/webhook.token.js';
import {
  fromBindingWire,
  fromCancellationWire,
  fromCaptureWire,
  fromGeneratePaymentWire,
  fromRefundWire,
  fromVerifyWire,
  isJsonObject,
  type JsonObject,
} from '../api/wire.mapper.js';

/** The service's paths (interface spec §4, public-api-facts §1 and §5). */
export const SERVICE_PATHS = {
  generate: '/api/v2/generate_payment',
  verify: '/api/v2/verify_payment/',
  capture: '/api/v2/confirm_payment',
  refund: '/api/v2/refund_payment',
  cancel: '/api/v2/cancel_payment',
  bindings: '/api/v2/bindings/list',
} as const;

/** How long `reconcilePayment` waits for another path that is handling the same payment. */
const RETURN_WAIT_MS = 3_000;
const RETURN_POLL_MS = 150;
/**
 * A payment verified as still pending this recently is answered from the record: a return page
 * that reloads every few seconds must not turn into a verify call per reload (the service
 * rate-limits verify).
 */
const PENDING_RECHECK_MS = 10_000;

/** The largest epoch time in ms a Date can hold. */
const MAX_DATE_MS = 8.64e15;

/** How many open clients use each store: one store shared by several apps closes with the last. */
const storeUsers = new WeakMap<PaymentsStore, number>();

/**
 * The framework-free client of the whole service: its operations, the signed webhook tokens they
 * issue, the outcome engine every confirmation path goes through, and reconciliation.
 * `PaymentsService` (Nest) and `createPaymentsClient` (Express) are thin front ends over one
 * instance of it.
 */
export class PaymentsClient implements PaymentsOperations {
  /** Options after validation, defaults filled in. */
  readonly #options: ResolvedPaymentsOptions;
  readonly #transport: HttpTransport;
  readonly #signer?: WebhookTokenSigner;
  readonly #outcomes: OutcomeProcessor;
  readonly #reconciler: ReconciliationScheduler;
  readonly #telemetry: PaymentsTelemetry;
  #closing?: Promise<void>;
  /** Bindings, claims, the reconciliation queue and the outcome record (the configured store, or an in-memory one). */
  readonly store: PaymentsStore;
  /** The webhook engine, shared by the Nest controller and the Express router. */
  readonly webhooks: WebhookProcessor;

  /**
   * @param options the plugin's options; validated here
   * @throws PaymentsValidationError naming each missing or invalid option
   */
  constructor(options: PaymentsOptions) {
    const resolved = resolvePaymentsOptions(options);
    this.#options = resolved;
    this.store = resolved.store ?? new MemoryPaymentsStore();
    storeUsers.set(this.store, (storeUsers.get(this.store) ?? 0) + 1);
    this.#transport = new HttpTransport({ ...resolved, logger: resolved.logger });
    if (resolved.webhook.enabled && resolved.webhook.secret) this.#signer = new WebhookTokenSigner(resolved.webhook.secret);
    this.#telemetry = resolved.telemetry.enabled
      ? new PaymentsTelemetry(resolved.telemetry, { registration: resolved.name, baseUrl: resolved.baseUrl, store: this.store })
      : PaymentsTelemetry.off;
    this.#outcomes = new OutcomeProcessor(
      { leaseMs: resolved.webhook.leaseMs, doneTtlMs: resolved.webhook.doneTtlMs, recordTtlMs: resolved.outcomeRecordTtlMs, registration: resolved.name },
      this.store,
      (paymentId) => this.verifyPayment(paymentId),
      resolved.logger,
      this.#telemetry,
    );
    this.webhooks = new WebhookProcessor(resolved.webhook, this.#signer, this.store, this.#outcomes, resolved.logger);
    this.webhooks.telemetry = this.#telemetry;
    this.#reconciler = new ReconciliationScheduler(
      resolved.reconciliation,
      Math.max(resolved.webhook.leaseMs * 2, 60_000),
      this.store,
      this.#outcomes,
      resolved.logger,
      this.#telemetry,
    );
  }

  /** The registration's name, when the options gave one. */
  get name(): string | undefined {
    return this.#options.name;
  }

  /** The resolved webhook route path (without leading slash), e.g. `payments/webhook`. */
  get webhookPath(): string {
    return this.#options.webhook.path;
  }

  /** Whether the webhook route is served: signed webhooks configured, or unsigned ones accepted. */
  get webhooksEnabled(): boolean {
    return this.#options.webhook.enabled || this.#options.webhook.acceptUnsigned;
  }

  /** Largest accepted webhook body, in bytes. */
  get webhookMaxBodyBytes(): number {
    return this.#options.webhook.maxBodyBytes;
  }

  /**
   * Sets who runs the outcome handlers (`payment.confirmed`, `.failed`, `.expired`, `.authorized`,
   * `.mismatch`) and starts reconciliation, which needs them. The Nest module and the Express
   * router call it; until then outcomes are left undone (and retried), never dropped.
   */
  setOutcomeDispatcher(dispatcher: OutcomeDispatcher | undefined): void {
    this.#outcomes.setDispatcher(dispatcher);
    if (dispatcher && !this.#closing) this.#reconciler.start();
  }

  /** @inheritdoc */
  async generatePayment(input: GeneratePaymentInput): Promise<GeneratedPayment> {
    const merged = (isJsonObject(input) ? { ...this.#options.defaults, ...withoutUnset(input) } : input) as GeneratePaymentInput;
    const errors = checkPaymentInput(merged);
    if (errors.length > 0) throw new PaymentsValidationError(errors, 'generatePayment input');

    const amount = normalizeMillimes(merged.amount) as string;
    const issued =
      merged.webhook == null && this.#signer ? this.#signer.issue(amount, merged.developerTrackingId, this.#options.webhook.tokenTtlMs) : undefined;
    if (issued) merged.webhook = WebhookTokenSigner.urlWithToken(this.#options.webhook.publicUrl as string, issued.token);

    // A created payment is one with an id and a link and no error shape, with or without
    // `result.success` (two documented answers lack it): refusing it would orphan a real payment.
    const json = await this.#call(
      'generatePayment',
      'POST',
      SERVICE_PATHS.generate,
      toPaymentWire(merged, this.#options.preAuthorizationFlag),
      undefined,
      (j) => isJsonObject(j.result) && j.result.payment_id !== undefined && j.result.link !== undefined,
    );
    const payment = fromGeneratePaymentWire(json.result as JsonObject);
    if (!payment) throw unexpected('generatePayment', 'the payment id or the link is missing or malformed, or the tracking id is malformed');

    const createdAt = Date.now();
    const sessionSecs = merged.sessionTimeoutSecs ?? PAYMENTS_DEFAULTS.serviceSessionTimeoutSecs;
    // Any positive safe integer is a valid session length; beyond the last date a Date can hold
    // (year 275760) toISOString() would throw after the payment was created, orphaning it.
    const at = (ms: number) => Math.min(ms, MAX_DATE_MS);
    const binding: PaymentBinding = {
      paymentId: payment.paymentId,
      amount,
      createdAt: new Date(createdAt).toISOString(),
      sessionEndsAt: new Date(at(createdAt + sessionSecs * 1000)).toISOString(),
    };
    if (merged.developerTrackingId != null) binding.developerTrackingId = merged.developerTrackingId;
    try {
      if (issued) await this.store.saveBinding(issued.claims.nonce, binding, this.#options.webhook.tokenTtlMs);
      await this.store.schedulePending({ ...binding, checks: 0 }, at(createdAt + (sessionSecs + this.#options.reconciliation.graceSecs) * 1000));
    } catch (error) {
      throw new PaymentsStoreUnavailableError(payment.paymentId, describe(error));
    }
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
      (j) => j.success === true && isJsonObject(j.result),
    );
    const verified = fromVerifyWire(paymentId, json.result as JsonObject);
    if (!verified) throw unexpected('verifyPayment', 'the status or the amount is missing or malformed, or the tracking id or the type is malformed');
    return verified;
  }

  /** @inheritdoc */
  async capturePayment(paymentId: string, options: { amount?: string | number } = {}): Promise<PaymentCapture> {
    checkId(paymentId, 'paymentId', 'capturePayment');
    const body: JsonObject = { payment_id: paymentId };
    if (options?.amount !== undefined && options.amount !== null) {
      const problem = millimes(options.amount);
      if (problem) throw new PaymentsValidationError([{ field: 'amount', messages: [problem] }], 'capturePayment input');
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
    return capture;
  }

  /** @inheritdoc */
  async reconcilePayment(paymentId: string, options: ReconcileOptions = {}): Promise<ReconcileResult> {
    checkId(paymentId, 'paymentId', 'reconcilePayment');
    const recent = await this.store.getOutcome(paymentId).catch(() => undefined);
    if (recent?.outcome === 'pending' && Date.now() - Date.parse(recent.updatedAt) < PENDING_RECHECK_MS) {
      return { paymentId, status: recent.status, outcome: 'pending', handled: false };
    }
    const expected = await this.#expectationFor(paymentId, options);
    const result = await this.#outcomes.settle(paymentId, options.source ?? 'return', expected);
    if ((result.kind === 'handled' || result.kind === 'handlers-failed') && expected?.amount === undefined) {
      // Nothing said what amount was asked for (no `expected`, and the memory store lost its
      // record in a restart, or reconciliation gave up on it): whoever reads the logs must know.
      this.#options.logger.warn(
        `reconcilePayment: payment ${paymentId} was settled without comparing its amount (${result.verification.amount} verified): nothing recorded it; pass expected.amount`,
      );
    }
    switch (result.kind) {
      case 'handled':
        return { paymentId, status: result.verification.status, outcome: result.outcome, handled: true };
      case 'pending':
        return { paymentId, status: result.verification.status, outcome: 'pending', handled: false };
      case 'mismatch':
        return { paymentId, status: result.verification.status, outcome: 'mismatch', handled: false };
      case 'handlers-failed':
        return { paymentId, status: result.verification.status, outcome: result.outcome, handled: false, error: result.error };
      case 'duplicate':
        return this.#doneOutcome(paymentId);
      case 'busy':
        return this.#awaitOther(paymentId);
      case 'verify-failed':
        throw result.error;
      case 'store-unavailable':
        throw new PaymentsStoreUnavailableError(paymentId, result.error, 'reconcilePayment');
      case 'foreign':
        // The caller's expectation names another payment (an edited return URL, a wrong id):
        // not this payment's outcome, so nothing was recorded or emitted and nothing ran.
        this.#options.logger.warn(`reconcilePayment: payment ${paymentId} is not the one expected (${result.problems.join('; ')}); nothing recorded`);
        return { paymentId, status: result.verification?.status ?? '', outcome: 'mismatch', handled: false };
    }
  }

  /** @inheritdoc */
  async refundPayment(paymentId: string): Promise<PaymentRefund> {
    checkId(paymentId, 'paymentId', 'refundPayment');
    const json = await this.#call('refundPayment', 'POST', SERVICE_PATHS.refund, { payment_id: paymentId }, undefined, isFlatSuccess);
    const refund = fromRefundWire(json.result as JsonObject);
    if (!refund) throw unexpected('refundPayment', 'no refund id, or the payment id is missing or malformed');
    return refund;
  }

  /** @inheritdoc */
  async cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    checkId(paymentId, 'paymentId', 'cancelPayment');
    const json = await this.#call('cancelPayment', 'POST', SERVICE_PATHS.cancel, { payment_id: paymentId }, undefined, isFlatSuccess);
    const cancellation = fromCancellationWire(json.result as JsonObject);
    if (!cancellation) throw unexpected('cancelPayment', 'the payment id is missing or malformed');
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

  /** The record of a payment's outcome (what was verified, by which path, how its handlers did). */
  getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    checkId(paymentId, 'paymentId', 'getOutcome');
    return this.store.getOutcome(paymentId);
  }

  /** Records of outcomes, newest first; e.g. `{ handlers: 'failed' }` lists those to retry with `reconcilePayment`. */
  listOutcomes(query?: OutcomeQuery): Promise<OutcomePage> {
    return this.store.listOutcomes(query);
  }

  /** How many payments await reconciliation (the backlog). */
  countPending(): Promise<number> {
    return this.store.countPending();
  }

  /** Runs one reconciliation pass now (the timer does it every `intervalSecs`); for tests and admin tools. */
  runReconciliation(now?: number): Promise<ReconciliationRun> {
    return this.#reconciler.runOnce(now);
  }

  /**
   * Lets outcomes in flight finish (new webhooks get 503), stops reconciliation, then closes
   * keep-alive sockets and the store's own connections. Call on shutdown; idempotent. A store
   * shared with other clients (several apps in one process) is closed by the last of them.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // Outcomes in flight finish first (their handlers may still call the service, and must be
    // marked done in a store that is still open); new webhooks get 503 and are delivered again.
    await Promise.all([this.webhooks.drain(), this.#reconciler.stop()]);
    // Returns (reconcilePayment) in flight too: the same outcome engine, the same rule.
    await this.#outcomes.drain();
    this.#telemetry.close();
    this.#transport.close();
    const users = (storeUsers.get(this.store) ?? 1) - 1;
    storeUsers.set(this.store, users);
    if (users <= 0) await this.store.close?.();
  }

  /** Shows what is safe to show: never the private key. */
  [inspect.custom](): string {
    return `PaymentsClient { baseUrl: '${this.#options.baseUrl}', publicKey: '${this.#options.publicKey}', webhooks: ${this.webhooksEnabled} }`;
  }

  /** Serialises without credentials. */
  toJSON(): Record<string, unknown> {
    return { baseUrl: this.#options.baseUrl, publicKey: this.#options.publicKey, webhooks: this.webhooksEnabled };
  }

  /**
   * What the verified answer must match: the caller's `expected` merged field by field with what
   * the plugin recorded at generation (the pending entry), so that passing only a tracking id
   * still has the amount checked. A caller's value that contradicts the record means the caller
   * names another payment than it thinks (a return URL's `payment_id` is the customer's to edit):
   * refused before any claim or verify call, so that payment's own outcome stays untouched.
   */
  async #expectationFor(paymentId: string, options: ReconcileOptions): Promise<OutcomeExpectation | undefined> {
    const given = options.expected ?? {};
    const problem = given.amount === undefined || given.amount === null ? undefined : millimes(given.amount);
    if (problem) throw new PaymentsValidationError([{ field: 'expected.amount', messages: [problem] }], 'reconcilePayment input');
    const givenAmount = given.amount === undefined || given.amount === null ? undefined : normalizeMillimes(given.amount);
    const givenTracking = given.developerTrackingId ?? undefined;
    const pending = await this.store.findPending(paymentId).catch(() => undefined);

    const conflicts: PaymentsFieldError[] = [];
    if (pending && givenAmount !== undefined && givenAmount !== pending.amount) {
      conflicts.push({ field: 'expected.amount', messages: [`differs from the amount payment ${paymentId} was generated with`] });
    }
    if (pending && givenTracking !== undefined && givenTracking !== pending.developerTrackingId) {
      conflicts.push({ field: 'expected.developerTrackingId', messages: [`differs from the tracking id payment ${paymentId} was generated with`] });
    }
    if (conflicts.length > 0) throw new PaymentsValidationError(conflicts, 'reconcilePayment input');

    const amount = givenAmount ?? pending?.amount;
    const developerTrackingId = givenTracking ?? pending?.developerTrackingId;
    if (amount === undefined && developerTrackingId === undefined) return undefined;
    // Values the caller passed are backed when they agree with the record (checked above).
    return { amount, developerTrackingId, origin: pending ? 'binding' : 'caller' };
  }

  // Done earlier by another path: the record says what it was, without a call to the service.
  async #doneOutcome(paymentId: string): Promise<ReconcileResult> {
    const record = await this.store.getOutcome(paymentId).catch(() => undefined);
    if (record) return { paymentId, status: record.status, outcome: record.outcome, handled: false };
    const verified = await this.verifyPayment(paymentId);
    return { paymentId, status: verified.status, outcome: outcomeOf(verified.status), handled: false };
  }

  // Another path (usually the webhook) is handling it right now: a customer back on the return
  // page is worth a short wait for its result rather than a "still processing".
  async #awaitOther(paymentId: string): Promise<ReconcileResult> {
    const { settled, record } = await this.#outcomes.awaitOutcome(paymentId, RETURN_WAIT_MS, RETURN_POLL_MS);
    if (settled && record) return { paymentId, status: record.status, outcome: record.outcome, handled: false };
    // Still in another path's hands: not settled yet, with the last status the service sent (an
    // earlier attempt's record), or '' when none is known; never a status the service did not send.
    return { paymentId, status: record?.status ?? '', outcome: 'pending', handled: false };
  }

  async #call(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    path: string,
    body: object | undefined,
    query: Record<string, string> | undefined,
    isSuccess: (json: JsonObject) => boolean,
  ): Promise<JsonObject> {
    if (!this.#telemetry.active) return interpretResponse(operation, await this.#transport.send({ operation, method, path, body, query }), isSuccess);
    // Traced: a CLIENT span and the call's metrics (payments.telemetry.ts); the payment id stays out of the template.
    const template = path.startsWith(SERVICE_PATHS.verify) ? `${SERVICE_PATHS.verify}{payment_id}` : path;
    return this.#telemetry.call(operation, method, template, async (stats) => {
      const response = await this.#transport.send({ operation, method, path, body, query }, stats);
      stats.status = response.status;
      return interpretResponse(operation, response, isSuccess);
    });
  }
}

/** Keys set to undefined or null mean "not set": they must not hide the module's defaults. */
function withoutUnset(input: object): Partial<GeneratePaymentInput> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined && v !== null));
}

function checkId(value: unknown, field: string, operation: string): asserts value is string {
  const problem = identifier(value);
  if (problem) throw new PaymentsValidationError([{ field, messages: [problem] }], `${operation} input`);
}

function isFlatSuccess(json: JsonObject): boolean {
  return json.status === 'success' && isJsonObject(json.result);
}

function unexpected(operation: PaymentsOperation, what: string): PaymentsApiError {
  return new PaymentsApiError('INVALID_RESPONSE', { operation, httpStatus: 200, bodyExcerpt: `success answer without the expected fields: ${what}` });
}
