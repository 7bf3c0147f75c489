// What the other folders of the core, and the plugin's folders outside it, may import from
// settlement/ (the runner, the decision, the return path, reconciliation, events and handlers, and the
// platforms' refund).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of settlement/ to this file.
export {
  everyEventTo,
  PaymentCancelledEvent,
  PaymentCapturedEvent,
  PaymentEvents,
  PaymentRefundedEvent,
} from './payment.events.js';
export type {
  HandlerLookup,
  PaymentDuplicateEvent,
  PaymentEvent,
  PaymentEventName,
  PaymentOutcomeEvent,
} from './payment.events.js';
export type { PaymentsReconciliationOptions } from './reconciliation.options.js';
// One refund per payment however many platform calls ask for it (Vendure's and Medusa's refunds,
// the desk's refund of a duplicate: the one a duplicate's automatic refund shares).
export { refundOnce } from './refund.once.js';
export type { RefundOnceResult } from './refund.once.js';
export { ReconciliationScheduler } from './reconciliation.scheduler.js';
export type { ReconciliationRun } from './reconciliation.scheduler.js';
// The verify gate: the webhook processor asks it about unsigned deliveries.
export { UnboundTokens, VerifyBudget, verifyGate } from './settlement.gate.js';
export type { UnsignedAsk } from './settlement.gate.js';
export type { OutcomeExpectation } from './settlement.decision.js';
export { OrderScreen } from './settlement.duplicates.js';
export { checkoutKey, orderLedgerKey } from './settlement.orders.js';
export { PendingRechecks } from './settlement.rechecks.js';
export { laneOf } from './settlement.evidence.js';
export { PaymentReconciler } from './settlement.reconciler.js';
export type { SettleRequest, SettleResult, Settlements, TokenLookup } from './settlement.request.js';
export { SettlementRunner, TracedSettlements } from './settlement.runner.js';
// The one rule of which commit path a client takes (the client refuses a bad set-up when it is built).
export { commitPathOf } from './settlement.commit.js';
export type { CommitPath, CommitPathDecision } from './settlement.commit.js';
export { DEFAULT_HANDLER_TIMEOUT_MS } from './settlement.attempt.js';
export { SETTLEMENT_WAITS } from './settlement.waits.js';
// For the payments desk (lib/desk): the overdue test of a record and a payment's refund record key.
export { isOverdueRecord } from './reconciliation.lanes.js';
export { refundKey } from './refund.sender.js';
export { StoryRecorder, StorySettlements, storyOfSettle } from './settlement.story.js';
export type { SettleStory, StoryRecorderOptions } from './settlement.story.js';
