import { hostname } from 'node:os';
import type { AxiosAdapter } from 'axios';
import { HttpTransport, RETRY_POLICY, ServiceCalls } from '../api/index.js';
import {
  ReconciliationScheduler,
  OrderScreen,
  PaymentReconciler,
  VerifyBudget,
  SettlementRunner,
  TracedSettlements,
  SETTLEMENT_WAITS,
  PendingRechecks,
  UnboundTokens,
  StoryRecorder,
  StorySettlements,
} from '../settlement/index.js';
import { orderLedgerOf, type PaymentsStore, isTransactional, storyLogOf } from '../store/index.js';
import { PaymentsTelemetry, NO_TELEMETRY, type TelemetryHooks } from '../telemetry/index.js';
import { WebhookProcessor, WebhookTokenSigner } from '../webhook/index.js';
import { monotonicNow, SharedClock } from '../time/index.js';
import { PaymentsApi } from './payments.api.js';
import { PAYMENTS_DEFAULTS, type ResolvedPaymentsOptions } from './payments.options.js';

/** What the client runs on: the engine's parts, wired over one store. */
export interface PaymentsEngine {
  /** Sends the requests to the service. */
  transport: HttpTransport;
  /** The service's operations. */
  api: PaymentsApi;
  /** The settlement runner every path hands its payment to. */
  runner: SettlementRunner;
  /** The return check (`reconcilePayment`). */
  returnCheck: PaymentReconciler;
  /** Reconciliation of the payments left pending. */
  reconciliation: ReconciliationScheduler;
  /** What observes the calls and settlements. */
  telemetry: TelemetryHooks;
  /** The webhook engine. */
  webhooks: WebhookProcessor;
  /** Notes the payments' stories, when the store keeps them (see settlement.story.ts). */
  story?: StoryRecorder;
}

/**
 * Builds the engine over one store: the transport, the webhook signer, the settlement runner (with the
 * order screen when the store keeps orders), the operations, the return check, the webhook processor and
 * reconciliation, each handed what it settles through (the runner, traced when telemetry is on).
 * @param resolved the options after validation
 * @param store the store every part shares
 * @param seams how one HTTP attempt is sent and the retries' jitter (the simulation's)
 */
export function composeEngine(
  resolved: ResolvedPaymentsOptions,
  store: PaymentsStore,
  seams: { adapter?: AxiosAdapter; random?: () => number },
): PaymentsEngine {
  // The retry decision is handed to the transport here, one place to read it from the client.
  const transport = new HttpTransport({
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
  const shared = new SharedClock(resolved.clock, store.now ? () => store.now!() : undefined);
  const rechecks = new PendingRechecks(
    store,
    shared,
    resolved.reconciliation.graceSecs,
    (inMs) => reconciliation.wakeIn(inMs),
    resolved.logger,
    resolved.defaults.sessionTimeoutSecs ?? PAYMENTS_DEFAULTS.serviceSessionTimeoutSecs,
  );
  const telemetry = resolved.telemetry.enabled
    ? new PaymentsTelemetry(resolved.telemetry, {
        registration: resolved.name,
        baseUrl: resolved.baseUrl,
        store,
      })
    : NO_TELEMETRY;
  // Every path verifies through the api layer's call, downward: never through the client's operations.
  const calls = new ServiceCalls(transport, telemetry);
  const ttls = { doneTtlMs: resolved.webhook.doneTtlMs, recordTtlMs: resolved.outcomeRecordTtlMs };
  // The budget measures durations only: on monotonic time, so a stepped wall clock neither
  // stretches a 429's pause to the step's length nor ends it early.
  const budget = new VerifyBudget(
    SETTLEMENT_WAITS.verifyIntervalMs,
    // Bound, not wrapped: the budget reads the time layer's clock directly, no client code on a path.
    monotonicNow.bind(undefined, resolved.clock),
    resolved.webhook.unsignedIntervalSecs * 1000,
  );
  const ledger = orderLedgerOf(store);
  // One confirmation per order (settlement.duplicates.ts), with every store that keeps orders.
  const orders: OrderScreen | undefined =
    ledger &&
    new OrderScreen({
      ledger,
      store,
      transactional: isTransactional(store),
      ttls,
      refund: resolved.duplicates.refund,
      refunder: calls,
      noteRefundFailure: (error) => budget.noteRefund(error),
      registration: resolved.name,
      logger: resolved.logger,
      clock: shared,
    });
  const runner: SettlementRunner = new SettlementRunner(
    {
      leaseMs: resolved.webhook.leaseMs,
      handlerTimeoutMs: resolved.handlers.timeoutMs,
      ...ttls,
      registration: resolved.name,
      clock: shared,
      recheckSoon: (paymentId, expected, notBeforeMs, evidence) =>
        void rechecks.note(paymentId, expected, notBeforeMs, evidence),
      orders: orders,
      inbox: resolved.inbox,
      unbound: new UnboundTokens(store, resolved.webhook.unsignedIntervalSecs, resolved.logger, resolved.clock),
    },
    store,
    calls,
    resolved.logger,
    budget,
  );
  // Telemetry wraps the runner from outside: every path settles through the wrapper.
  const traced = resolved.telemetry.enabled ? new TracedSettlements(runner, telemetry) : runner;
  // The payments' stories, when the store keeps them: noted around every settle and webhook answer.
  const story = storyRecorder(resolved, store, transport);
  const settlements = story ? new StorySettlements(traced, story) : traced;
  const api: PaymentsApi = new PaymentsApi(resolved, transport, calls, store, signer, runner, telemetry, shared);
  const returnCheck = new PaymentReconciler(
    store,
    settlements,
    calls,
    resolved.logger,
    shared,
    orders,
    (id) => void rechecks.note(id, undefined),
    resolved.reconciliation.graceSecs,
  );
  const webhooks = new WebhookProcessor(
    resolved.webhook,
    signer,
    store,
    settlements,
    resolved.logger,
    story ? story.webhookHooks(telemetry) : telemetry,
  );
  const reconciliation = new ReconciliationScheduler(
    resolved.reconciliation,
    Math.max(resolved.webhook.leaseMs * 2, 60_000),
    store,
    settlements,
    resolved.logger,
    telemetry,
    resolved.outcomeRecordTtlMs,
    shared,
    rechecks,
  );
  return { transport, api, runner, returnCheck, reconciliation, telemetry, webhooks, story };
}

// The recorder of the store's story log, or none when the store keeps no stories.
function storyRecorder(
  resolved: ResolvedPaymentsOptions,
  store: PaymentsStore,
  redactor: { redact(text: string): string },
): StoryRecorder | undefined {
  const log = storyLogOf(store);
  return (
    log &&
    new StoryRecorder(log, {
      registration: resolved.name ?? '',
      instance: `${hostname()}:${String(process.pid)}`,
      clock: resolved.clock,
      redactor,
      logger: resolved.logger,
    })
  );
}
