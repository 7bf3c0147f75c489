import { Inject, Injectable } from '@nestjs/common';
import { and, asc, desc, eq, inArray, isNotNull } from 'drizzle-orm';
import { randomBytes } from 'node:crypto';
import type { CatalogItem } from '../catalog/catalog.service.js';
import { SHOP_DATABASE, type ShopDatabase, type ShopDb } from '../db/database.js';
import { orderEvents, orders, type OrderEventKind, type OrderRow, type OrderStatus } from '../db/schema.js';
import { toOrder, type Order, type OrderEvent } from './order.model.js';

/** Result of a state change: the order after it, and whether this call changed it. */
export interface OrderTransition {
  /** The order after the call (as it was when `changed` is false). */
  readonly order: Order;
  /** False when the order was already past the transition: a repeat, or a state it cannot leave. */
  readonly changed: boolean;
}

/** A state change to apply: to which status, and what to record about it. */
export interface TransitionRequest {
  /** The new status (also the recorded event's kind). */
  to: OrderStatus & OrderEventKind;
  /** The statuses it may start from: the guard that makes a repeat change nothing. */
  from: readonly OrderStatus[];
  /** `webhook`, `return`, `reconciliation` (the plugin's outcome source), `admin` or `checkout`. */
  source: string;
  /** The payment service's status behind it. */
  serviceStatus?: string;
  /** A note for the history (captured amount, refund id...). */
  detail?: string;
  /** Columns set with the status. */
  set?: Partial<Pick<OrderRow, 'capturedAmount' | 'refundId' | 'paymentId'>>;
  /**
   * Runs inside the transaction after the update, before the commit (the crash tests hold the
   * shop here; a real shop could write an outbox row for its warehouse).
   */
  inTransaction?: (order: Order) => Promise<void>;
  /**
   * A transaction already open to join instead of opening one: the payments plugin's outcome
   * transaction (see `ShopDatabase.within`), so that the change commits with the outcome.
   */
  within?: ShopDb;
}

/** What a transition may start from, by target: the shop's state machine in one table. */
export const TRANSITIONS = {
  // A verified SUCCESS wins over an earlier failed/expired verdict: the money did move.
  paid: ['pending', 'failed', 'expired'],
  failed: ['pending'],
  expired: ['pending'],
  authorized: ['pending', 'failed', 'expired'],
  captured: ['authorized'],
  cancelled: ['authorized'],
  refunded: ['paid', 'captured'],
} as const satisfies Partial<Record<OrderStatus, readonly OrderStatus[]>>;

/**
 * The orders, in PostgreSQL (PGlite or a server) through Drizzle. Every change of state is one
 * transaction: `UPDATE orders ... WHERE id = $1 AND status IN (<allowed>)` and, only when a row
 * changed, the `order_events` row saying what happened. Running a handler twice (after a crash,
 * on two instances) therefore changes nothing the second time, and a unique index on
 * `(order_id, kind)` makes the database refuse a second "paid" even if a bug tried.
 */
@Injectable()
export class OrdersRepository {
  private readonly db: ShopDb;

  constructor(@Inject(SHOP_DATABASE) database: ShopDatabase) {
    this.db = database.db;
  }

  /** Creates a `pending` order for one product, and its `created` event. */
  async create(product: CatalogItem, options: { clientId?: string } = {}): Promise<Order> {
    const id = `ord_${randomBytes(8).toString('hex')}`;
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .insert(orders)
        .values({
          id,
          items: [{ productId: product.id, name: product.name, quantity: 1, unitAmount: product.amount }],
          amount: Number(product.amount),
          capture: product.capture,
          clientId: options.clientId ?? null,
        })
        .returning();
      await tx.insert(orderEvents).values({
        orderId: id,
        kind: 'created',
        source: 'checkout',
        detail: product.capture === 'later' ? 'capture later' : null,
      });
      return toOrder(row);
    });
  }

  /** Records the payment created for an order. */
  async attachPayment(orderId: string, paymentId: string): Promise<void> {
    await this.db.update(orders).set({ paymentId, updatedAt: new Date() }).where(eq(orders.id, orderId));
  }

  /** The order with this id, or undefined (read through `db`, e.g. an open transaction). */
  async get(orderId: string, db: ShopDb = this.db): Promise<Order | undefined> {
    const [row] = await db.select().from(orders).where(eq(orders.id, orderId)).limit(1);
    return row && toOrder(row);
  }

  /** The order whose payment has this id, or undefined (read through `db`, e.g. an open transaction). */
  async findByPaymentId(paymentId: string, db: ShopDb = this.db): Promise<Order | undefined> {
    const [row] = await db.select().from(orders).where(eq(orders.paymentId, paymentId)).limit(1);
    return row && toOrder(row);
  }

  /** The newest orders first. */
  async list(limit = 100): Promise<Order[]> {
    const rows = await this.db.select().from(orders).orderBy(desc(orders.createdAt), desc(orders.id)).limit(limit);
    return rows.map(toOrder);
  }

  /** Orders still waiting for their payment's outcome, oldest first (what start-up reconciles). */
  async listPendingWithPayment(limit: number): Promise<Order[]> {
    const rows = await this.db
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'pending'), isNotNull(orders.paymentId)))
      .orderBy(asc(orders.createdAt))
      .limit(limit);
    return rows.map(toOrder);
  }

  /** An order's history, oldest first. */
  async events(orderId: string): Promise<OrderEvent[]> {
    const rows = await this.db
      .select()
      .from(orderEvents)
      .where(eq(orderEvents.orderId, orderId))
      .orderBy(asc(orderEvents.id));
    return rows.map((r) => ({
      kind: r.kind,
      source: r.source,
      serviceStatus: r.serviceStatus ?? undefined,
      detail: r.detail ?? undefined,
      at: r.at,
    }));
  }

  /**
   * Applies a guarded change of state with its event, in one transaction.
   * @returns undefined when there is no such order
   */
  async transition(orderId: string, request: TransitionRequest): Promise<OrderTransition | undefined> {
    const change = async (tx: ShopDb) => {
      const [row] = await tx
        .update(orders)
        .set({ ...request.set, status: request.to, updatedAt: new Date() })
        .where(and(eq(orders.id, orderId), inArray(orders.status, [...request.from])))
        .returning();
      if (!row) return undefined;
      await tx.insert(orderEvents).values({
        orderId,
        kind: request.to,
        source: request.source,
        serviceStatus: request.serviceStatus ?? null,
        detail: request.detail ?? null,
      });
      const order = toOrder(row);
      await request.inTransaction?.(order);
      return order;
    };
    const result = request.within ? await change(request.within) : await this.db.transaction(change);
    if (result) return { order: result, changed: true };
    const current = await this.get(orderId, request.within);
    return current && { order: current, changed: false };
  }
}
