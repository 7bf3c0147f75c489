import { type PaymentRefund, type VerifiedPayment, orderLedgerKey } from '../api/index.js';
import { type PaymentsLogger, describe } from '../common/index.js';
import type { DuplicateRefund, OrderLedger, OrderSettlement, PaymentsStore } from '../store/index.js';
import type { Clock } from '../time/index.js';
import type { OutcomeHandlers } from './outcome.handlers.js';
import { PaymentDuplicateEvent, PaymentEvents, type PaymentOutcomeEvent } from './payment.events.js';
import type { Attempt, OrderScreenPort } from './settlement.attempt.js';
import { orderVerdict, refundFailure, refundPlan } from './settlement.orders.js';
import type { SettleResult } from './settlement.request.js';

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
  /** `duplicates.refund`: refund every duplicate through the normal refund path. */
  refund: boolean;
  /** Refunds a payment (the client's refundPayment, which emits `payment.refunded` naming the order's payment). */
  refundPayment: (paymentId: string, duplicateOf: string) => Promise<PaymentRefund>;
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
 * wins, across instances) or finds it settled by another; a duplicate is refunded when asked, its
 * `payment.duplicate` handlers run, and its claim is finished, so that it happens once.
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
  ): Promise<SettleResult | undefined> {
    const { ledger, store, transactional, ttls } = this.options;
    const { source } = attempt;
    const { paymentId, developerTrackingId: order } = verification;
    if (order === undefined) return undefined;
    let held: OrderSettlement | undefined;
    try {
      const orderKey = orderLedgerKey(this.options.registration, order);
      // A pre-authorization is only checked: it never settles the order (settlement.orders.ts).
      held =
        transactional || mode === 'check'
          ? await ledger.findOrderSettlement(orderKey)
          : await ledger.settleOrder(orderKey, { paymentId, amount: verification.amount }, ttls.doneTtlMs);
    } catch (error) {
      attempt.abandonClaim();
      this.options.logger.error(
        `${source}: store unreachable while settling the order of ${paymentId}: ${describe(error)}`,
      );
      return { kind: 'store-unavailable', error: describe(error) };
    }
    const verdict = orderVerdict(paymentId, order, held);
    if (verdict.kind === 'confirm') return undefined;

    const settledBy = verdict.settledBy;
    const result = (refund?: DuplicateRefund, error?: string): SettleResult => ({
      kind: 'order-duplicate',
      outcome: 'duplicate',
      verification,
      settledBy,
      refund,
      error,
    });
    const record = (handlers: 'succeeded' | 'failed' | 'none', refund?: DuplicateRefund, lastError?: string) =>
      ({ verification, outcome: 'duplicate', handlers, settledBy: settledBy.paymentId, refund, lastError }) as const;
    const previous = await store.getOutcome(paymentId).catch(() => undefined);
    let refund = previous?.outcome === 'duplicate' ? previous.refund : undefined;
    let refundError: string | undefined;
    const hold = mode === 'check';
    if (refundPlan(this.options.refund, refund, hold) === 'call') {
      try {
        refund = toDuplicateRefund(await this.options.refundPayment(paymentId, settledBy.paymentId));
        // Recorded at once: a handler failing next must not make the next attempt refund again.
        await store.saveOutcome(
          { ...attempt.finishOf('done', record('none', refund)).record, attempts: previous?.attempts ?? 0 },
          ttls.recordTtlMs,
        );
      } catch (error) {
        if (refund === undefined && refundFailure(error) === 'retry') {
          const why = `the refund of duplicate ${paymentId} failed; tried again on the next webhook, return or reconciliation: ${describe(error)}`;
          this.options.logger.warn(`${source}: ${why}`);
          await attempt.finish('release', record('failed', undefined, why));
          return result(undefined, why);
        }
        if (refund === undefined) refundError = describe(error);
      }
    }

    this.options.logger.warn(
      hold
        ? `${source}: payment ${paymentId} of order ${JSON.stringify(order)} was pre-authorized after payment ${settledBy.paymentId} had settled it: a duplicate hold; capturePayment refuses it, release it with cancelPayment`
        : `${source}: payment ${paymentId} of order ${JSON.stringify(order)} succeeded after payment ${settledBy.paymentId} had settled it: a duplicate charge${refund ? `, refunded (${refund.refundId})` : ''}`,
    );
    const event = new PaymentDuplicateEvent(
      verification,
      source,
      this.options.registration,
      settledBy,
      refund,
      refundError,
      new Date(this.options.clock.now()),
    );
    // The claim is renewed while the handlers run, as for a confirmation: a slow handler must not
    // let a redelivery run them a second time.
    const renewal = attempt.renew();
    try {
      await attempt.observe.handlers(PaymentEvents.DUPLICATE, () => handlers.run(PaymentEvents.DUPLICATE, event));
    } catch (error) {
      await renewal.stop();
      const why = describe(error);
      this.options.logger.warn(
        `${source}: a ${PaymentEvents.DUPLICATE} handler failed for ${paymentId}; it will run again: ${why}`,
      );
      await attempt.finish('release', record('failed', refund, why));
      return result(refund, why);
    }
    await renewal.stop();
    await attempt.finish('done', record('succeeded', refund, refundError && `refund refused: ${refundError}`));
    return result(refund);
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

function toDuplicateRefund(refund: PaymentRefund): DuplicateRefund {
  return { refundId: refund.refundId, amount: refund.amount, status: refund.status, refundedAt: refund.refundedAt };
}
