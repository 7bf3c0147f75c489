import { Injectable, Logger } from '@nestjs/common';
import {
  OnPaymentConfirmed,
  OnPaymentEvent,
  PaymentCancelledEvent,
  PaymentConfirmedEvent,
  PaymentEvents,
  PaymentRefundedEvent,
} from 'nestjs-payments';
import type { Order } from './order.model.js';
import { OrdersStore } from './orders.store.js';

/**
 * Payload statuses that mean the customer did not pay. The spec says the webhook carries
 * payment confirmation and shows no payload, so a delivery is a payment; but should a service
 * also post declines there with a status like these, they must not become paid orders.
 */
const DECLINED_STATUSES = new Set(['failed', 'declined', 'rejected', 'error', 'expired', 'cancelled', 'canceled']);

/**
 * Keeps orders in step with the payment service. Every handler is idempotent (the store's
 * transitions are), since a confirmation may be delivered again after a crash.
 */
@Injectable()
export class PaymentEventsHandler {
  private readonly logger = new Logger('Orders');

  constructor(private readonly orders: OrdersStore) {}

  /**
   * The service confirmed a payment through the plugin's signed webhook: mark the order paid
   * (or failed, for a payload that says it was declined). Awaited before the webhook answers; a throw here would make the
   * service deliver it again, so cases a retry cannot fix are logged instead of thrown.
   */
  @OnPaymentConfirmed()
  onConfirmed(event: PaymentConfirmedEvent): void {
    const order = this.orderOf(event.paymentId, event.developerTrackingId);
    if (!order) {
      this.logger.warn(`confirmation of ${event.paymentId} matches no order; ignored`);
      return;
    }
    // The tracking id alone is ours to trust only together with the payment it was sent with.
    if (order.paymentId !== undefined && order.paymentId !== event.paymentId) {
      this.logger.warn(`confirmation of ${event.paymentId} names order ${order.id}, which belongs to payment ${order.paymentId}; ignored`);
      return;
    }
    if (event.amount !== order.amount) {
      this.logger.error(`confirmation of ${event.paymentId} is for ${event.amount} millimes, order ${order.id} costs ${order.amount}; not marked paid`);
      return;
    }
    const status = typeof event.payload.status === 'string' ? event.payload.status.toLowerCase() : undefined;
    if (status !== undefined && DECLINED_STATUSES.has(status)) {
      const result = this.orders.markFailed(order.id);
      if (result?.changed) this.logger.log(`order ${order.id}: payment ${event.paymentId} declined (${status})`);
      return;
    }
    const result = this.orders.markPaid(order.id, event.paymentId);
    if (result?.changed) this.logger.log(`order ${order.id}: paid by ${event.paymentId}`);
  }

  /** `refundPayment` succeeded (from the admin page): mark the order refunded. */
  @OnPaymentEvent(PaymentEvents.REFUNDED)
  onRefunded(event: PaymentRefundedEvent): void {
    const order = this.orders.findByPaymentId(event.paymentId);
    if (order && this.orders.markRefunded(order.id, event.refundId)?.changed) {
      this.logger.log(`order ${order.id}: refunded (${event.refundId})`);
    }
  }

  /** `cancelPayment` succeeded (from the admin page): mark the order cancelled. */
  @OnPaymentEvent(PaymentEvents.CANCELLED)
  onCancelled(event: PaymentCancelledEvent): void {
    const order = this.orders.findByPaymentId(event.paymentId);
    if (order && this.orders.markCancelled(order.id)?.changed) {
      this.logger.log(`order ${order.id}: pre-authorization cancelled`);
    }
  }

  private orderOf(paymentId: string, trackingId: string | undefined): Order | undefined {
    return (trackingId !== undefined ? this.orders.get(trackingId) : undefined) ?? this.orders.findByPaymentId(paymentId);
  }
}
