import type { OrderCheckout, OrderSettlement } from './store.types.js';

// An order's values as the stores keep them. The Redis and PostgreSQL stores: JSON text, read back
// and checked here, so that a value written by hand or by another version counts as absent rather
// than as an order held by a payment nobody can name; the memory store: copies.

function parseObject(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A stored {@link OrderSettlement}, or `undefined` when the text is not one. */
export function parseOrderSettlement(raw: unknown): OrderSettlement | undefined {
  const o = parseObject(raw);
  if (!o || typeof o.paymentId !== 'string' || typeof o.amount !== 'string') return undefined;
  return { paymentId: o.paymentId, amount: o.amount };
}

/** A stored {@link OrderCheckout}, or `undefined` when the text is not one. */
export function parseOrderCheckout(raw: unknown): OrderCheckout | undefined {
  const o = parseObject(raw);
  if (!o || !['paymentId', 'link', 'amount', 'fingerprint', 'sessionEndsAt'].every((k) => typeof o[k] === 'string'))
    return undefined;
  const checkout: OrderCheckout = {
    paymentId: o.paymentId as string,
    link: o.link as string,
    amount: o.amount as string,
    fingerprint: o.fingerprint as string,
    sessionEndsAt: o.sessionEndsAt as string,
  };
  if (Array.isArray(o.superseded) && o.superseded.every((p) => typeof p === 'string'))
    checkout.superseded = o.superseded;
  return checkout;
}

/** The text a store keeps for a settlement: only its own fields. */
export const settlementText = (s: OrderSettlement): string =>
  JSON.stringify({ paymentId: s.paymentId, amount: s.amount });

/**
 * A checkout's copy, as the memory store keeps and answers it, so that neither the caller nor the
 * store sees the other's later changes. Its fields are strings but for one array, copied as such:
 * generatePayment's path copies a checkout twice, and structuredClone's generic walk cost more
 * than the call's own work around it.
 */
export function copyCheckout(checkout: OrderCheckout): OrderCheckout {
  return checkout.superseded ? { ...checkout, superseded: [...checkout.superseded] } : { ...checkout };
}
