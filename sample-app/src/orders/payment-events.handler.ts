import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  OnPaymentAuthorized,
  OnPaymentConfirmed,
  OnPaymentDuplicate,
  OnPaymentExpired,
  OnPaymentFailed,
  type PaymentAuthorizedEvent,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentExpiredEvent,
  type PaymentFailedEvent,
  type PaymentOutcomeEvent,
} from 'nestjs-payments';
import { SHOP_DATABASE, type ShopDatabase, type ShopDb } from '../db/database.js';
import { crashPoint } from './crash-points.js';
import type { Order } from './order.model.js';
import { OrdersRepository, TRANSITIONS } from './orders.repository.js';

/** The order states the payment outcomes lead to. */
type OutcomeStatus = 'paid' | 'failed' | 'expired' | 'authorized';

/**
 * Keeps orders in step with the payment service's verified outcomes. The plugin calls these
 * after `verify_payment`, whichever path came first (webhook, the customer's return, the
 * reconciliation), and once per outcome. The plugin's store is transactional: each handler runs
 * inside the plugin's outcome transaction (`event.transaction`), and the order's guarded UPDATE
 * plus its event row join it (see {@link OrdersRepository.transition}), so they commit together
 * with the outcome's "done" mark, or not at all: a crash anywhere in between rolls both back and
 * the next attempt starts clean. The guard stays, for the states admin actions move.
 *
 * A handler that throws (the database is down) leaves the outcome undone: the plugin runs it
 * again on the next webhook, return or reconciliation, and the admin page lists it meanwhile.
 * Cases a retry cannot fix (no such order) are logged, not thrown.
 */
@Injectable()
export class PaymentEventsHandler {
  private readonly logger = new Logger('Orders');

  constructor(
    private readonly orders: OrdersRepository,
    @Inject(SHOP_DATABASE) private readonly database: ShopDatabase,
  ) {}

  /** `SUCCESS`: the customer paid. */
  @OnPaymentConfirmed()
  async onConfirmed(event: PaymentConfirmedEvent): Promise<void> {
    await this.apply(event, 'paid');
  }

  /** `FAILURE` / `SYSTEM_FAILURE`: declined or failed; nothing was charged. */
  @OnPaymentFailed()
  async onFailed(event: PaymentFailedEvent): Promise<void> {
    await this.apply(event, 'failed');
  }

  /** `EXPIRED`: the checkout session ended unpaid. */
  @OnPaymentExpired()
  async onExpired(event: PaymentExpiredEvent): Promise<void> {
    await this.apply(event, 'expired');
  }

  /** `PREAUTH_SUCCESS`: a "capture later" order's amount is held on the card. */
  @OnPaymentAuthorized()
  async onAuthorized(event: PaymentAuthorizedEvent): Promise<void> {
    await this.apply(event, 'authorized');
  }

  /**
   * A second payment of an order that is already paid (two tabs, a second "Pay"): the plugin
   * never confirms it, so the order stays paid once. The admin lists it with a Refund button
   * (the plugin's outcome records), and the customer's return page says so.
   */
  @OnPaymentDuplicate()
  onDuplicate(event: PaymentDuplicateEvent): void {
    this.logger.warn(
      `order ${event.order}: payment ${event.paymentId} (${event.amount} millimes) is a second charge; the order was paid by ${event.settledBy.paymentId}. Refund it from the admin.`,
    );
  }

  private async apply(event: PaymentOutcomeEvent, to: OutcomeStatus): Promise<void> {
    // Every statement goes through the outcome's transaction: on PGlite, one sent on the database
    // itself would wait for that transaction to end, which waits for this handler.
    const within = event.transaction && this.database.within(event.transaction.client);
    const order = await this.orderOf(event, within);
    if (!order) {
      this.logger.warn(`${to} outcome of payment ${event.paymentId} matches no order; ignored`);
      return;
    }
    // The plugin already checked the verified amount and tracking id against what it sent;
    // this checks them against the order itself, the shop's own record.
    // An earlier payment of the order (before a "Pay again" from the order page) may be the one
    // that is paid: the plugin confirms one payment per order (its tracking id), so it becomes
    // the order's. An earlier attempt that failed or expired says nothing about the order.
    const settles = to === 'paid' || to === 'authorized';
    const ownPayment =
      order.paymentId === undefined ||
      order.paymentId === event.paymentId ||
      (settles && event.developerTrackingId === order.id);
    if (!ownPayment) {
      this.logger.error(
        `${to} outcome of payment ${event.paymentId} names order ${order.id}, which belongs to payment ${order.paymentId}; ignored`,
      );
      return;
    }
    if (event.amount !== order.amount) {
      this.logger.error(
        `${to} outcome of payment ${event.paymentId} is for ${event.amount} millimes, order ${order.id} costs ${order.amount}; ignored`,
      );
      return;
    }
    await crashPoint('before-update', order.id);
    const result = await this.orders.transition(order.id, {
      to,
      from: TRANSITIONS[to],
      source: event.source,
      serviceStatus: event.status,
      // Set when the shop stopped between creating the payment and recording its id, or when
      // another payment of the order settled it.
      set: order.paymentId !== event.paymentId ? { paymentId: event.paymentId } : undefined,
      inTransaction: () => crashPoint('in-transaction', order.id),
      within,
    });
    if (result?.changed) {
      // Once committed, with the outcome's done mark: a rolled-back change is not announced.
      event.afterCommit(async () => {
        this.logger.log(`order ${order.id}: ${to} (payment ${event.paymentId}, ${event.status}, via ${event.source})`);
        await crashPoint('after-commit', order.id);
      });
    }
  }

  private async orderOf(event: PaymentOutcomeEvent, within: ShopDb | undefined): Promise<Order | undefined> {
    const byTracking =
      event.developerTrackingId !== undefined ? await this.orders.get(event.developerTrackingId, within) : undefined;
    return byTracking ?? (await this.orders.findByPaymentId(event.paymentId, within));
  }
}
