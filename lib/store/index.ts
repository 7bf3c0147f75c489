/**
 * `nestjs-payments/store`: for authors of a custom store (and of tests that build one). The store
 * ports and their record types, the base class that composes the combined operations from the
 * basic ones, the transaction ports of an exactly-once store, the inbox in the host's database
 * (`sqlInbox`, docs/exactly-once.md), the in-memory store, and the store
 * contract as a runnable suite for the author's own test runner. See docs/stores.md.
 */
export {
  STORE_METHODS,
  ORDER_LEDGER_METHODS,
  REFUND_LEDGER_METHODS,
  BasicPaymentsStore,
  isTransactional,
  MemoryPaymentsStore,
  MemoryRateLimiter,
  INBOX_TABLE,
  InboxTableMissingError,
  InboxTransactionEndedError,
  inboxDdl,
  sqlInbox,
} from '../core/index.js';
export {
  OUTCOME_PAGE,
  outcomeCursor,
  parseOutcomeCursor,
  outcomeSortsBefore,
  outcomePageLimit,
} from '../core/index.js';
export type {
  PaymentsStore,
  BindingStore,
  ClaimStore,
  PendingQueue,
  OutcomeLog,
  RateLimiter,
  OrderLedger,
  RefundLedger,
  RefundRecord,
  RefundSwap,
  PaymentBinding,
  PendingPayment,
  ClaimOutcome,
  PaymentOutcome,
  OutcomeSource,
  HandlerResult,
  OutcomeRecord,
  OutcomeQuery,
  OutcomePage,
  BindingClaim,
  OutcomeFinish,
  DuplicateRefund,
  DuplicateRefundState,
  OrderSettlement,
  OrderCheckout,
  CheckoutOpen,
  CheckoutOpening,
  CheckoutSave,
  CheckoutStanding,
  TransactionQuery,
  TransactionRows,
  PaymentsTransaction,
  PaymentsTransactionResult,
  PaymentsTransactionScope,
  PaymentsTransactionWork,
  TransactionalPaymentsStore,
  MemoryPaymentsStoreOptions,
  InboxDialect,
  InboxEntry,
  InboxMark,
  PaymentsInbox,
  PaymentsInboxTransaction,
  SqlInboxOptions,
  SqlInboxTransaction,
  MemoryRateLimiterOptions,
  Clock,
  ClockTimer,
} from '../core/index.js';
export { describeStoreContract } from './contract.suite.js';
// The payments' stories and the desk's tallies: the port a store offers as `story`, its rules, the memory log.
export {
  bucketStart,
  MemoryStoryLog,
  STORY_DEFAULTS,
  storyLimits,
  storyLogOf,
  TALLY,
  HANDLING_BOUNDS_MS,
} from '../core/store/index.js';
export type {
  PaymentStoryLog,
  StoryBatch,
  StoryEntry,
  StoryKind,
  StoryLimits,
  StoryOptions,
  StoryTally,
  TallyBucket,
} from '../core/store/index.js';
export type {
  StoreContractHooks,
  ContractMatchers,
  ContractAssertions,
  StoreFixture,
  StoreContractOptions,
} from './contract.hooks.js';
