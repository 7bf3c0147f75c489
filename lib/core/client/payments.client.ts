import { inspect } from 'node:util';
import type { AxiosAdapter } from 'axios';
import {
  HttpTransport,
  RETRY_POLICY,
  type CardBinding,
  type GenerateOptions,
  type GeneratePaymentInput,
  type GeneratedPayment,
  type PaymentCancellation,
  type PaymentCapture,
  type PaymentRefund,
  type PaymentsOperations,
  type ReconcileOptions,
  type ReconcileResult,
  type VerifiedPayment,
} from '../api/index.js';
import { PaymentsApi } from './payments.api.js';
import { checkId } from './payments.call.js';
import {
  type OperationDispatcher,
  type OutcomeDispatcher,
  ReconciliationScheduler,
  type ReconciliationRun,
  OrderScreen,
  PaymentReconciler,
  VerifyBudget,
  SettlementRunner,
  TracedSettlements,
  SETTLEMENT_WAITS,
  PendingRechecks,
} from '../settlement/index.js';
import {
  MemoryPaymentsStore,
  orderLedgerOf,
  type PaymentsStore,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
  isTransactional,
} from '../store/index.js';
import { PaymentsTelemetry, NO_TELEMETRY, type TelemetryHooks } from '../telemetry/index.js';
import { WebhookProcessor, WebhookTokenSigner } from '../webhook/index.js';
import { SharedClock } from '../time/index.js';
import type { PaymentsOptions, ResolvedPaymentsOptions } from './payments.options.js';
import { resolvePaymentsOptions } from './payments.resolver.js';

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
 * The framework-free client of the whole service, and the composition root of the engine: the
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
  readonly #orders?: OrderScreen;
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
    // The retry decision is handed to the transport here, one place to read it from the client.
    this.#transport = new HttpTransport({
      ...resolved,
      logger: resolved.logger,
      retry: RETRY_POLICY,
      clock: resolved.clock,
      adapter: seams.adapter,
      random: seams.random,
    });
    const signer =
      resolved.webhook.enabled && resolved.webhook.secret
        ? new WebhookTokenSigner(resolved.webhook.secret, {
            previousSecrets: resolved.webhook.previousSecrets,
            registration: resolved.name,
            clock: resolved.clock,
          })
        : undefined;
    // Due times and record ages are shared with the other instances: read on the store's clock.
    const shared = new SharedClock(resolved.clock, this.store.now ? () => this.store.now!() : undefined);
    const rechecks = new PendingRechecks(
      this.store,
      shared,
      resolved.reconciliation.graceSecs,
      (inMs) => this.#reconciliation.wakeIn(inMs),
      resolved.logger,
    );
    this.#telemetry = resolved.telemetry.enabled
      ? new PaymentsTelemetry(resolved.telemetry, {
          registration: resolved.name,
          baseUrl: resolved.baseUrl,
          store: this.store,
        })
      : NO_TELEMETRY;
    const verify = (paymentId: string) => this.#api.verifyPayment(paymentId);
    const ttls = { doneTtlMs: resolved.webhook.doneTtlMs, recordTtlMs: resolved.outcomeRecordTtlMs };
    const ledger = orderLedgerOf(this.store);
    // One confirmation per order (settlement.duplicates.ts), with every store that keeps orders.
    this.#orders =
      ledger &&
      new OrderScreen({
        ledger,
        store: this.store,
        transactional: isTransactional(this.store),
        ttls,
        refund: resolved.duplicates.refund,
        refundPayment: (paymentId, duplicateOf) => this.#api.refundPayment(paymentId, duplicateOf),
        registration: resolved.name,
        logger: resolved.logger,
        clock: shared,
      });
    this.#runner = new SettlementRunner(
      {
        leaseMs: resolved.webhook.leaseMs,
        ...ttls,
        registration: resolved.name,
        clock: shared,
        recheckSoon: (paymentId, expected, notBeforeMs) => void rechecks.note(paymentId, expected, notBeforeMs),
        orders: this.#orders,
      },
      this.store,
      verify,
      resolved.logger,
      new VerifyBudget(
        SETTLEMENT_WAITS.verifyIntervalMs,
        () => resolved.clock.now(),
        resolved.webhook.unsignedIntervalSecs * 1000,
      ),
    );
    // Telemetry wraps the runner from outside: every path settles through the wrapper.
    const settlements = resolved.telemetry.enabled
      ? new TracedSettlements(this.#runner, this.#telemetry)
      : this.#runner;
    this.#api = new PaymentsApi(resolved, this.#transport, this.store, signer, this.#runner, this.#telemetry, shared);
    this.#returnCheck = new PaymentReconciler(this.store, settlements, verify, resolved.logger, shared, this.#orders);
    this.webhooks = new WebhookProcessor(
      resolved.webhook,
      signer,
      this.store,
      settlements,
      resolved.logger,
      this.#telemetry,
      resolved.clock,
    );
    this.#reconciliation = new ReconciliationScheduler(
      resolved.reconciliation,
      Math.max(resolved.webhook.leaseMs * 2, 60_000),
      this.store,
      settlements,
      resolved.logger,
      this.#telemetry,
      resolved.outcomeRecordTtlMs,
      shared,
      rechecks,
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
   * Sets who runs the handlers of the outcomes' events (`payment.confirmed`, `.failed`, `.expired`, `.authorized`,
   * `.mismatch`, `.duplicate`) and, optionally, the operations' (`payment.captured`, `.refunded`, `.cancelled`),
   * and starts reconciliation, which needs them. The Nest module and the Express router call it;
   * until then payments are left unsettled (and retried), never dropped.
   * @param dispatcher runs an outcome's handlers
   * @param operations runs an operation's handlers; default: none
   * @internal
   */
  setOutcomeDispatcher(dispatcher: OutcomeDispatcher | undefined, operations?: OperationDispatcher): void {
    this.#runner.setDispatcher(dispatcher, operations);
    if (dispatcher && !this.#closing) this.#reconciliation.start();
  }

  /** @inheritdoc */
  generatePayment(input: GeneratePaymentInput, options?: GenerateOptions): Promise<GeneratedPayment> {
    return this.#api.generatePayment(input, options);
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
