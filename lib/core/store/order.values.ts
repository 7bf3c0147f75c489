import type { OrderCheckout, OrderSettlement } from './store.types.js';

// An order's values as the Redis and PostgreSQL stores keep them: JSON text, read back and checked
// here, so that a value written by hand or by another version counts as absent rather than as an
// order held by a payment nobody can name.

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
