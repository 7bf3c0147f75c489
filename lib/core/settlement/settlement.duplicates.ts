import { normalizeMillimes, type PaymentRefund, type PaymentRefunder, type VerifiedPayment } from '../api/index.js';
import { assertNever, describe, type PaymentsLogger } from '../common/index.js';
import type { OrderCheckout, OrderLedger, OrderSettlement, PaymentsStore, RefundRecord } from '../store/index.js';
import type { Clock } from '../time/index.js';
import { checkoutKey, orderLedgerKey } from './settlement.orders.js';
import { REFUND_RECORD_TTL_MS, type RefundSent, sendRefund } from './refund.sender.js';
import {
  PaymentDuplicateEvent,
  PaymentEvents,
  PaymentRefundedEvent,
  type OutcomeHandlers,
  type PaymentOutcomeEvent,
} from './payment.events.js';
import type { Attempt, OrderScreenPort, SupersededPayment } from './settlement.attempt.js';
import { MAX_REFUND_TRIES, orderVerdict, refundPlan, type RefundSoFar } from './settlement.orders.js';
import type { SettleResult } from './settlement.request.js';

/**
 * Two tabs of one order, the cart changed between them: `generatePayment` opened a payment for
 * the new cart and recorded the open one as superseded (payments.checkout.ts). This is what a
 * successful payment is, given the order's checkout: one pure function, table-tested in
 * test/settlement/superseded.spec.ts, carried out by the order screen (settlement.duplicates.ts).
 *
 * - A superseded payment (paid for a cart the order no longer has) never settles the order: while
 *   nobody settled it, it is a `mismatch` that waits for a person (recorded, `payment.mismatch`,
 *   never `payment.confirmed`), whether the current cart's payment is paid later or never. Once
 *   another payment settled the order, it is a duplicate of that one as any other (refunded with
 *   `duplicates.refund`: it is the old cart's charge).
 * - The order's current payment is never refunded automatically when the order was settled by a
 *   payment of another cart (a superseded one, or another amount): a duplicate, held for a person.
 * - Everything else is decided by the order rule as ever (`orderVerdict`, settlement.orders.ts).
 */
export type CheckoutVerdict =
  { kind: 'order'; refundable: boolean } | { kind: 'superseded'; current: Pick<OrderCheckout, 'paymentId' | 'amount'> };

/** Whether the order's checkout lists `paymentId` among the payments a newer cart's payment replaced. */
export function isSuperseded(paymentId: string, checkout: OrderCheckout | undefined): boolean {
  return checkout !== undefined && checkout.paymentId !== paymentId && (checkout.superseded ?? []).includes(paymentId);
}

/** Whether the order's checkout knows `paymentId`, as its current payment or a superseded one (its write may never have landed). */
function knowsPayment(checkout: OrderCheckout, paymentId: string): boolean {
  return checkout.paymentId === paymentId || isSuperseded(paymentId, checkout);
}

/**
 * What a successful payment of an order is, given the order's checkout (see {@link CheckoutVerdict}).
 * @param paymentId the payment that verified `SUCCESS`
 * @param checkout the order's open checkout (its current payment, the superseded ones), when the store has it
 * @param held the order's settlement as the store answers it: `undefined` when nobody settled the order
 * @param amount the payment's verified amount
 */
export function checkoutVerdict(
  paymentId: string,
  checkout: OrderCheckout | undefined,
  held: OrderSettlement | undefined,
  amount: string,
): CheckoutVerdict {
  // The checkout gone (expired or evicted), or one that never learnt of this payment (its write
  // did not land): a duplicate of another amount may be a changed cart's current payment, so only
  // one of the settling payment's amount (a double charge) is refunded.
  if (checkout === undefined || !knowsPayment(checkout, paymentId))
    return {
      kind: 'order',
      refundable: held === undefined || held.paymentId === paymentId || sameAmount(held.amount, amount),
    };
  if (isSuperseded(paymentId, checkout) && held === undefined)
    return { kind: 'superseded', current: { paymentId: checkout.paymentId, amount: checkout.amount } };
  const anotherCart =
    checkout.paymentId === paymentId &&
    held !== undefined &&
    held.paymentId !== paymentId &&
    (isSuperseded(held.paymentId, checkout) || !sameAmount(held.amount, checkout.amount));
  return { kind: 'order', refundable: !anotherCart };
}

/** Why the order's current payment was not refunded automatically (the event's `refundError`). */
export function heldRefundReason(
  paymentId: string,
  checkout: OrderCheckout | undefined,
  held: OrderSettlement,
  amount: string,
): string {
  if (checkout === undefined || !knowsPayment(checkout, paymentId))
    return `not refunded automatically: ${paymentId} (${amount}) is not of the amount of payment ${held.paymentId} that settled the order (${held.amount}), and the order's checkout does not know it, so it may be a changed cart's current payment; refund one of them by hand`;
  return `not refunded automatically: ${paymentId} is the order's current payment (${checkout.amount}), and the order was settled by payment ${held.paymentId} of another cart (${held.amount}); refund one of them by hand`;
}

/**
 * The problem a superseded payment is reported with (its `payment.mismatch`): what a person does
 * about it, a refund for a payment, the hold's release for a pre-authorization (nothing was taken).
 * @param hold whether the payment is a pre-authorization
 */
export function supersededProblem(
  paymentId: string,
  current: Pick<OrderCheckout, 'paymentId' | 'amount'>,
  hold = false,
): string {
  const what = `payment ${paymentId} was superseded by payment ${current.paymentId} (${current.amount}) of the same order, the cart having changed`;
  return hold
    ? `${what}: held for the old cart, never authorized for the order; release the hold (cancelPayment), or settle the order by hand`
    : `${what}: paid for the old cart, never confirmed; refund it, or settle the order by hand`;
}

function sameAmount(a: string, b: string): boolean {
  return (normalizeMillimes(a) ?? a) === (normalizeMillimes(b) ?? b);
}

/** Settings of the {@link OrderScreen}. */
export interface OrderScreenOptions {
  /** The store's order ledger. */
  ledger: OrderLedger;
  /** The store (claims, records). */
  store: PaymentsStore;
  /** Whether the store runs the handlers in transactions (the order is then settled inside them). */
  transactional: boolean;
  /** How long an order's settlement and a done marker are remembered, and records kept, in ms. */
  ttls: { doneTtlMs: number; recordTtlMs: number };
  /** `duplicates.refund`: refund every duplicate through the normal refund path, at most once. */
  refund: boolean;
  /** Sends a duplicate's refund to the service (the screen then emits `payment.refunded`, naming the order's payment). */
  refunder: PaymentRefunder;
  /**
   * Told of every failed refund call: the verify budget counts it as it counts a failed verify (a
   * 429 pauses every path, a service that gives no answer counts towards the circuit breaker).
   * Default: nothing.
   */
  noteRefundFailure?: (error: unknown) => void;
  /** The registration's name, for the events. */
  registration?: string;
  /** Where problems are reported. */
  logger: PaymentsLogger;
  /** The time shared with the other instances (record times). */
  clock: Clock;
}

/** Thrown inside a confirmation's transaction when another payment settled its order meanwhile: rolls it back. */
export class OrderSettledMeanwhileError extends Error {
  /** @param paymentId the payment whose confirmation rolls back; @param settledBy the one that settled the order */
  constructor(paymentId: string, settledBy: string) {
    super(
      `payment ${paymentId} was not confirmed: its order was settled by payment ${settledBy} meanwhile; it is handled as a duplicate next time`,
    );
    this.name = 'OrderSettledMeanwhileError';
  }
}

/**
 * One confirmation per order, carried out: called by the settlement runner when a payment it
 * holds the claim of verified `SUCCESS` (or `PREAUTH_SUCCESS`: a hold is checked against the
 * order, never settles it). It settles the payment's order in the store (first payment
 * wins, across instances) or finds it settled by another; a duplicate's `payment.duplicate`
 * handlers run once, on the attempt that finds it, whatever its refund does, and its claim is
 * finished, so that it happens once.
 *
 * With `duplicates.refund`, the refund is sent at most once per payment (the payment's refund
 * record in the store, {@link sendRefund}): a call whose answer was lost is recorded `unknown` and never
 * sent again; only a call that cannot have reached the service is tried again, on a later attempt
 * (the payment's claim is released for it), at most {@link MAX_REFUND_TRIES} calls in all. Its
 * state is in the outcome record (`refundState`); a refund made emits `payment.refunded`.
 *
 * With a transactional store the order is settled inside the confirmation's transaction (see
 * {@link OrderScreen.guard}): here it is only read, and a payment that passes the read but loses
 * the race inside the transaction is rolled back and handled as a duplicate on its next attempt.
 */
export class OrderScreen implements OrderScreenPort {
  /** Payments whose confirmation rolled back because another payment settled their order meanwhile. */
  readonly #lost = new Set<string>();

  /** @param options see {@link OrderScreenOptions} */
  constructor(private readonly options: OrderScreenOptions) {}

  /**
   * Whether the confirmation of `paymentId` just rolled back in this process because another
   * payment settled its order inside its transaction (forgotten once asked): its next attempt is
   * a duplicate, so a return can settle it again at once rather than report a failure.
   */
  takeLostRace(paymentId: string): boolean {
    return this.#lost.delete(paymentId);
  }

  /** @inheritdoc */
  async screen(
    attempt: Attempt,
    verification: VerifiedPayment,
    handlers: OutcomeHandlers,
    mode: 'settle' | 'check',
  ): Promise<SettleResult | SupersededPayment | undefined> {
    const { ledger, store, transactional, ttls } = this.options;
    const { source } = attempt;
    const { paymentId, developerTrackingId: order } = verification;
    if (order === undefined) return undefined;
    let held: OrderSettlement | undefined;
    let checkout: OrderCheckout | undefined;
    try {
      const orderKey = orderLedgerKey(this.options.registration, order);
      // Whether the cart changed since this payment was opened (two tabs): a superseded payment only reads the order.
      const checkoutOf = checkoutKey(undefined, order, this.options.registration);
      checkout = checkoutOf === undefined ? undefined : await ledger.findCheckout(checkoutOf);
      // A pre-authorization is only checked: it never settles the order (settlement.orders.ts).
      held =
        transactional || mode === 'check' || isSuperseded(paymentId, checkout)
          ? await ledger.findOrderSettlement(orderKey)
          : await ledger.settleOrder(orderKey, { paymentId, amount: verification.amount }, ttls.doneTtlMs);
    } catch (error) {
      attempt.abandonClaim();
      this.options.logger.error(
        `${source}: store unreachable while settling the order of ${paymentId}: ${describe(error)}`,
      );
      return { kind: 'store-unavailable', error: describe(error) };
    }
    const cart = checkoutVerdict(paymentId, checkout, held, verification.amount);
    if (cart.kind === 'superseded')
      return { kind: 'superseded', problems: [supersededProblem(paymentId, cart.current, mode === 'check')] };
    const verdict = orderVerdict(paymentId, order, held);
    if (verdict.kind === 'confirm') return undefined;

    const settledBy = verdict.settledBy;
    const previous = await store.getOutcome(paymentId).catch(() => undefined);
    const before = previous?.outcome === 'duplicate' ? previous : undefined;
    // Reported by an earlier attempt (its handlers succeeded): only the refund may be left to do.
    const reported = before?.handlers === 'succeeded';
    const attempts = previous?.attempts ?? 0;
    const record = (handlers: 'succeeded' | 'failed' | 'none', refund: RefundTried, lastError?: string) =>
      ({
        verification,
        outcome: 'duplicate',
        handlers,
        settledBy: settledBy.paymentId,
        refund: refund.refund,
        refundState: refund.refundState,
        refundTries: refund.refundTries,
        refundError: refund.error,
        lastError,
      }) as const;
    const save = (refund: RefundTried) =>
      store.saveOutcome(
        {
          ...attempt.finishOf('done', record(reported ? 'succeeded' : 'none', refund, refundNote(refund))).record,
          attempts,
        },
        ttls.recordTtlMs,
      );

    let refund: RefundTried = before
      ? {
          refund: before.refund,
          refundState: before.refundState,
          refundTries: before.refundTries,
          error: before.refundError,
        }
      : {};
    // The order's current payment, the order paid by another cart's: a person decides which to refund.
    // A held pre-authorization is never refunded: nothing was charged; it is released with `cancelPayment`.
    const hold = mode === 'check';
    const wanted = this.options.refund && cart.refundable && !hold;
    if (this.options.refund && !cart.refundable && refund.refundState === undefined)
      refund = { ...refund, error: heldRefundReason(paymentId, checkout, settledBy, verification.amount) };
    const plan = refundPlan(wanted, refund);
    if (plan === 'call' || plan === 'unknown') {
      refund =
        plan === 'call'
          ? await this.#refund(attempt, settledBy.paymentId, refund, save, handlers)
          : { ...refund, refundState: 'unknown', error: STOPPED_BEFORE_ANSWER };
      this.#logRefund(source, paymentId, refund);
      // Recorded at once: a handler failing next must not make the next attempt refund again.
      await save(refund).catch(() => undefined);
    }
    const note = refundNote(refund);
    const refundRetry = refund.refundState === 'retry' && refundPlan(wanted, refund) === 'call' ? note : undefined;
    const result = (error?: string): SettleResult => ({
      kind: 'order-duplicate',
      outcome: 'duplicate',
      verification,
      settledBy,
      refund: refund.refund,
      error,
      refundRetry: error === undefined ? refundRetry : undefined,
    });

    if (!reported) {
      this.options.logger.warn(
        hold
          ? `${source}: payment ${paymentId} of order ${JSON.stringify(order)} was pre-authorized after payment ${settledBy.paymentId} had settled it: a duplicate hold; capturePayment refuses it, release it with cancelPayment`
          : `${source}: payment ${paymentId} of order ${JSON.stringify(order)} succeeded after payment ${settledBy.paymentId} had settled it: a duplicate charge${refund.refund ? `, refunded (${refund.refund.refundId})` : ''}`,
      );
      const event = new PaymentDuplicateEvent(
        verification,
        source,
        this.options.registration,
        settledBy,
        refund.refund,
        refund.error,
        new Date(this.options.clock.now()),
        refund.refundState,
      );
      // The claim is renewed while the handlers run, as for a confirmation: a slow handler must not
      // let a redelivery run them a second time.
      const renewal = attempt.renew();
      try {
        await attempt.withinDeadline(() =>
          attempt.observe.handlers(PaymentEvents.DUPLICATE, () => handlers.run(PaymentEvents.DUPLICATE, event)),
        );
      } catch (error) {
        await renewal.stop();
        const why = describe(error);
        this.options.logger.warn(
          `${source}: a ${PaymentEvents.DUPLICATE} handler failed for ${paymentId}; it will run again: ${why}`,
        );
        // A lapsed claim is only given back: another attempt may have recorded the payment since.
        if (renewal.lapsed) await attempt.release();
        else await attempt.finish('release', record('failed', refund, why));
        return result(why);
      }
      await renewal.stop();
    }
    // A refund still to send keeps the payment open (its claim released) for the next attempt.
    await attempt.finish(refundRetry === undefined ? 'done' : 'release', record('succeeded', refund, note));
    return result();
  }

  /**
   * Sends the duplicate's refund, at most once per payment: by the payment's refund record in the
   * store ({@link sendRefund}; the record a platform's refund uses too), which only the attempt
   * that turns it into `sending` may send, and whoever finds it so, or unknown, does not send: an
   * earlier call may have refunded.
   * @param sending records the refund as on its way (once the record says so, before the call)
   */
  async #refund(
    attempt: Attempt,
    settledBy: string,
    soFar: RefundTried,
    sending: (refund: RefundTried) => Promise<void>,
    handlers: OutcomeHandlers,
  ): Promise<RefundTried> {
    const { store, ttls, registration, clock } = this.options;
    const { paymentId } = attempt;
    // The call may outlast the payment's lease: renewed as for the handlers, so no other attempt starts meanwhile.
    const call = async () => {
      const renewal = attempt.renew();
      try {
        const made = await this.options.refunder.refund(paymentId);
        await this.#announceRefund(handlers, made, settledBy);
        return made;
      } finally {
        await renewal.stop();
      }
    };
    let sent: RefundSent;
    try {
      sent = await sendRefund(
        { store, registration, clock, ttlMs: Math.max(ttls.recordTtlMs, REFUND_RECORD_TTL_MS) },
        paymentId,
        call,
        (record) => sending({ ...soFar, refundState: 'sending', refundTries: record.tries, error: undefined }),
      );
    } catch (error) {
      // Nothing was sent: not counted as a try.
      return { ...soFar, refundState: 'retry', refundTries: soFar.refundTries ?? 0, error: describe(error) };
    }
    const { record } = sent;
    if (sent.kind === 'sent' && sent.made === undefined) this.options.noteRefundFailure?.(sent.error);
    return triedOf(sent.kind, record);
  }

  /** `payment.refunded` for a duplicate's refund, naming the payment that settled its order; a failing handler is only logged. */
  async #announceRefund(handlers: OutcomeHandlers, made: PaymentRefund, settledBy: string): Promise<void> {
    const event = new PaymentRefundedEvent(
      made.paymentId,
      made.refundId,
      made.amount,
      made.refundedAt,
      this.options.registration,
      settledBy,
    );
    try {
      await handlers.tell(PaymentEvents.REFUNDED, event);
    } catch (error) {
      this.options.logger.error(`a ${PaymentEvents.REFUNDED} handler failed: ${describe(error)}`);
    }
  }

  #logRefund(source: string, paymentId: string, tried: RefundTried): void {
    const { logger } = this.options;
    const what = `${source}: the refund of duplicate ${paymentId}`;
    switch (tried.refundState) {
      case 'refunded':
      case 'sending':
      case undefined:
        return;
      case 'refused':
        return logger.warn(`${what} was refused by the service; refund it by hand if it must be: ${tried.error}`);
      case 'retry':
        return logger.warn(
          `${what} did not reach the service (${tried.refundTries ?? 0} of ${MAX_REFUND_TRIES} calls); tried again on the next attempt: ${tried.error}`,
        );
      case 'failed':
        return logger.error(
          `${what} did not reach the service in ${MAX_REFUND_TRIES} calls; not refunded: refund it by hand: ${tried.error}`,
        );
      case 'unknown':
        return logger.error(
          `${what} was sent but its answer was lost; it is never sent again: check at the service whether it was refunded (refund it by hand if not): ${tried.error}`,
        );
      default:
        return assertNever(tried.refundState);
    }
  }

  /**
   * With a transactional store, before the handlers of `payment.confirmed` run, the order is settled
   * through their transaction (committed with the done marker, or rolled back with it; a concurrent
   * confirmation of the same order waits for it). A payment that finds the order settled by another
   * rolls back ({@link OrderSettledMeanwhileError}).
   */
  async settleInTransaction(event: PaymentOutcomeEvent): Promise<void> {
    const order = event.developerTrackingId;
    if (!this.options.transactional || order === undefined || !event.transaction) return;
    const held = await this.options.ledger.settleOrder(
      orderLedgerKey(this.options.registration, order),
      { paymentId: event.paymentId, amount: event.amount },
      this.options.ttls.doneTtlMs,
      event.transaction,
    );
    if (held.paymentId !== event.paymentId) {
      this.#lost.add(event.paymentId);
      throw new OrderSettledMeanwhileError(event.paymentId, held.paymentId);
    }
  }
}

/** A refund's outcome after this attempt, with the error of its call when it failed. */
interface RefundTried extends RefundSoFar {
  error?: string;
}

/**
 * The duplicate's refund after this attempt, from the payment's refund record: as this attempt
 * left it (`sent`), or as found (`held`: nothing sent now; `sending` is then a call whose answer
 * was never recorded, `retry` one that may not be sent again).
 */
function triedOf(kind: RefundSent['kind'], record: RefundRecord): RefundTried {
  const tried: RefundTried = { refundState: record.state, refundTries: record.tries };
  if (record.refund) tried.refund = { ...record.refund };
  if (record.error !== undefined) tried.error = record.error;
  if (kind === 'sent') return tried;
  switch (record.state) {
    case 'sending':
    case 'unknown':
      return { ...tried, refundState: 'unknown', error: SENT_BEFORE };
    case 'retry':
      return { ...tried, refundState: 'failed' };
    case 'refunded':
    case 'refused':
    case 'failed':
      return tried;
    default:
      return assertNever(record.state);
  }
}

const SENT_BEFORE =
  'an earlier attempt sent this refund (its record says so) and its answer was not recorded; never sent again';
const STOPPED_BEFORE_ANSWER = 'an earlier attempt sent this refund and stopped before recording its answer';

/** The refund's line in the outcome record's `lastError`, for people (the log has the rest). */
function refundNote(refund: RefundTried): string | undefined {
  const why = refund.error === undefined ? '' : `: ${refund.error}`;
  switch (refund.refundState) {
    case undefined:
    case 'refunded':
    case 'sending':
      return undefined;
    case 'refused':
      return `refund refused${why}`;
    case 'retry':
      return `refund not sent yet (${refund.refundTries ?? 0} of ${MAX_REFUND_TRIES} calls), tried again${why}`;
    case 'failed':
      return `refund not sent in ${MAX_REFUND_TRIES} calls: refund it by hand${why}`;
    case 'unknown':
      return `refund unknown, needs a person: sent, its answer lost; never sent again${why}`;
    default:
      return assertNever(refund.refundState);
  }
}
