import { inspect } from 'node:util';
import { HttpTransport } from './http.transport.js';
import { MemoryPaymentsStore } from './memory.store.js';
import { normalizeMillimes } from './money.util.js';
import { PaymentsApiError, PaymentsError, type PaymentsOperation } from './payments.errors.js';
import { resolvePaymentsOptions, type PaymentsOptions, type ResolvedPaymentsOptions } from './payments.options.js';
import type { PaymentsStore } from './payments.store.js';
import type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentRefund,
  PaymentsOperations,
} from './payments.types.js';
import { validateClientId, validateGeneratePayment, validatePaymentId } from './payments.validator.js';
import { interpretResponse } from './response.parser.js';
import { WebhookProcessor } from './webhook.processor.js';
import { WebhookTokenSigner } from './webhook.token.js';
import { fromBindingWire, fromCancellationWire, fromGeneratePaymentWire, fromRefundWire, isJsonObject, toGeneratePaymentWire, type JsonObject } from './wire.mapper.js';

const PATHS = {
  generate: '/api/v2/generate_payment',
  refund: '/api/v2/refund_payment',
  cancel: '/api/v2/cancel_payment',
  bindings: '/api/v2/bindings/list',
} as const;

const DEFAULTED_FIELDS = ['successLink', 'failLink', 'acceptCard', 'sessionTimeoutSecs', 'imageUrl'] as const;

/** How many open clients use each store: one store shared by several apps closes with the last. */
const storeUsers = new WeakMap<PaymentsStore, number>();

/**
 * The framework-free client of the whole service: the four operations, the signed webhook
 * tokens they issue, and the webhook engine that checks them. `PaymentsService` (Nest) and
 * `createPaymentsClient` (Express) are thin front ends over one instance of it.
 */
export class PaymentsClient implements PaymentsOperations {
  /** Options after validation, defaults filled in. */
  readonly #options: ResolvedPaymentsOptions;
  readonly #transport: HttpTransport;
  readonly #signer?: WebhookTokenSigner;
  /** Whether the store was created here (no `store` option) rather than passed in by the host. */
  readonly #ownsStore: boolean;
  #closing?: Promise<void>;
  /** Bindings and delivery claims (the configured store, or an in-memory one). */
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
    this.#ownsStore = resolved.store === undefined;
    storeUsers.set(this.store, (storeUsers.get(this.store) ?? 0) + 1);
    this.#transport = new HttpTransport({ ...resolved, logger: resolved.logger });
    if (resolved.webhook.enabled && resolved.webhook.secret) this.#signer = new WebhookTokenSigner(resolved.webhook.secret);
    this.webhooks = new WebhookProcessor(resolved.webhook, this.store, resolved.logger);
  }

  /** The resolved webhook route path (without leading slash), e.g. `payments/webhook`. */
  get webhookPath(): string {
    return this.#options.webhook.path;
  }

  /** Whether signed webhooks are configured (publicUrl and secret set). */
  get webhooksEnabled(): boolean {
    return this.#options.webhook.enabled;
  }

  /** Largest accepted webhook body, in bytes. */
  get webhookMaxBodyBytes(): number {
    return this.#options.webhook.maxBodyBytes;
  }

  /** @inheritdoc */
  async generatePayment(input: GeneratePaymentInput): Promise<GeneratedPayment> {
    const merged: GeneratePaymentInput = typeof input === 'object' && input !== null ? { ...input } : input;
    if (typeof merged === 'object' && merged !== null) {
      for (const field of DEFAULTED_FIELDS) {
        const fallback = this.#options.defaults[field];
        if ((merged[field] === undefined || merged[field] === null) && fallback !== undefined) {
          (merged as unknown as Record<string, unknown>)[field] = fallback;
        }
      }
    }
    validateGeneratePayment(merged);

    // The plugin's own signed URL, unless the caller chose a webhook URL (then verifying it is theirs).
    const issued = merged.webhook == null && this.#signer ? this.#signer.issue() : undefined;
    if (issued) merged.webhook = WebhookTokenSigner.urlWithToken(this.#options.webhook.publicUrl as string, issued.token);

    const json = await this.#call('generatePayment', 'POST', PATHS.generate, toGeneratePaymentWire(merged), undefined, (j) =>
      isJsonObject(j.result) && j.result.success === true,
    );
    const payment = fromGeneratePaymentWire(json.result as JsonObject);
    if (!payment) throw unexpected('generatePayment');

    if (issued) {
      const binding = {
        paymentId: payment.paymentId,
        amount: normalizeMillimes(merged.amount) as string,
        developerTrackingId: merged.developerTrackingId ?? undefined,
        createdAt: new Date().toISOString(),
      };
      try {
        await this.store.saveBinding(issued.nonce, binding, this.#options.webhook.tokenTtlMs);
      } catch {
        // Without the binding its confirmation would be refused; failing now keeps the customer
        // from paying a payment whose confirmation would be lost.
        throw new PaymentsError(
          `generatePayment: payment ${payment.paymentId} was created but its webhook token could not be stored; do not redirect the customer to it`,
          'STORE_UNAVAILABLE',
        );
      }
    }
    return payment;
  }

  /** @inheritdoc */
  async refundPayment(paymentId: string): Promise<PaymentRefund> {
    validatePaymentId(paymentId, 'refundPayment');
    const json = await this.#call('refundPayment', 'POST', PATHS.refund, { payment_id: paymentId }, undefined, isFlatSuccess);
    const refund = fromRefundWire(json.result as JsonObject);
    if (!refund) throw unexpected('refundPayment');
    return refund;
  }

  /** @inheritdoc */
  async cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    validatePaymentId(paymentId, 'cancelPayment');
    const json = await this.#call('cancelPayment', 'POST', PATHS.cancel, { payment_id: paymentId }, undefined, isFlatSuccess);
    const cancellation = fromCancellationWire(json.result as JsonObject);
    if (!cancellation) throw unexpected('cancelPayment');
    return cancellation;
  }

  /** @inheritdoc */
  async listBindings(clientId: string): Promise<CardBinding[]> {
    validateClientId(clientId);
    const json = await this.#call('listBindings', 'GET', PATHS.bindings, undefined, { client_id: clientId }, (j) =>
      isJsonObject(j.result) && j.result.success === true && Array.isArray(j.result.bindings),
    );
    const bindings = ((json.result as JsonObject).bindings as unknown[]).map(fromBindingWire);
    if (bindings.some((b) => b === undefined)) throw unexpected('listBindings');
    return bindings as CardBinding[];
  }

  /**
   * Lets webhook confirmations in flight finish (new ones get 503), then closes keep-alive sockets
   * and the store's own connections. Call on shutdown; idempotent.
   * A store shared with other clients (several apps in one process) is closed by the last of
   * them. An in-memory store passed in is left as it is: it holds no connection, and closing it
   * would only drop the bindings and done markers that another app given the same store needs.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // Confirmations in flight finish first (their handlers may still call the service, and must
    // be marked done in a store that is still open); new ones get 503 and are delivered again.
    await this.webhooks.drain();
    this.#transport.close();
    const users = (storeUsers.get(this.store) ?? 1) - 1;
    storeUsers.set(this.store, users);
    if (users > 0) return;
    if (!this.#ownsStore && this.store instanceof MemoryPaymentsStore) return;
    await this.store.close?.();
  }

  /** Shows what is safe to show: never the private key. */
  [inspect.custom](): string {
    return `PaymentsClient { baseUrl: '${this.#options.baseUrl}', publicKey: '${this.#options.publicKey}', webhooks: ${this.webhooksEnabled} }`;
  }

  /** Serialises without credentials. */
  toJSON(): Record<string, unknown> {
    return { baseUrl: this.#options.baseUrl, publicKey: this.#options.publicKey, webhooks: this.webhooksEnabled };
  }

  async #call(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    path: string,
    body: object | undefined,
    query: Record<string, string> | undefined,
    isSuccess: (json: JsonObject) => boolean,
  ): Promise<JsonObject> {
    const response = await this.#transport.send({ operation, method, path, body, query });
    return interpretResponse(operation, response, isSuccess);
  }
}

function isFlatSuccess(json: JsonObject): boolean {
  return json.status === 'success' && isJsonObject(json.result);
}

function unexpected(operation: PaymentsOperation): PaymentsApiError {
  return new PaymentsApiError('INVALID_RESPONSE', { operation, httpStatus: 200, bodyExcerpt: 'success answer without the expected fields' });
}
