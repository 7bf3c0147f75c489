import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { CatalogItem } from '../catalog/catalog.service.js';
import type { Order, OrderState } from './order.model.js';

/** Result of a state change: the order after it, and whether anything changed. */
export interface OrderTransition {
  /** The order after the call (unchanged when `changed` is false). */
  readonly order: Order;
  /** False when the order was already in the target state or cannot move to it. */
  readonly changed: boolean;
}

/** Which states each transition may start from. */
const ALLOWED_FROM: Record<'paid' | 'failed' | 'refunded' | 'cancelled', readonly OrderState[]> = {
  // A confirmation after the customer came back through the fail page still means the money
  // moved: it wins (the fail page is only a hint, see OrdersController.failed).
  paid: ['pending', 'failed'],
  failed: ['pending'],
  refunded: ['paid'],
  cancelled: ['preauthorized'],
};

/**
 * The shop's orders, in memory (a real shop keeps them in its database). Every change is a
 * guarded transition, so repeating one (a redelivered webhook, a double click) changes nothing.
 */
@Injectable()
export class OrdersStore {
  private readonly orders = new Map<string, Order>();

  /** Creates an order for one product, `pending` (checkout) or `preauthorized` (sandbox test order). */
  create(product: CatalogItem, state: 'pending' | 'preauthorized' = 'pending'): Order {
    const now = new Date();
    const order: Order = Object.freeze({
      id: `ord_${randomBytes(8).toString('hex')}`,
      productId: product.id,
      productName: product.name,
      amount: product.amount,
      state,
      createdAt: now,
      updatedAt: now,
    });
    this.orders.set(order.id, order);
    return order;
  }

  /** Records the payment created for an order. */
  attachPayment(orderId: string, paymentId: string): Order | undefined {
    return this.update(orderId, { paymentId });
  }

  /** The order with this id, or undefined. */
  get(orderId: string): Order | undefined {
    return this.orders.get(orderId);
  }

  /** The order whose payment has this id, or undefined. */
  findByPaymentId(paymentId: string): Order | undefined {
    for (const order of this.orders.values()) if (order.paymentId === paymentId) return order;
    return undefined;
  }

  /** Every order, newest first. */
  list(): Order[] {
    return [...this.orders.values()].reverse();
  }

  /** pending/failed -> paid. Idempotent. */
  markPaid(orderId: string, paymentId: string): OrderTransition | undefined {
    return this.transition(orderId, 'paid', { paymentId });
  }

  /** pending -> failed. Idempotent; never undoes a payment. */
  markFailed(orderId: string): OrderTransition | undefined {
    return this.transition(orderId, 'failed');
  }

  /** paid -> refunded. Idempotent. */
  markRefunded(orderId: string, refundId: string): OrderTransition | undefined {
    return this.transition(orderId, 'refunded', { refundId });
  }

  /** preauthorized -> cancelled. Idempotent. */
  markCancelled(orderId: string): OrderTransition | undefined {
    return this.transition(orderId, 'cancelled');
  }

  private transition(orderId: string, to: keyof typeof ALLOWED_FROM, extra: Partial<Order> = {}): OrderTransition | undefined {
    const order = this.orders.get(orderId);
    if (!order) return undefined;
    if (!ALLOWED_FROM[to].includes(order.state)) return { order, changed: false };
    return { order: this.update(orderId, { ...extra, state: to })!, changed: true };
  }

  private update(orderId: string, changes: Partial<Order>): Order | undefined {
    const order = this.orders.get(orderId);
    if (!order) return undefined;
    const next: Order = Object.freeze({ ...order, ...changes, updatedAt: new Date() });
    this.orders.set(orderId, next);
    return next;
  }
}
