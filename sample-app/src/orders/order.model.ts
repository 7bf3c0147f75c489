/**
 * States of an order. `pending` until the payment service confirms; `preauthorized` orders are
 * made from the admin page in sandbox mode (the service shows no way to create one).
 */
export type OrderState = 'pending' | 'paid' | 'failed' | 'refunded' | 'preauthorized' | 'cancelled';

/** An order, as a read-only snapshot: the store replaces it on every change. */
export interface Order {
  /** Identifier, also sent as the payment's `developerTrackingId`. Unguessable: it is in URLs. */
  readonly id: string;
  /** The product bought. */
  readonly productId: string;
  /** The product's name at the time of the order. */
  readonly productName: string;
  /** Amount in millimes, a string of digits. */
  readonly amount: string;
  /** Current state. */
  readonly state: OrderState;
  /** The payment service's id of the order's payment, once created. */
  readonly paymentId?: string;
  /** The refund's id, once refunded. */
  readonly refundId?: string;
  /** Creation time. */
  readonly createdAt: Date;
  /** Time of the last change. */
  readonly updatedAt: Date;
}
