/**
 * The store keeps what the plugin must remember between generating a payment and learning its
 * outcome, and makes outcome delivery effectively-once. The default is the in-memory store (one
 * process); `RedisPaymentsStore` (`nestjs-payments/redis`) and `PostgresPaymentsStore`
 * (`nestjs-payments/postgres`) share it between app instances and keep it across restarts.
 *
 * Nothing in it is the source of truth about a payment: the service's `verify_payment` answer
 * is. What the store holds saves calls to the service and lets several instances agree on who
 * runs the handlers.
 */

/** What the plugin recorded about a payment when it generated it. */
export interface PaymentBinding {
  /** The payment's id, as the service assigned it. */
  paymentId: string;
  /** Amount in millimes, as sent at generation. */
  amount: string;
  /** Tracking id sent at generation, if any. */
  developerTrackingId?: string;
  /** ISO 8601 time of generation. */
  createdAt: string;
  /** ISO 8601 time the checkout session ends (generation + `sessionTimeoutSecs`), when known. */
  sessionEndsAt?: string;
}

/** A payment whose outcome the plugin has not seen yet, queued for reconciliation. */
export interface PendingPayment extends PaymentBinding {
  /** How many times reconciliation has verified it so far. */
  checks: number;
}

/**
 * Result of {@link PaymentsStore.claim}:
 * - `claimed`: the caller owns the key until it marks it done, releases it or the lease expires;
 * - `done`: the key was already handled;
 * - `busy`: someone else holds an unexpired claim.
 */
export type ClaimOutcome = 'claimed' | 'done' | 'busy';

/**
 * What a verified status means for the shop (one mapping, in `payment.outcome.ts`):
 * `confirmed` (paid), `failed`, `expired`, `authorized` (a pre-authorization holds the amount),
 * `pending` (not settled yet: checked again later), `mismatch` (the service's amount or tracking
 * id differs from what the plugin sent: never confirmed, logged as an error).
 */
export type PaymentOutcome = 'confirmed' | 'failed' | 'expired' | 'authorized' | 'pending' | 'mismatch';

/** Which path led to an outcome. */
export type OutcomeSource = 'webhook' | 'return' | 'reconciliation';

/** What became of the handlers of an outcome: `none` when no handler had to run (pending). */
export type HandlerResult = 'succeeded' | 'failed' | 'none';

/** What happened to one payment, as the plugin saw it (the record of outcomes). */
export interface OutcomeRecord {
  /** The payment. */
  paymentId: string;
  /** The outcome the verified status maps to. */
  outcome: PaymentOutcome;
  /** The service's status as sent by `verify_payment` (e.g. `SUCCESS`). */
  status: string;
  /** The path of the latest attempt. */
  source: OutcomeSource;
  /** Result of the handlers on the latest attempt. */
  handlers: HandlerResult;
  /** Attempts so far (each verify that led to running, or trying to run, the handlers). */
  attempts: number;
  /** Verified amount in millimes, when the service sent one. */
  amount?: string;
  /** Verified tracking id, when the service sent one. */
  developerTrackingId?: string;
  /** The latest error (handler failure, mismatch), short and free of secrets. */
  lastError?: string;
  /** ISO 8601 time of the latest update. */
  updatedAt: string;
}

/** A page request of {@link PaymentsStore.listOutcomes}. */
export interface OutcomeQuery {
  /** Only records whose handlers ended so (e.g. `failed`, to retry them). */
  handlers?: HandlerResult;
  /** Only records of this outcome. */
  outcome?: PaymentOutcome;
  /** Page size: 1 to 500. Default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of outcome records, newest update first. */
export interface OutcomePage {
  /** The records of this page. */
  items: OutcomeRecord[];
  /** Pass as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

/** Result of {@link PaymentsStore.findBindingAndClaim}. */
export interface BindingClaim {
  /** The token's binding, or `undefined` when unknown or expired. */
  binding: PaymentBinding | undefined;
  /**
   * The claim of the event key, present only when the binding names the payment asked about;
   * absent when there is no binding or it names another payment (then nothing was claimed).
   */
  claim?: ClaimOutcome;
}

/**
 * What {@link PaymentsStore.finishOutcome} writes once an attempt at a payment's outcome is over:
 * the claim, the reconciliation queue and the outcome record, together.
 */
export interface OutcomeFinish {
  /** The claimed key, e.g. `outcome:<paymentId>`. */
  eventKey: string;
  /** The attempt that holds the claim. */
  owner: string;
  /**
   * `done`: the outcome is handled (or needed no handler): mark the claim done for `doneTtlMs`
   * if `owner` still holds it, and remove the payment from the reconciliation queue (whether or
   * not the claim was still held). `release`: give the claim up if `owner` holds it (the payment
   * is still pending, or a handler failed), so that the next attempt runs it; the queue is left.
   */
  claim: 'done' | 'release';
  /** How long a done marker is remembered, in ms (used with `claim: 'done'`). */
  doneTtlMs: number;
  /** The payment's new outcome record (it replaces the old one), without `attempts`. */
  record: Omit<OutcomeRecord, 'attempts'>;
  /**
   * Added to the `attempts` of the payment's current record (0 when it has none, or it expired)
   * to make the saved record's: 1 for an attempt that ran (or tried to run) handlers, 0 for a
   * check that found the payment still pending.
   */
  attemptsAdded: number;
  /** How long the record is kept, in ms. */
  recordTtlMs: number;
}

/**
 * Storage of token bindings, claims, the reconciliation queue and the record of outcomes.
 * Every method must be atomic: several app instances call them concurrently.
 *
 * Two methods are optional combinations of others, for the webhook's hot path:
 * {@link PaymentsStore.findBindingAndClaim} and {@link PaymentsStore.finishOutcome}. A store that has them does each in one
 * round trip, atomically; for a store without them the plugin makes the separate calls (see
 * `store.operations.ts`), which is correct too, only slower, so stores written against the
 * required methods alone keep working.
 */
export interface PaymentsStore {
  /**
   * Remembers which payment a webhook token belongs to.
   * @param tokenId the token's public id (its nonce)
   * @param binding what is known of the payment
   * @param ttlMs how long to keep it
   */
  saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void>;

  /** Returns the binding saved for a token id, or `undefined` when unknown or expired. */
  findBinding(tokenId: string): Promise<PaymentBinding | undefined>;

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
   * Queues (or re-queues) a payment for reconciliation; one entry per payment id, replaced.
   * @param entry the payment and how often it was checked
   * @param dueAt epoch ms from which it may be taken
   */
  schedulePending(entry: PendingPayment, dueAt: number): Promise<void>;

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

  /**
   * Saves (replaces) the record of a payment's outcome.
   * @param ttlMs how long to keep it
   */
  saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void>;

  /** The record of a payment's outcome, or `undefined`. */
  getOutcome(paymentId: string): Promise<OutcomeRecord | undefined>;

  /** Records, newest update first (ties by payment id), filtered and paginated. */
  listOutcomes(query?: OutcomeQuery): Promise<OutcomePage>;

  /**
   * Optional: {@link PaymentsStore.findBinding} of `tokenId` and, only when the binding names
   * `paymentId`, {@link PaymentsStore.claim} of `eventKey`, as one atomic step (one round trip): a webhook's authentication
   * and its claim. With no binding, or a binding of another payment, nothing is claimed.
   * @param tokenId the token's public id (its nonce)
   * @param paymentId the payment the delivery names
   * @param eventKey the claim key, e.g. `outcome:<paymentId>`
   * @param owner a unique id of this attempt
   * @param leaseMs the claim's lease, as for {@link PaymentsStore.claim}
   */
  findBindingAndClaim?(tokenId: string, paymentId: string, eventKey: string, owner: string, leaseMs: number): Promise<BindingClaim>;

  /**
   * Optional: ends an attempt in one atomic step (one round trip): {@link PaymentsStore.markDone}
   * (or {@link PaymentsStore.release}), {@link PaymentsStore.removePending} when done, and
   * {@link PaymentsStore.saveOutcome} of the record with
   * its `attempts` counted from the current record's, so that no read of the old record is needed.
   * @returns whether the claim was marked done: false for `release`, and false for `done` when
   *   `owner` no longer held it (its lease expired; the queue and the record are written anyway)
   */
  finishOutcome?(finish: OutcomeFinish): Promise<boolean>;

  /** Checks that the store answers (for health checks); throws when it does not. */
  ping?(): Promise<void>;

  /** Frees the store's own resources (connections it opened). Called on application shutdown. */
  close?(): Promise<void>;
}

/** The methods every store must have; used to check a `store` option. */
export const STORE_METHODS = [
  'saveBinding',
  'findBinding',
  'claim',
  'markDone',
  'release',
  'schedulePending',
  'takeDuePending',
  'findPending',
  'removePending',
  'countPending',
  'saveOutcome',
  'getOutcome',
  'listOutcomes',
] as const satisfies ReadonlyArray<keyof PaymentsStore>;

/** Default and largest page size of {@link PaymentsStore.listOutcomes}. */
export const OUTCOME_PAGE = {
  /** Page size when the query sets none. */
  defaultLimit: 50,
  /** Largest page size; larger requests are clamped. */
  maxLimit: 500,
} as const;

/**
 * The page size a store uses for a query: the default when unset, clamped to 1..500.
 * @throws RangeError when `limit` is not a positive integer
 */
export function outcomePageLimit(query: OutcomeQuery | undefined): number {
  const limit = query?.limit ?? OUTCOME_PAGE.defaultLimit;
  if (!Number.isSafeInteger(limit) || limit <= 0) throw new RangeError(`listOutcomes: limit must be a positive integer, got ${String(limit)}`);
  return Math.min(limit, OUTCOME_PAGE.maxLimit);
}

/**
 * The opaque cursor after a record: its update time and payment id (the sort key).
 * Stores use it so that cursors mean the same everywhere.
 */
export function outcomeCursor(record: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>): string {
  return Buffer.from(JSON.stringify([record.updatedAt, record.paymentId]), 'utf8').toString('base64url');
}

/**
 * Reads a cursor made by {@link outcomeCursor}.
 * @throws RangeError when it is not one
 */
export function parseOutcomeCursor(cursor: string): Pick<OutcomeRecord, 'updatedAt' | 'paymentId'> {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 2 && parsed.every((p) => typeof p === 'string')) {
      return { updatedAt: String(parsed[0]), paymentId: String(parsed[1]) };
    }
  } catch {
    // reported below
  }
  throw new RangeError('listOutcomes: cursor is not one this store issued');
}

/** Whether `a` sorts before `b` in {@link PaymentsStore.listOutcomes} order (newest first, then payment id). */
export function outcomeSortsBefore(a: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>, b: Pick<OutcomeRecord, 'updatedAt' | 'paymentId'>): boolean {
  return a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.paymentId < b.paymentId);
}

/**
 * The rule every store applies to a lease or TTL: a positive, finite number of ms (rounded up).
 * A zero, negative or NaN value is a caller's bug that would otherwise mean "forever" (lru-cache,
 * Redis) or "expired on arrival" (SQL), far from its cause.
 * @param store the store's class name, for the message
 * @throws RangeError naming the parameter
 */
export function positiveMs(store: string, ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`${store}: ${name} must be a positive number of milliseconds, got ${String(ms)}`);
  }
  return Math.ceil(ms);
}

/**
 * The rule every store applies to an epoch time in ms (`dueAt`, `now`): a finite number.
 * @param store the store's class name, for the message
 * @throws RangeError naming the parameter
 */
export function epochMs(store: string, ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new RangeError(`${store}: ${name} must be a finite epoch time in ms, got ${String(ms)}`);
  return ms;
}
