import type { ReconcileResult } from 'nestjs-payments';
import type { OrderItem, OrderRow, OrderStatus } from '../db/schema.js';

export type { OrderItem, OrderStatus };

/** How the order is charged: `immediate` (a plain payment) or `later` (pre-authorized, captured by the shop). */
export type CaptureMode = OrderRow['capture'];

/** An order as the pages and handlers see it: amounts as millimes strings, like the plugin's. */
export interface Order {
  /** `ord_<16 hex>`, also the payment's `developerTrackingId`. Unguessable: it is in URLs. */
  readonly id: string;
  /** What was bought. */
  readonly items: readonly OrderItem[];
  /** Total in millimes, a string of digits. */
  readonly amount: string;
  /** Current state. */
  readonly status: OrderStatus;
  /** Charged at once, or held and captured later. */
  readonly capture: CaptureMode;
  /** The payment service's id of the order's payment, once created. */
  readonly paymentId?: string;
  /** The customer id sent as `client_id` (the customer asked to save the card). */
  readonly clientId?: string;
  /** Millimes captured, for a `later` order once captured. */
  readonly capturedAmount?: string;
  /** The refund's id, once refunded. */
  readonly refundId?: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** One line of an order's history. */
export interface OrderEvent {
  readonly kind: string;
  readonly source: string;
  readonly serviceStatus?: string;
  readonly detail?: string;
  readonly at: Date;
}

/** What the return page learned from the payment service, when it asked. */
export type ReturnCheck = Pick<ReconcileResult, 'outcome' | 'error'> | { outcome: 'unreachable'; error?: string };

/** The row as the database returns it -> the {@link Order} the app uses. */
export function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    items: row.items,
    amount: String(row.amount),
    status: row.status,
    capture: row.capture,
    paymentId: row.paymentId ?? undefined,
    clientId: row.clientId ?? undefined,
    capturedAmount: row.capturedAmount === null ? undefined : String(row.capturedAmount),
    refundId: row.refundId ?? undefined,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** A short label of what was bought, e.g. `Moka pot` or `Moka pot ×2`. */
export function orderTitle(order: Pick<Order, 'items'>): string {
  return order.items.map((item) => (item.quantity === 1 ? item.name : `${item.name} ×${item.quantity}`)).join(', ');
}
