// What the other folders of the core may import from store/ (the store's records, ports and rules,
// the in-memory store, transactions).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of store/ to this file.
export { MemoryPaymentsStore } from './memory.store.js';
export { queueGenerated, queueRecheck } from './pending.generated.js';
export { isPaymentsStore, orderLedgerOf, STORE_METHODS } from './store.ports.js';
export { refundLedgerOf } from './refund.claims.js';
export type { OrderLedger, PaymentsStore, RateLimiter, RefundLedger } from './store.ports.js';
export { isTransactional } from './store.transaction.js';
export type { PaymentsTransaction, TransactionalPaymentsStore } from './store.transaction.js';
export type {
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
} from './store.types.js';
