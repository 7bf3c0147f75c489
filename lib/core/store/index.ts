// What the other folders of the core, and the plugin's folders outside it, may import from store/
// (the store's records, ports, rules and text forms, the in-memory store, transactions).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of store/ to this file.
export { MemoryPaymentsStore } from './memory.store.js';
export { queueGenerated, queueRecheck } from './pending.generated.js';
// The text forms of order and refund records and the rules on durations and outcome pages: one
// definition for the core's stores and the Redis and PostgreSQL stores.
export { parseOrderCheckout, parseOrderSettlement, settlementText } from './order.values.js';
export { parseRefundRecord, refundRecordText } from './refund.values.js';
export { epochMs, outcomeCursor, outcomePageLimit, parseOutcomeCursor, positiveMs } from './store.rules.js';
export { isPaymentsStore, orderLedgerOf, STORE_METHODS } from './store.ports.js';
export { refundLedgerOf } from './refund.claims.js';
export { checkoutLockKey, checkoutStepsOf, readStanding, type CheckoutSteps } from './checkout.claims.js';
export type { OrderLedger, PaymentsStore, RateLimiter, RefundLedger } from './store.ports.js';
export { isTransactional } from './store.transaction.js';
export { isPaymentsInbox } from './store.inbox.js';
export type { InboxEntry, InboxMark, PaymentsInbox, PaymentsInboxTransaction } from './store.inbox.js';
export {
  INBOX_COLUMNS,
  INBOX_TABLE,
  InboxTableMissingError,
  InboxTransactionEndedError,
  inboxDdl,
  sqlInbox,
} from './inbox.sql.js';
export type { InboxColumn, InboxDialect, SqlInboxOptions, SqlInboxTransaction } from './inbox.sql.js';
export type {
  PaymentsTransaction,
  PaymentsTransactionScope,
  PaymentsTransactionWork,
  TransactionalPaymentsStore,
} from './store.transaction.js';
export type {
  BindingClaim,
  CheckoutOpen,
  CheckoutOpening,
  CheckoutSave,
  CheckoutStanding,
  ClaimOutcome,
  DuplicateRefund,
  DuplicateRefundState,
  HandlerResult,
  OrderCheckout,
  OrderSettlement,
  OutcomeFinish,
  OutcomePage,
  OutcomeQuery,
  OutcomeRecord,
  OutcomeSource,
  PaymentBinding,
  PaymentOutcome,
  PendingPayment,
  RefundRecord,
  RefundSwap,
  TransactionQuery,
} from './store.types.js';
// The payments' stories and the desk's tallies (story.log.ts).
export {
  MemoryStoryLog,
  storyLogOf,
  addTally,
  bucketStart,
  expired,
  handlingHistogram,
  handlingSlot,
  histogramPercentile,
  HANDLING_BOUNDS_MS,
  keptEntries,
  parseStoryEntry,
  STORY_DEFAULTS,
  storyLimits,
  TALLY,
  tallySum,
} from './story.log.js';
export type {
  PaymentStoryLog,
  StoryBatch,
  StoryEntry,
  StoryKind,
  StoryLimits,
  StoryOptions,
  StoryTally,
  TallyBucket,
} from './story.log.js';
