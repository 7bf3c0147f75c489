import { MemoryRateLimiter } from './memory.limiter.js';
import { positiveMs } from './store.rules.js';
import { ClaimRefundLedger } from './refund.claims.js';
import { closeCheckoutWith, openCheckoutWith } from './checkout.claims.js';
import type { OrderLedger, PaymentsStore, RateLimiter, RefundLedger } from './store.ports.js';
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
} from './store.types.js';

/** How long {@link BasicPaymentsStore.settleOrder} waits for the record of a payment that won an order's claim. */
const SETTLEMENT_READ = { attempts: 40, pollMs: 50 } as const;

/**
 * The base of a custom {@link PaymentsStore}: implement the thirteen basic methods (each atomic
 * across your instances) and it provides the rest.
 *
 * - {@link BasicPaymentsStore.findBindingAndClaim} and {@link BasicPaymentsStore.finishOutcome}
 *   are built from the basic methods: correct, in more round trips than the shipped stores' single
 *   atomic step (2 and 4). Override them when your backend can do either in one step.
 * - {@link BasicPaymentsStore.settleOrder} (one confirmation per order) is built from a claim
 *   (owned by the payment, leased for the order's TTL) and a binding under `order:<orderKey>`;
 *   {@link BasicPaymentsStore.saveCheckout} keeps nothing, so `generatePayment` opens a new payment
 *   on every call: override both checkout methods to make checkout idempotent per order.
 *   {@link BasicPaymentsStore.openCheckout} and {@link BasicPaymentsStore.closeCheckout} (the
 *   order's lock and checkout around `generatePayment`'s call) are built from claims and those two
 *   methods; override them when your backend can do each in one atomic step.
 * - {@link BasicPaymentsStore.swapRefund} (a refund sent at most once per payment) is built from
 *   claims and bindings (`ClaimRefundLedger`): the record is a binding under
 *   `refund-record:<key>`, written under the claim `refund-lock:<key>`. Override both refund
 *   methods to keep the records in a table of your own, in one atomic step.
 * - {@link BasicPaymentsStore.rateLimits} is a {@link MemoryRateLimiter}: per instance, so with
 *   several app instances each one limits on its own. Override it with a limiter on your backend
 *   (see {@link RateLimiter}) to share the limit.
 *
 * ```ts
 * class MyStore extends BasicPaymentsStore {
 *   async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number) { ... }
 *   // ... the other basic methods
 * }
 * ```
 *
 * The contract a store must pass is `test/support/store-contract.ts`, which this class passes over
 * plain maps.
 */
export abstract class BasicPaymentsStore implements PaymentsStore, OrderLedger, RefundLedger {
  /** The webhook's rate limits: in this process, per instance, unless a subclass overrides it. */
  readonly rateLimits: RateLimiter = new MemoryRateLimiter();

  /** @inheritdoc */
  abstract saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void>;
  /** @inheritdoc */
  abstract findBinding(tokenId: string): Promise<PaymentBinding | undefined>;
  /** @inheritdoc */
  abstract claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome>;
  /** @inheritdoc */
  abstract markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean>;
  /** @inheritdoc */
  abstract release(eventKey: string, owner: string): Promise<void>;
  /** @inheritdoc */
  abstract schedulePending(entry: PendingPayment, dueAt: number): Promise<void>;
  /** @inheritdoc */
  abstract takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]>;
  /** @inheritdoc */
  abstract findPending(paymentId: string): Promise<PendingPayment | undefined>;
  /** @inheritdoc */
  abstract removePending(paymentId: string): Promise<void>;
  /** @inheritdoc */
  abstract countPending(): Promise<number>;
  /** @inheritdoc */
  abstract saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void>;
  /** @inheritdoc */
  abstract getOutcome(paymentId: string): Promise<OutcomeRecord | undefined>;
  /** @inheritdoc */
  abstract listOutcomes(query?: OutcomeQuery): Promise<OutcomePage>;

  /**
   * {@link BasicPaymentsStore.claim} of `order:<orderKey>` with the payment id as its owner (the
   * atomic part: the first payment wins, and the same payment claiming again keeps it), then the
   * winner's binding under the same key says which payment holds the order to the others.
   */
  async settleOrder(orderKey: string, settlement: OrderSettlement, ttlMs: number): Promise<OrderSettlement> {
    const key = `order:${orderKey}`;
    const claimed = await this.claim(key, settlement.paymentId, ttlMs);
    if (claimed === 'claimed') {
      const { paymentId, amount } = settlement;
      await this.saveBinding(
        key,
        { paymentId, amount, developerTrackingId: orderKey, createdAt: new Date().toISOString() },
        ttlMs,
      );
      return { paymentId, amount };
    }
    // Another payment holds the claim; its binding follows its claim by one call.
    for (let attempt = 0; attempt < SETTLEMENT_READ.attempts; attempt++) {
      const held = await this.findOrderSettlement(orderKey);
      if (held) return held;
      await new Promise((resolve) => setTimeout(resolve, SETTLEMENT_READ.pollMs));
    }
    throw new Error(
      `BasicPaymentsStore: order ${JSON.stringify(orderKey)} is held by another payment whose record is not written yet`,
    );
  }

  /** The binding saved under `order:<orderKey>` by {@link BasicPaymentsStore.settleOrder}. */
  async findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined> {
    const found = await this.findBinding(`order:${orderKey}`);
    return found ? { paymentId: found.paymentId, amount: found.amount } : undefined;
  }

  /** The record kept by {@link BasicPaymentsStore.swapRefund}. */
  findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    return new ClaimRefundLedger(this).findRefund(refundKey);
  }

  /** A compare-and-set over a binding, under a claim of the record (see the class's description). */
  swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap> {
    return new ClaimRefundLedger(this).swapRefund(refundKey, record, expectedOwner, ttlMs);
  }

  /** Keeps nothing: override it with {@link BasicPaymentsStore.findCheckout} to reuse an order's open payment. */
  async saveCheckout(_orderKey: string, _checkout: OrderCheckout, _ttlMs: number): Promise<void> {}

  /** Finds nothing (see {@link BasicPaymentsStore.saveCheckout}). */
  async findCheckout(_orderKey: string): Promise<OrderCheckout | undefined> {
    return undefined;
  }

  /**
   * {@link BasicPaymentsStore.claim} of `checkout:<orderKey>`, THEN
   * {@link BasicPaymentsStore.findCheckout}, then the found payment's standing
   * ({@link BasicPaymentsStore.getOutcome} and {@link BasicPaymentsStore.findOrderSettlement} of its
   * cancellation note, together): two or three round trips where the shipped stores take one.
   * The claim is the atomic part; reading after it sees every checkout saved before the lock's
   * previous owner released it. Override it (with {@link BasicPaymentsStore.closeCheckout}) when
   * your backend can do it in one step.
   */
  openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    return openCheckoutWith(this, open);
  }

  /** {@link BasicPaymentsStore.saveCheckout} (when `save` is given), THEN {@link BasicPaymentsStore.release} of `checkout:<orderKey>`. */
  closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    return closeCheckoutWith(this, orderKey, owner, save);
  }

  /**
   * {@link BasicPaymentsStore.findBinding}, then {@link BasicPaymentsStore.claim} only when the
   * binding names `paymentId`. Two steps are as safe as one here: the claim is the atomic part, and
   * a binding that changes in between (a token rebound to the payment it was signed for) still
   * names the same payment.
   */
  async findBindingAndClaim(
    tokenId: string,
    paymentId: string,
    eventKey: string,
    owner: string,
    leaseMs: number,
  ): Promise<BindingClaim> {
    const binding = await this.findBinding(tokenId);
    if (binding?.paymentId !== paymentId) return { binding };
    return { binding, claim: await this.claim(eventKey, owner, leaseMs) };
  }

  /**
   * Reads the current record and saves the new one with its `attempts` counted from it, THEN
   * marks the claim done (and leaves the queue) or releases it.
   *
   * The order is what makes the count right without an atomic read-modify-write: the record is
   * written while the attempt still holds the payment's claim, and claims are exclusive, so no
   * other attempt at the payment is between its own read and write meanwhile. The next one can
   * only claim after this markDone or release, hence reads this write. (Written after the claim
   * was given up, as the core's old fallback did, a redelivery claiming at once could read the
   * record before this write and both would save the same count.)
   *
   * An attempt whose lease expired while its handlers ran (the core logs it: they may then run
   * twice) still writes the record, as with every store, but is no longer serialised by the claim.
   */
  async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    // Checked before anything is written, as the shipped stores do in their single step.
    positiveMs('BasicPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
    positiveMs('BasicPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
    const { paymentId } = finish.record;
    const previous = await this.getOutcome(paymentId);
    const record: OutcomeRecord = { ...finish.record, attempts: (previous?.attempts ?? 0) + finish.attemptsAdded };
    await this.saveOutcome(record, finish.recordTtlMs);
    if (finish.claim === 'release') {
      await this.release(finish.eventKey, finish.owner);
      return false;
    }
    const marked = await this.markDone(finish.eventKey, finish.owner, finish.doneTtlMs);
    await this.removePending(paymentId);
    return marked;
  }
}
