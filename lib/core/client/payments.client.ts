import { inspect } from 'node:util';
import type { AxiosAdapter } from 'axios';
import type {
  HttpTransport,
  CardBinding,
  GenerateOptions,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  PaymentsOperations,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
} from '../api/index.js';
import type { PaymentsApi } from './payments.api.js';
import { checkId } from '../api/index.js';
import type {
  HandlerLookup,
  ReconciliationScheduler,
  ReconciliationRun,
  PaymentReconciler,
  SettlementRunner,
  StoryRecorder,
} from '../settlement/index.js';
import {
  MemoryPaymentsStore,
  type PaymentsStore,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
} from '../store/index.js';
import type { TelemetryHooks } from '../telemetry/index.js';
import type { WebhookProcessor } from '../webhook/index.js';
import type { PaymentsOptions, ResolvedPaymentsOptions } from './payments.options.js';
import { resolvePaymentsOptions } from './payments.resolver.js';
import { composeEngine } from './payments.engine.js';

/**
 * How many open clients use a store, kept on the store itself (several apps in one process may
 * share one store object, and the last client to close closes it). A registered symbol, not
 * enumerable: it never shows in the store's serialisation.
 */
const STORE_USERS = Symbol.for('nestjs-payments.storeUsers');

function storeUsers(store: PaymentsStore, delta: number): number {
  const holder = store as { [STORE_USERS]?: number };
  const users = (holder[STORE_USERS] ?? 0) + delta;
  Object.defineProperty(holder, STORE_USERS, { value: users, configurable: true, enumerable: false, writable: true });
  return users;
}

/**
 * The framework-free client of the whole service, and the composition root of the engine (wired by
 * `composeEngine`): the
 * service operations (`PaymentsApi`), the webhook front door (`WebhookProcessor`), the settlement
 * runner every path hands its payment to (`SettlementRunner`), the return check
 * (`PaymentReconciler`) and reconciliation (`ReconciliationScheduler`), all over one
 * store. `PaymentsService` (Nest) and `createPaymentsClient` (Express) are thin front ends over one
 * instance of it.
 */
export class PaymentsClient implements PaymentsOperations {
  /** Options after validation, defaults filled in. */
  readonly #options: ResolvedPaymentsOptions;
  readonly #transport: HttpTransport;
  readonly #api: PaymentsApi;
  readonly #runner: SettlementRunner;
  readonly #returnCheck: PaymentReconciler;
  readonly #reconciliation: ReconciliationScheduler;
  readonly #telemetry: TelemetryHooks;
  readonly #story: StoryRecorder | undefined;
  #closing?: Promise<void>;
  /** Bindings, claims, the reconciliation queue and the outcome record (the configured store, or an in-memory one). */
  readonly store: PaymentsStore;
  /** The webhook engine, shared by the Nest controller and the Express router. */
  readonly webhooks: WebhookProcessor;

  /**
   * @param options the plugin's options; validated here
   * @param seams what the engine's simulation replaces: how one HTTP attempt is sent (default axios'
   *   http adapter) and the retries' jitter (default `Math.random`); not for applications
   * @throws PaymentsValidationError naming each missing or invalid option
   */
  constructor(options: PaymentsOptions, seams: { adapter?: AxiosAdapter; random?: () => number } = {}) {
    const resolved = resolvePaymentsOptions(options);
    this.#options = resolved;
    this.store = resolved.store ?? new MemoryPaymentsStore();
    storeUsers(this.store, +1);
    ({
      transport: this.#transport,
      api: this.#api,
      runner: this.#runner,
      returnCheck: this.#returnCheck,
      reconciliation: this.#reconciliation,
      telemetry: this.#telemetry,
      webhooks: this.webhooks,
      story: this.#story,
    } = composeEngine(resolved, this.store, seams));
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
   * Registers the handlers of the payment events: the outcomes' (`payment.confirmed`, `.failed`,
   * `.expired`, `.authorized`, `.mismatch`, `.duplicate`) and the operations' (`payment.captured`,
   * `.refunded`, `.cancelled`), as a lookup the core asks when an event happens; and starts
   * reconciliation, which needs them. The Nest module, the Express router and the Vendure and
   * Medusa adapters call it; until then payments are left unsettled (and retried), never dropped.
   * @param lookup the handlers of each event name; `undefined`: none
   * @internal
   */
  setHandlers(lookup: HandlerLookup | undefined): void {
    this.#runner.setHandlers(lookup);
    if (lookup && !this.#closing) this.#reconciliation.start();
  }

  /** @inheritdoc */
  generatePayment(input: GeneratePaymentInput, options?: GenerateOptions): Promise<GeneratedPayment> {
    const generated = this.#api.generatePayment(input, options);
    const story = this.#story;
    if (story === undefined) return generated;
    return generated.then((payment) => {
      story.note(payment.paymentId, 'generate', 'created', `${input.amount} millimes`);
      return payment;
    });
  }

  /** @inheritdoc */
  verifyPayment(paymentId: string): Promise<VerifiedPayment> {
    return this.#api.verifyPayment(paymentId);
  }

  /** @inheritdoc */
  capturePayment(paymentId: string, options: { amount?: string | number } = {}): Promise<PaymentCapture> {
    return this.#api.capturePayment(paymentId, options);
  }

  /** @inheritdoc */
  async reconcilePayment(paymentId: string, options: ReconcileOptions = {}): Promise<ReconcileResult> {
    checkId(paymentId, 'paymentId', 'reconcilePayment');
    return this.#returnCheck.reconcile(paymentId, options);
  }

  /** @inheritdoc */
  refundPayment(paymentId: string): Promise<PaymentRefund> {
    return this.#api.refundPayment(paymentId);
  }

  /** @inheritdoc */
  cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    return this.#api.cancelPayment(paymentId);
  }

  /** @inheritdoc */
  listBindings(clientId: string): Promise<CardBinding[]> {
    return this.#api.listBindings(clientId);
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
    return this.#reconciliation.runOnce(now);
  }

  /**
   * Writes the payments' stories this client has noted and not yet written (they go to the store
   * in batches a few ms apart), so that a read that follows sees them: the payments desk calls it
   * before it reads a story or the charts. Never throws.
   * @internal
   */
  flushStories(): Promise<void> {
    return this.#story?.flush() ?? Promise.resolve();
  }

  /**
   * A text with this client's private key and webhook secrets cut out (in every encoding the
   * service's answers are searched for), for a page that shows what the service or a customer
   * wrote: the payments desk.
   * @internal
   */
  redactSecrets(text: string): string {
    return this.#transport.redact(text);
  }

  /**
   * Lets settlements in flight finish (new webhooks get 503), stops reconciliation, then closes
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
    await Promise.all([this.webhooks.drain(), this.#reconciliation.stop()]);
    // Returns (reconcilePayment) in flight too: the same runner, the same rule.
    await this.#runner.drain();
    // Store writes of created payments still waiting: tried once more while the store is open.
    await this.#api.close();
    // The stories noted so far, written while the store is open (best-effort: never throws).
    await this.#story?.flush();
    this.#telemetry.close();
    this.#transport.close();
    if (storeUsers(this.store, -1) <= 0) await this.store.close?.();
  }

  /** Shows what is safe to show: never the private key. */
  [inspect.custom](): string {
    return `PaymentsClient { baseUrl: '${this.#options.baseUrl}', publicKey: '${this.#options.publicKey}', webhooks: ${this.webhooksEnabled} }`;
  }

  /** Serialises without credentials. */
  toJSON(): Record<string, unknown> {
    return { baseUrl: this.#options.baseUrl, publicKey: this.#options.publicKey, webhooks: this.webhooksEnabled };
  }
}
