import type { SharedClock } from '../time/index.js';
import { describe } from '../common/index.js';
import {
  PaymentCancelledEvent,
  PaymentCapturedEvent,
  PaymentEvents,
  PaymentRefundedEvent,
  type PaymentEventName,
  orderLedgerKey,
} from '../settlement/index.js';
import type { ResolvedPaymentsOptions } from './payments.options.js';
import { orderLedgerOf, type PaymentsStore } from '../store/index.js';
import type { TelemetryHooks } from '../telemetry/index.js';
import type { WebhookTokenSigner } from '../webhook/index.js';
import { PaymentGenerator } from './payments.generate.js';
import {
  callService,
  checkId,
  type ServiceCalls,
  isFlatSuccess,
  unexpected,
  type HttpTransport,
  normalizeMillimes,
  millimes,
  noteDuplicateRefund,
  noteCancellation,
  captureRefusal,
  bounded,
  PaymentsValidationError,
  type PaymentsOperation,
  type CardBinding,
  type GenerateOptions,
  type GeneratePaymentInput,
  type GeneratedPayment,
  type PaymentCancellation,
  type PaymentCapture,
  type PaymentRefund,
  type PaymentsOperations,
  type VerifiedPayment,
  fromBindingWire,
  fromCancellationWire,
  fromCaptureWire,
  isJsonObject,
  SERVICE_PATHS,
  type JsonObject,
} from '../api/index.js';

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
 * answer read (generatePayment's own path, with what the plugin must remember of a created
 * payment, is `PaymentGenerator`'s). A successful capture, refund or
 * cancellation emits its event, so Nest and Express hosts alike receive it.
 */
export class PaymentsApi implements Omit<PaymentsOperations, 'reconcilePayment'> {
  readonly #generator: PaymentGenerator;

  /**
   * @param options the resolved options (defaults of generatePayment, the webhook settings)
   * @param transport sends the requests
   * @param calls verify and refund, the calls the settlement shares
   * @param store bindings and the reconciliation queue
   * @param signer issues webhook tokens (absent when no secret is configured)
   * @param events where capture, refund and cancellation events go
   * @param telemetry what observes the calls
   * @param clock the time shared with the other instances (the queue's due times)
   */
  constructor(
    private readonly options: ResolvedPaymentsOptions,
    private readonly transport: HttpTransport,
    private readonly calls: ServiceCalls,
    private readonly store: PaymentsStore,
    private readonly signer: WebhookTokenSigner | undefined,
    private readonly events: OperationEvents,
    private readonly telemetry: TelemetryHooks,
    private readonly clock: SharedClock,
  ) {
    this.#generator = new PaymentGenerator(options, transport, store, signer, telemetry, clock);
  }

  /** Lets the store writes of created payments finish (each tried once more, then reported). */
  close(): Promise<void> {
    return this.#generator.close();
  }

  /** @inheritdoc */
  generatePayment(input: GeneratePaymentInput, settings: GenerateOptions = {}): Promise<GeneratedPayment> {
    return this.#generator.generatePayment(input, settings);
  }

  /** @inheritdoc */
  verifyPayment(paymentId: string): Promise<VerifiedPayment> {
    // The one verify every path shares (api/service.calls.ts): the settlement calls it directly.
    return this.calls.verify(paymentId);
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
    const order = await this.#refuseDuplicateCapture(paymentId);
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
    if (order) await this.#settleCapturedOrder(order, paymentId, capture.amount ?? order.amount);
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
  async refundPayment(paymentId: string): Promise<PaymentRefund> {
    const refund = await this.calls.refund(paymentId);
    // A duplicate refunded by hand (the settlement refunds its own and names the order's payment itself).
    const settledBy = await noteDuplicateRefund(this.store, refund, this.options.outcomeRecordTtlMs, this.clock);
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
    // Before the event: a handler that answers the customer's retry must find the payment closed.
    await this.#noteCancellation(paymentId);
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

  // One order, one charge: a pre-authorization whose order another payment paid is never captured.
  // A store that does not answer is reported and does not block the capture (the merchant asked
  // for it). Answers the order of the payment, when its record names one.
  async #refuseDuplicateCapture(paymentId: string): Promise<{ key: string; amount: string } | undefined> {
    const look = async () => {
      const record = await this.store.getOutcome(paymentId);
      const tracking = record?.developerTrackingId;
      const ledger = orderLedgerOf(this.store);
      const key = tracking === undefined ? undefined : orderLedgerKey(this.options.name, tracking);
      const held = key === undefined ? undefined : await ledger?.findOrderSettlement(key);
      return { record, held, key };
    };
    const found = await bounded(look(), this.clock).catch((error: unknown) => {
      this.options.logger.warn(
        `capturePayment: the store did not answer whether payment ${paymentId} is a duplicate; capturing it: ${describe(error)}`,
      );
      return undefined;
    });
    const refusal = captureRefusal(paymentId, found?.record, found?.held);
    if (refusal)
      throw new PaymentsValidationError([{ field: 'paymentId', messages: [refusal] }], 'capturePayment input');
    const amount = found?.record?.amount;
    return found?.key === undefined || amount === undefined ? undefined : { key: found.key, amount };
  }

  // A captured pre-authorization is its order's charge: it settles the order (first payment wins),
  // so that a later successful payment of the order is a duplicate. Reported, never thrown: the
  // capture has happened.
  async #settleCapturedOrder(order: { key: string }, paymentId: string, amount: string): Promise<void> {
    const ledger = orderLedgerOf(this.store);
    if (!ledger) return;
    const held = await bounded(
      ledger.settleOrder(
        order.key,
        { paymentId, amount: normalizeMillimes(amount) ?? amount },
        this.options.webhook.doneTtlMs,
      ),
      this.clock,
    ).catch((error: unknown) => {
      this.options.logger.warn(
        `capturePayment: payment ${paymentId} was captured, but the store did not record it as its order's payment: ${describe(error)}`,
      );
      return undefined;
    });
    if (held && held.paymentId !== paymentId)
      this.options.logger.error(
        `capturePayment: payment ${paymentId} was captured while payment ${held.paymentId} paid its order meanwhile: the order is charged twice`,
      );
  }

  // A cancelled payment is never answered to its order's next checkout (payments.cancellations.ts).
  // The cancellation has happened at the service: a store that fails the note is reported, not thrown.
  async #noteCancellation(paymentId: string): Promise<void> {
    await bounded(
      noteCancellation(this.store, this.options.name, paymentId, this.options.outcomeRecordTtlMs),
      this.clock,
    ).catch((error: unknown) =>
      this.options.logger.warn(
        `cancelPayment: payment ${paymentId} was cancelled, but the store did not record it: an open checkout of its order may answer its link until its session ends: ${describe(error)}`,
      ),
    );
  }

  #call(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    path: string,
    body: object | undefined,
    query: Record<string, string> | undefined,
    isSuccess: (json: JsonObject) => boolean,
  ): Promise<JsonObject> {
    return callService(this.transport, this.telemetry, { operation, method, path, body, query }, isSuccess);
  }
}
