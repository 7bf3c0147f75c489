import type {
  BindingClaim,
  CheckoutOpen,
  CheckoutOpening,
  CheckoutSave,
  ClaimOutcome,
  OrderCheckout,
  OrderSettlement,
  OutcomeFinish,
  OutcomePage,
  OutcomeQuery,
  OutcomeRecord,
  PaymentBinding,
  PendingPayment,
  RefundRecord,
  RefundSwap,
  TransactionQuery,
} from './store.types.js';

/**
 * The store keeps what the plugin must remember between generating a payment and learning its
 * outcome, and makes outcome delivery effectively-once. The default is the in-memory store (one
 * process); `RedisPaymentsStore` (`nestjs-payments/redis`) and `PostgresPaymentsStore`
 * (`nestjs-payments/postgres`) share it between app instances and keep it across restarts.
 *
 * Nothing in it is the source of truth about a payment: the service's `verify_payment` answer
 * is. What the store holds saves calls to the service and lets several instances agree on who
 * runs the handlers.
 *
 * It is made of small ports, one per concern: {@link BindingStore}, {@link ClaimStore},
 * {@link PendingQueue}, {@link OutcomeLog} and a {@link RateLimiter}. Every method must be atomic:
 * several app instances call them concurrently.
 */

/** The webhook tokens' bindings: which payment a token was issued for. */
export interface BindingStore {
  /**
   * Remembers which payment a webhook token belongs to.
   * @param tokenId the token's public id (its nonce)
   * @param binding what is known of the payment
   * @param ttlMs how long to keep it
   */
  saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void>;

  /** Returns the binding saved for a token id, or `undefined` when unknown or expired. */
  findBinding(tokenId: string): Promise<PaymentBinding | undefined>;
}

/**
 * Claims: who runs a payment's outcome, with a lease, and done markers once it ran. Also the two
 * combined operations of the webhook's hot path, each one atomic step (one round trip in the
 * shipped stores). A custom store can inherit them from `BasicPaymentsStore`, which builds them
 * from the other methods.
 */
export interface ClaimStore {
  /**
   * Atomically claims a key for processing, unless it is done or claimed by someone else.
   * Claiming again with the same owner renews the lease.
   * @param eventKey identifies the work, e.g. `outcome:<paymentId>`
   * @param owner a unique id of this attempt
   * @param leaseMs after this long the claim expires (so a crashed instance does not block it)
   */
  claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome>;

  /**
   * Marks a claimed key done, if `owner` still holds the claim.
   * @param ttlMs how long to remember that it is done (duplicates within it run nothing)
   * @returns false when the claim had expired and been taken over
   */
  markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean>;

  /** Gives a claim up (the handler failed), so that the next attempt runs it again. */
  release(eventKey: string, owner: string): Promise<void>;

  /**
   * {@link BindingStore.findBinding} of `tokenId` and, only when the binding names `paymentId`,
   * {@link ClaimStore.claim} of `eventKey`: a webhook's authentication and its claim. With no
   * binding, or a binding of another payment, nothing is claimed.
   * @param tokenId the token's public id (its nonce)
   * @param paymentId the payment the delivery names
   * @param eventKey the claim key, e.g. `outcome:<paymentId>`
   * @param owner a unique id of this attempt
   * @param leaseMs the claim's lease, as for {@link ClaimStore.claim}
   */
  findBindingAndClaim(
    tokenId: string,
    paymentId: string,
    eventKey: string,
    owner: string,
    leaseMs: number,
  ): Promise<BindingClaim>;

  /**
   * Ends an attempt: {@link ClaimStore.markDone} (or {@link ClaimStore.release}),
   * {@link PendingQueue.removePending} when done, and {@link OutcomeLog.saveOutcome} of the record
   * with its `attempts` counted from the current record's (every attempt counted, however many
   * finish at once).
   * @returns whether the claim was marked done: false for `release`, and false for `done` when
   *   `owner` no longer held it (its lease expired; the queue and the record are written anyway)
   */
  finishOutcome(finish: OutcomeFinish): Promise<boolean>;
}

/** The reconciliation queue: payments whose outcome the plugin has not seen yet. */
export interface PendingQueue {
  /**
   * Queues (or re-queues) a payment for reconciliation; one entry per payment id, replaced.
   * @param entry the payment and how often it was checked
   * @param dueAt epoch ms from which it may be taken
   */
  schedulePending(entry: PendingPayment, dueAt: number): Promise<void>;

  /**
   * Optional, atomic: queues a payment `generatePayment` just created, unless the queue holds an
   * entry of it already (a webhook or a return found it pending first and put it in the pending
   * lane): that entry keeps its due time, `checks` and `rechecks`, and takes every other field of
   * `entry` (the session's end, the generation time). Every shipped store has it; without it the
   * plugin reads the queue first and keeps an entry it finds as it is (two steps, not atomic).
   * @param entry the payment as generated
   * @param dueAt epoch ms from which it may be taken, when nothing was queued
   */
  queueGenerated?(entry: PendingPayment, dueAt: number): Promise<void>;

  /**
   * Optional, atomic: queues (or re-queues) a payment a webhook or a return found pending, due at
   * `dueAt`. When the queue holds an entry of it, that entry keeps every field but `checks` and
   * `rechecks`, which it takes from `entry` (so the session's end `generatePayment` recorded is
   * never replaced by a path's estimate of it); else `entry` is queued as
   * {@link PendingQueue.schedulePending} does. Every shipped store has it; without it the plugin
   * calls `schedulePending` (the entry replaced).
   * @param entry the entry as the path made it (from the queue's entry it read, or from what the
   *   path expected when it found none)
   * @param dueAt epoch ms from which it may be taken
   */
  queueRecheck?(entry: PendingPayment, dueAt: number): Promise<void>;

  /**
   * Atomically takes up to `limit` entries due at `now` (oldest due first) and pushes each one's
   * due time to `now + leaseMs`, so that no other instance takes it meanwhile and it comes back by
   * itself if this one crashes before removing or rescheduling it.
   */
  takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]>;

  /** The queued entry of a payment, or `undefined`. */
  findPending(paymentId: string): Promise<PendingPayment | undefined>;

  /** Removes a payment from the queue (its outcome is done). No error when absent. */
  removePending(paymentId: string): Promise<void>;

  /** How many payments are queued (the reconciliation backlog). */
  countPending(): Promise<number>;
}

/** The record of outcomes: what happened to each payment, as the plugin saw it. */
export interface OutcomeLog {
  /**
   * Saves (replaces) the record of a payment's outcome.
   * @param ttlMs how long to keep it
   */
  saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void>;

  /** The record of a payment's outcome, or `undefined`. */
  getOutcome(paymentId: string): Promise<OutcomeRecord | undefined>;

  /** Records, newest update first (ties by payment id), filtered and paginated. */
  listOutcomes(query?: OutcomeQuery): Promise<OutcomePage>;
}

/**
 * Fixed-window slots, one per key: the webhook's limit on deliveries that cost a verify call
 * without a binding to back them (an unsigned delivery, a token whose binding is gone), so that a
 * stranger cannot spend the merchant's verify budget. Both methods must be atomic across the
 * instances sharing the store.
 */
export interface RateLimiter {
  /**
   * Takes the key's slot if it is free.
   * @param key what is limited, e.g. a payment id or a token's nonce
   * @param windowMs how long the slot stays taken (a positive number of ms)
   * @returns true: the slot was free and is now taken until `windowMs` has passed; false: it is
   *   taken (by this caller or another), nothing changed
   * @throws RangeError when `windowMs` is not a positive number
   */
  take(key: string, windowMs: number): Promise<boolean>;

  /** Frees the key's slot before its window ends (no error when it is free). */
  free(key: string): Promise<void>;
}

/**
 * Orders, by tracking id: which payment settled each (one confirmation per order), and the open
 * checkout of each (one payment per checkout). Every shipped store implements it, and
 * `BasicPaymentsStore` gives custom stores a default; a store without it keeps the plugin's
 * behaviour of before (every successful payment confirmed, every generatePayment a new payment).
 * Each method touches one order only (in Redis, keys of one hash slot), but for the standing of
 * the found payment that `openCheckout` may read.
 */
export interface OrderLedger {
  /**
   * Atomically records `settlement` as the payment that settled `orderKey`, unless another
   * payment already did (and its record has not expired): the first writer wins, across instances.
   * @param orderKey the order, e.g. its tracking id
   * @param settlement the payment that would settle it
   * @param ttlMs how long the order's settlement is remembered
   * @param transaction the handler transaction of a transactional store: the record then commits
   *   or rolls back with it (a concurrent writer waits for it). Ignored by other stores.
   * @returns the settlement that holds: `settlement` itself when this call (or an earlier one for
   *   the same payment) recorded it, else the other payment's
   */
  settleOrder(
    orderKey: string,
    settlement: OrderSettlement,
    ttlMs: number,
    transaction?: TransactionQuery,
  ): Promise<OrderSettlement>;

  /** The payment that settled an order, or `undefined`. */
  findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined>;

  /**
   * Saves (replaces) an order's open checkout.
   * @param ttlMs how long to keep it (its session, at least)
   */
  saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void>;

  /** An order's open checkout, or `undefined`. */
  findCheckout(orderKey: string): Promise<OrderCheckout | undefined>;

  /**
   * Optional, atomic: what `generatePayment` does before it creates an order's payment, in one
   * step (one round trip in the shipped stores). Claims the order's lock for `open.owner`, as
   * {@link ClaimStore.claim} does (the same owner claiming again renews it; an unexpired lock of
   * another owner is `busy`; it frees itself after `open.leaseMs`), and reads the order's open
   * checkout as it stands once the lock is decided: a checkout written by
   * {@link OrderLedger.closeCheckout} of the lock's previous owner is always seen by the next
   * owner. With a checkout, it may also read its payment's standing (its outcome record and its
   * cancellation note); a store that cannot in the same step leaves `standing` out, and the
   * plugin reads it. The lock is the store's own: it need not be a claim of
   * {@link ClaimStore.claim}, but only {@link OrderLedger.closeCheckout} frees it.
   * `BasicPaymentsStore` builds it from `claim` (of `checkout:<orderKey>`), `findCheckout`,
   * `getOutcome` and `findOrderSettlement`; without it the plugin does the same.
   */
  openCheckout?(open: CheckoutOpen): Promise<CheckoutOpening>;

  /**
   * Optional, atomic: after the payment is created (or when it is not), saves the order's new
   * checkout, when `save` is given, as {@link OrderLedger.saveCheckout} does, and frees the
   * order's lock if `owner` still holds it (a lock taken over by another owner is left as it is;
   * the checkout is saved either way). `BasicPaymentsStore` builds it from `saveCheckout` and
   * `release`; without it the plugin does the same.
   * @param orderKey the order
   * @param owner the owner that claimed the lock (see {@link OrderLedger.openCheckout})
   * @param save the checkout to save and how long to keep it; absent: only the lock is freed
   */
  closeCheckout?(orderKey: string, owner: string, save?: CheckoutSave): Promise<void>;
}

/** The methods of {@link OrderLedger}, which a store may lack (a custom store written before it). */
export const ORDER_LEDGER_METHODS = [
  'settleOrder',
  'findOrderSettlement',
  'saveCheckout',
  'findCheckout',
] as const satisfies ReadonlyArray<keyof OrderLedger>;

/** The store's {@link OrderLedger}, or `undefined` when it has none. */
export function orderLedgerOf<S extends object>(store: S): (S & OrderLedger) | undefined {
  const candidate = store as Record<string, unknown>;
  return ORDER_LEDGER_METHODS.every((m) => typeof candidate[m] === 'function') ? (store as S & OrderLedger) : undefined;
}

/**
 * Refunds, by payment: the record by which a refund is sent to the service at most once per
 * payment. Every shipped store implements it, and `BasicPaymentsStore` gives custom stores a
 * default; for a store without it the plugin builds the same from its claims and bindings
 * (`refundLedgerOf`). Each method touches one payment's record only.
 */
export interface RefundLedger {
  /** The refund record under `refundKey`, or `undefined` (none, or expired). */
  findRefund(refundKey: string): Promise<RefundRecord | undefined>;

  /**
   * Atomically writes `record` under `refundKey` (replacing the record there) only when the record
   * held now was written by `expectedOwner`, or, with `expectedOwner` undefined, when none is held
   * (or it expired): a compare-and-set, so that of two attempts starting the same refund one wins.
   * @param refundKey the payment's key (the plugin's: its registration and payment id)
   * @param record the new record
   * @param expectedOwner the `owner` of the record the caller read, or undefined when it read none
   * @param ttlMs how long the record is kept
   * @returns whether it was written, and the record held after the call
   */
  swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap>;
}

/** The methods of {@link RefundLedger}, which a store may lack (a custom store written before it). */
export const REFUND_LEDGER_METHODS = ['findRefund', 'swapRefund'] as const satisfies ReadonlyArray<keyof RefundLedger>;

/**
 * Storage of token bindings, claims, the reconciliation queue, the record of outcomes and the
 * webhook's rate limits: the ports above in one object, passed as the `store` option. Every
 * method must be atomic: several app instances call them concurrently.
 *
 * To write one, extend `BasicPaymentsStore`: it builds the combined operations of
 * {@link ClaimStore} from the other methods and limits rates in the process. The contract every
 * store passes is `test/support/store-contract.ts`.
 */
export interface PaymentsStore extends BindingStore, ClaimStore, PendingQueue, OutcomeLog {
  /** The webhook's rate limits, shared by every instance using this store. */
  readonly rateLimits: RateLimiter;

  /** Checks that the store answers (for health checks); throws when it does not. */
  ping?(): Promise<void>;

  /**
   * The store's own clock, epoch ms (the Redis or database server's time). Optional: when
   * present, every client sharing the store corrects its clock by it, so that due times and
   * record ages written by one instance mean the same to the others, whatever their skew.
   */
  now?(): Promise<number>;

  /** Frees the store's own resources (connections it opened). Called on application shutdown. */
  close?(): Promise<void>;
}

/** The methods every store must have; used to check a `store` option (with its `rateLimits`: see `isPaymentsStore`). */
export const STORE_METHODS = [
  'saveBinding',
  'findBinding',
  'claim',
  'markDone',
  'release',
  'findBindingAndClaim',
  'finishOutcome',
  'schedulePending',
  'takeDuePending',
  'findPending',
  'removePending',
  'countPending',
  'saveOutcome',
  'getOutcome',
  'listOutcomes',
] as const satisfies ReadonlyArray<keyof PaymentsStore>;

/**
 * Whether a value can serve as a store: every method of {@link STORE_METHODS} and a
 * `rateLimits` with `take` and `free`. A runtime check of a `store` option (TypeScript's check
 * does not reach JavaScript hosts or casts).
 */
export function isPaymentsStore(value: unknown): value is PaymentsStore {
  if (typeof value !== 'object' || value === null) return false;
  const store = value as Record<string, unknown>;
  const limits = store.rateLimits as Record<string, unknown> | null | undefined;
  return (
    STORE_METHODS.every((m) => typeof store[m] === 'function') &&
    typeof limits === 'object' &&
    limits !== null &&
    typeof limits.take === 'function' &&
    typeof limits.free === 'function'
  );
}
