import type {
  DuplicateRefund,
  DuplicateRefundState,
  OrderSettlement,
  OutcomeSource,
  PaymentOutcome,
  PaymentsTransaction,
} from '../store/index.js';
import type { VerifiedPayment } from '../api/index.js';

/** A side effect to run once an outcome is committed (see {@link PaymentOutcomeEvent.afterCommit}). */
export type AfterCommitCallback = () => unknown;

/**
 * What an outcome event's handlers are handed besides the outcome: the transaction they run in
 * (set by the runner while they run, with a transactional store) and the callbacks they registered
 * with {@link PaymentOutcomeEvent.afterCommit}, which the runner runs once the outcome is committed.
 * One per event, made by the runner's attempt; an event built without one gets an empty one.
 */
export interface HandlerContext {
  /** The transaction the handlers run in, while they run. */
  transaction?: PaymentsTransaction;
  /** The callbacks registered with afterCommit, in order. */
  readonly afterCommit: AfterCommitCallback[];
}

/** Names of the events the plugin emits. */
export const PaymentEvents = {
  /** The service verified the payment as paid (`SUCCESS`). Payload: {@link PaymentConfirmedEvent}. */
  CONFIRMED: 'payment.confirmed',
  /** The service verified the payment as failed (`FAILURE`, `SYSTEM_FAILURE`). Payload: {@link PaymentFailedEvent}. */
  FAILED: 'payment.failed',
  /** The session ended unpaid (`EXPIRED`). Payload: {@link PaymentExpiredEvent}. */
  EXPIRED: 'payment.expired',
  /** A pre-authorization holds the amount (`PREAUTH_SUCCESS`); capture or cancel it. Payload: {@link PaymentAuthorizedEvent}. */
  AUTHORIZED: 'payment.authorized',
  /**
   * A second successful payment of an order another payment already settled (same tracking id):
   * never confirmed; refund it (or let `duplicates: { refund: true }` do it). Payload: {@link PaymentDuplicateEvent}.
   */
  DUPLICATE: 'payment.duplicate',
  /** The service's amount or tracking id differs from what the plugin sent: never confirmed. Payload: {@link PaymentMismatchEvent}. */
  MISMATCH: 'payment.mismatch',
  /** `capturePayment` succeeded. Payload: {@link PaymentCapturedEvent}. */
  CAPTURED: 'payment.captured',
  /** `refundPayment` succeeded. Payload: {@link PaymentRefundedEvent}. */
  REFUNDED: 'payment.refunded',
  /** `cancelPayment` succeeded. Payload: {@link PaymentCancelledEvent}. */
  CANCELLED: 'payment.cancelled',
} as const;

/** One of the event names in {@link PaymentEvents}. */
export type PaymentEventName = (typeof PaymentEvents)[keyof typeof PaymentEvents];

/**
 * What every outcome event carries. The amount and tracking id are the service's verified ones;
 * they were checked against what the plugin sent (or what the caller expected) before a
 * confirmation is emitted.
 */
export class PaymentOutcomeEvent {
  /**
   * @param outcome what the verified status means
   * @param verification the service's verify answer this outcome rests on
   * @param source which path led here: `webhook`, `return` or `reconciliation`
   * @param registration the module registration's `name` (several merchant accounts), if any
   * @param occurredAt when the plugin learned the outcome
   * @param context the transaction and afterCommit callbacks of the attempt that runs the handlers (default: none yet)
   */
  constructor(
    readonly outcome: PaymentOutcome,
    readonly verification: VerifiedPayment,
    readonly source: OutcomeSource,
    readonly registration: string | undefined,
    readonly occurredAt: Date = new Date(),
    // Spelled out rather than HandlerContext: the public constructor names only public types.
    context: { transaction?: PaymentsTransaction; readonly afterCommit: AfterCommitCallback[] } = { afterCommit: [] },
  ) {
    // A private field: it stays out of toJSON, util.inspect and structural comparisons.
    this.#context = context;
  }

  readonly #context: HandlerContext;

  /** The payment. */
  get paymentId(): string {
    return this.verification.paymentId;
  }

  /** Verified amount in millimes. */
  get amount(): string {
    return this.verification.amount;
  }

  /** Verified tracking id (your order id), if any. */
  get developerTrackingId(): string | undefined {
    return this.verification.developerTrackingId;
  }

  /** The service's status as sent, e.g. `SUCCESS`. */
  get status(): string {
    return this.verification.status;
  }

  /**
   * The database transaction the handlers run in, when the store is transactional
   * (`new PostgresPaymentsStore(poolOrDb, { transactional: true })`): write the order through it
   * (`query(text, params)`, or `client` for an ORM) and the write commits together with the
   * outcome's done marker, or not at all. A throw, a crash or a lost claim rolls both back, and
   * the next webhook, return or reconciliation runs the handlers again on a clean slate: the
   * handler's writes through it happen exactly once. `undefined` without the mode (memory and
   * Redis stores, PostgreSQL without `transactional`): then handlers must stay idempotent on
   * `paymentId`, since a crash between their own commit and the done marker runs them again.
   * Only valid while the handler runs: the transaction ends when the handlers return.
   */
  get transaction(): PaymentsTransaction | undefined {
    return this.#context.transaction;
  }

  /**
   * Registers a side effect outside the database (an email, a call to a shipping API) to run
   * once the outcome is committed: after the transaction's commit with a transactional store,
   * else after the done marker is written. It runs only in the attempt that marked the outcome
   * done; never when a handler failed (the handlers run again later and register it again), nor
   * when the claim was lost or the done marker could not be written (another attempt finishes the
   * outcome and runs its own). Its failure is logged and undoes nothing.
   *
   * So it runs at most once per outcome, and it can be lost: the commit and the callback are two
   * steps in one process that no transaction spans. A crash (or a failed callback) after the
   * commit loses it for good, since the outcome is done and nothing runs the handlers again; a
   * crash while it runs leaves no trace of how far it got. For an effect that must happen at
   * least once, write an outbox row through {@link transaction} in the handler (it commits
   * with the outcome, or not at all), and have a worker deliver it and delete the row after;
   * a crash between the delivery and the delete makes the worker deliver it again, so make the
   * receiving side idempotent (e.g. keyed by `paymentId`). `afterCommit` is then the place to
   * wake that worker at once instead of at its next poll.
   *
   * On `payment.mismatch` there is nothing to commit, and callbacks registered on it do not run.
   * @param callback the side effect; may be async
   */
  afterCommit(callback: AfterCommitCallback): void {
    if (typeof callback !== 'function') throw new TypeError('afterCommit: the callback must be a function');
    this.#context.afterCommit.push(callback);
  }

  /** A plain copy for logs and queues (the getters are not own properties). */
  toJSON(): Record<string, unknown> {
    return {
      outcome: this.outcome,
      paymentId: this.paymentId,
      amount: this.amount,
      developerTrackingId: this.developerTrackingId,
      status: this.status,
      source: this.source,
      registration: this.registration,
      occurredAt: this.occurredAt.toISOString(),
    };
  }
}

/** Emitted once per payment when the service verifies it as paid. */
export class PaymentConfirmedEvent extends PaymentOutcomeEvent {}
/** Emitted once per payment when the service verifies it as failed. */
export class PaymentFailedEvent extends PaymentOutcomeEvent {}
/** Emitted once per payment when its session ended unpaid. */
export class PaymentExpiredEvent extends PaymentOutcomeEvent {}
/** Emitted once per pre-authorization when the service holds the amount. */
export class PaymentAuthorizedEvent extends PaymentOutcomeEvent {}

/** Emitted when the service's account of a payment differs from what the plugin sent or the caller expected. */
export class PaymentMismatchEvent extends PaymentOutcomeEvent {
  /**
   * @param verification the service's verify answer
   * @param source which path found it
   * @param registration the module registration's name, if any
   * @param problems what differs, e.g. `amount 100 instead of 12500`
   */
  constructor(
    verification: VerifiedPayment,
    source: OutcomeSource,
    registration: string | undefined,
    readonly problems: readonly string[],
  ) {
    super('mismatch', verification, source, registration);
  }
}

/**
 * Emitted once per payment that succeeded for an order (its tracking id) another payment had
 * already settled: the customer was charged twice. The order is paid by {@link settledBy}; this
 * payment ({@link paymentId}) is the second charge, to refund. Its handlers run outside any
 * database transaction, also with a transactional store.
 */
export class PaymentDuplicateEvent extends PaymentOutcomeEvent {
  /**
   * @param verification the service's verify answer of this (the second) payment
   * @param source which path found it
   * @param registration the module registration's name, if any
   * @param settledBy the payment that settled the order first, and its amount
   * @param refund the refund made with `duplicates: { refund: true }`, when the service made it
   * @param refundError why the automatic refund was not made (yet): the service's refusal, or the
   *   failure of a call whose answer was lost or that never reached it; see `refundState`
   * @param occurredAt when the plugin learned the outcome
   * @param refundState with `duplicates: { refund: true }`, where the automatic refund stood when
   *   the event was emitted: `refunded`, `refused` (refund by hand if it must be), `retry` (not
   *   sent yet: tried again, and `payment.refunded` follows when it is made), `unknown` (sent, its
   *   answer lost: never sent again; check at the service) or `failed` (never reached the service:
   *   refund by hand). The outcome record keeps it up to date afterwards.
   */
  constructor(
    verification: VerifiedPayment,
    source: OutcomeSource,
    registration: string | undefined,
    readonly settledBy: OrderSettlement,
    readonly refund?: DuplicateRefund,
    readonly refundError?: string,
    occurredAt?: Date,
    readonly refundState?: DuplicateRefundState,
  ) {
    super('duplicate', verification, source, registration, occurredAt);
  }

  /** The order: the tracking id both payments carry. */
  get order(): string {
    return this.verification.developerTrackingId ?? '';
  }

  /** @inheritdoc */
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      settledBy: { ...this.settledBy },
      refund: this.refund && { ...this.refund },
      refundError: this.refundError,
      refundState: this.refundState,
    };
  }
}

/** Emitted after `capturePayment` succeeded. */
export class PaymentCapturedEvent {
  /**
   * @param paymentId the captured payment
   * @param amount captured amount in millimes, when the service said
   * @param capturedAt ISO 8601 time of the capture, when the service said
   * @param status the service's status, e.g. `confirmed`
   * @param registration the module registration's `name` (several merchant accounts), if any
   */
  constructor(
    readonly paymentId: string,
    readonly amount: string | undefined,
    readonly capturedAt: string | undefined,
    readonly status: string,
    readonly registration?: string,
  ) {}
}

/** Emitted after `refundPayment` succeeded. */
export class PaymentRefundedEvent {
  /**
   * @param paymentId the refunded payment
   * @param refundId the service's id of the refund
   * @param amount the refunded amount as the service wrote it
   * @param refundedAt ISO 8601 time of the refund
   * @param registration the module registration's `name` (several merchant accounts), if any
   * @param duplicateOf when the refunded payment was a duplicate (`payment.duplicate`): the
   *   payment that settled its order, which stays paid. Never mark the order refunded then.
   */
  constructor(
    readonly paymentId: string,
    readonly refundId: string,
    readonly amount: string,
    readonly refundedAt: string,
    readonly registration?: string,
    readonly duplicateOf?: string,
  ) {}
}

/** Emitted after `cancelPayment` succeeded. */
export class PaymentCancelledEvent {
  /**
   * @param paymentId the cancelled payment
   * @param cancelledAt ISO 8601 time of the cancellation
   * @param registration the module registration's `name` (several merchant accounts), if any
   */
  constructor(
    readonly paymentId: string,
    readonly cancelledAt: string,
    readonly registration?: string,
  ) {}
}

/** Any event the plugin emits: an outcome's, or a capture's, refund's or cancellation's. */
export type PaymentEvent = PaymentOutcomeEvent | PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent;

// The handlers of these events: the front end's lookup, and the one place the runner runs them.

type OutcomeEventClass = new (
  outcome: PaymentOutcome,
  verification: VerifiedPayment,
  source: OutcomeSource,
  registration: string | undefined,
  occurredAt?: Date,
  context?: HandlerContext,
) => PaymentOutcomeEvent;

/** The payload class of each outcome whose handlers run. */
export const OUTCOME_EVENT_CLASSES: Readonly<
  Record<'confirmed' | 'failed' | 'expired' | 'authorized', OutcomeEventClass>
> = {
  confirmed: PaymentConfirmedEvent,
  failed: PaymentFailedEvent,
  expired: PaymentExpiredEvent,
  authorized: PaymentAuthorizedEvent,
};

/** A handler of an outcome event; a rejection means "not handled: run it again later". */
export type OutcomeHandler<E extends PaymentEvent = PaymentOutcomeEvent> = (event: E) => unknown;

/**
 * A handler of any one event kind, as a table of handlers per event name holds them: each is only
 * ever called with the events of its own name (declared with method syntax so that a handler of
 * one event class fits).
 */
export type AnyEventHandler = { handle(event: PaymentEvent): unknown }['handle'];

/**
 * Runs every handler and waits for all of them, even when one fails early: releasing the
 * outcome while another handler still runs would let the next attempt run that one twice at
 * once. Rejects with an AggregateError of the failures, once all have settled.
 */
export async function runAllHandlers(handlers: readonly AnyEventHandler[], event: PaymentEvent): Promise<void> {
  // One handler (the common case) is all of them: the same result without Promise.allSettled's machinery.
  if (handlers.length === 1) {
    let failure: { reason: unknown } | undefined;
    try {
      await handlers[0](event);
    } catch (reason) {
      failure = { reason };
    }
    if (failure) throw new AggregateError([failure.reason], `1 of 1 ${event.constructor.name} handler(s) failed`);
    return;
  }
  const results = await Promise.allSettled(handlers.map(async (handler) => handler(event)));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (failures.length > 0)
    throw new AggregateError(
      failures,
      `${failures.length} of ${handlers.length} ${event.constructor.name} handler(s) failed`,
    );
}

/**
 * The handlers a front end registers with the core: a lookup, not a dispatcher. When an event
 * happens the core asks it for that event's handlers and runs them itself ({@link runAllHandlers}),
 * so control goes down into the front end only for the host's own handlers. The Express router's
 * callbacks, the Nest module's listeners, Vendure's and Medusa's settlement are each one.
 */
export interface HandlerLookup {
  /** The handlers registered for an event name (all are run and awaited). */
  handlersOf(name: PaymentEventName): readonly AnyEventHandler[];
  /** Resolves once the handlers are registered (Nest registers them at bootstrap); default: at once. */
  ready?(): Promise<unknown>;
  /** What to add to the error of a confirmation nobody handles (how to register a handler). */
  hint?: string;
}

/**
 * A lookup that hands every event to one function: for a front end that maps the event names
 * itself, exhaustively (Vendure's settlement, Medusa's reports). Its `handle` runs for the
 * operations' events too, so a `payment.confirmed` always has a handler.
 */
export function everyEventTo(handle: (name: PaymentEventName, event: PaymentEvent) => unknown): HandlerLookup {
  return { handlersOf: (name) => [(event: PaymentEvent) => handle(name, event)] };
}

/**
 * The handlers the runner invokes, from the lookup a front end registered
 * (`client.setHandlers`). One per runner; nothing settles through anything else. A confirmation
 * with no handler fails (so it is retried, never marked done with nobody told); other events
 * without a handler are simply done.
 */
export class OutcomeHandlers {
  #lookup?: HandlerLookup;

  /** Sets the front end's lookup (`undefined`: none, outcomes are left unsettled). */
  set(lookup: HandlerLookup | undefined): void {
    this.#lookup = lookup;
  }

  /** Whether a lookup is set. */
  get ready(): boolean {
    return this.#lookup !== undefined;
  }

  /** Runs an outcome's handlers; rejects when one failed, or when no lookup is set yet (the outcome is then retried). */
  async run(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    const lookup = this.#lookup;
    if (!lookup) throw new Error('no outcome handlers are registered yet');
    await runFrom(lookup, name, event);
  }

  /** Runs the handlers of an outcome nothing waits on (`payment.mismatch`); no lookup: nothing runs. */
  async notify(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    if (this.#lookup) await runFrom(this.#lookup, name, event);
  }

  /** Runs an operation's handlers (no lookup: nothing runs). */
  async tell(
    name: PaymentEventName,
    event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
  ): Promise<void> {
    if (this.#lookup) await runFrom(this.#lookup, name, event);
  }
}

async function runFrom(lookup: HandlerLookup, name: PaymentEventName, event: PaymentEvent): Promise<void> {
  // An outcome settled before the front end registered its handlers must not find "no handler"
  // only because they are not registered yet.
  const ready = lookup.ready?.();
  if (ready !== undefined) await ready;
  const handlers = lookup.handlersOf(name);
  if (handlers.length === 0 && name === PaymentEvents.CONFIRMED)
    throw new Error(`no ${PaymentEvents.CONFIRMED} handler is registered${lookup.hint ?? ''}`);
  await runAllHandlers(handlers, event);
}
