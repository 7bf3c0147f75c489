/**
 * The shop's tables, in Drizzle's TypeScript schema: the one source of the SQL migrations in
 * `sample-app/drizzle/` (`npx drizzle-kit generate --config sample-app/drizzle.config.ts`) and of
 * the row types the code reads and writes. The payments plugin's own tables
 * (`payments_*`, created by `PostgresPaymentsStore`) live in the same database, beside these.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  check,
  index,
  jsonb,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/**
 * Where an order stands. `pending` until the payment service's verified outcome arrives; a
 * "pay now, capture later" order goes `pending -> authorized -> captured` (or `cancelled`).
 */
export const orderStatus = pgEnum('order_status', [
  'pending',
  'paid',
  'failed',
  'expired',
  'authorized',
  'captured',
  'refunded',
  'cancelled',
]);

/** How the order is charged: at once, or held at checkout and captured by the shop later. */
export const orderCapture = pgEnum('order_capture', ['immediate', 'later']);

/** One line of an order, copied from the catalog at checkout (prices change, orders do not). */
export interface OrderItem {
  productId: string;
  name: string;
  quantity: number;
  /** Unit price in millimes, a string of digits. */
  unitAmount: string;
}

export const orders = pgTable(
  'orders',
  {
    /** `ord_<16 hex>`: also the payment's `developer_tracking_id`; unguessable, it is in URLs. */
    id: text('id').primaryKey(),
    items: jsonb('items').$type<OrderItem[]>().notNull(),
    /** Total in millimes. bigint: exact, and far above any basket (2^53 millimes). */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    status: orderStatus('status').notNull().default('pending'),
    capture: orderCapture('capture').notNull().default('immediate'),
    /** The service's payment id, once created (unique: one order per payment). */
    paymentId: text('payment_id'),
    /** The customer id sent as `client_id` when the customer asked to save the card. */
    clientId: text('client_id'),
    /** Captured amount in millimes (a capture may take less than was held). */
    capturedAmount: bigint('captured_amount', { mode: 'number' }),
    refundId: text('refund_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('orders_payment_id_idx').on(t.paymentId),
    index('orders_status_created_idx').on(t.status, t.createdAt),
    check('orders_amount_positive', sql`${t.amount} > 0`),
    check(
      'orders_captured_amount_range',
      sql`${t.capturedAmount} IS NULL OR (${t.capturedAmount} > 0 AND ${t.capturedAmount} <= ${t.amount})`,
    ),
  ],
);

/** What happened to an order: one row per change of state, with the path that brought it. */
export const orderEventKind = pgEnum('order_event_kind', [
  'created',
  'paid',
  'failed',
  'expired',
  'authorized',
  'captured',
  'refunded',
  'cancelled',
]);

export const orderEvents = pgTable(
  'order_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    orderId: text('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    kind: orderEventKind('kind').notNull(),
    /** `checkout`, `admin`, or the plugin's outcome source: `webhook`, `return`, `reconciliation`. */
    source: text('source').notNull(),
    /** The payment service's verified status (`SUCCESS`, `FAILURE`...) or its answer to an admin action. */
    serviceStatus: text('service_status'),
    /** A short note: the captured amount, the refund id... */
    detail: text('detail'),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Each thing happens to an order at most once: the database itself refuses a second "paid",
    // whatever a handler run twice after a crash might try.
    uniqueIndex('order_events_order_kind_idx').on(t.orderId, t.kind),
  ],
);

/**
 * The admin's server-side sessions (express-session, through `DrizzleSessionStore`): signing out
 * deletes the row, so the cookie is worth nothing afterwards, whatever its signature and expiry.
 */
export const shopSessions = pgTable(
  'shop_sessions',
  {
    /** express-session's session id (what its signed cookie carries). */
    sid: text('sid').primaryKey(),
    /** The session's data, as express-session serialises it. */
    sess: jsonb('sess').$type<Record<string, unknown>>().notNull(),
    /** After this the row is ignored, and deleted by the next clean-up. */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('shop_sessions_expires_at_idx').on(t.expiresAt)],
);

export type OrderRow = typeof orders.$inferSelect;
export type OrderStatus = (typeof orderStatus.enumValues)[number];
export type OrderEventKind = (typeof orderEventKind.enumValues)[number];
export type OrderEventRow = typeof orderEvents.$inferSelect;
