/**
 * The names of the store's keys. Two layouts:
 *
 * - `single` (a standalone Redis or a Sentinel-managed primary, or any prefix that carries a hash
 *   tag of its own): `<prefix>binding:<tokenId>`, `<prefix>event:<eventKey>`, `<prefix>rate:<key>`,
 *   `<prefix>pending:due`, `<prefix>pending:entries`, `<prefix>outcome:<paymentId>`,
 *   `<prefix>outcomes:index`, `<prefix>outcomes:expiry`. The names every earlier version wrote.
 * - `cluster` (a Redis Cluster client): each key carries a hash tag, so that a payment's claim
 *   lands on the slot of its own event key (`<prefix>event:{outcome:<paymentId>}`), bindings and
 *   rate slots on their own (`<prefix>binding:{<tokenId>}`, `<prefix>rate:{<key>}`): the webhook's
 *   hot path spreads over the masters. The queue and the record of outcomes, which scripts change
 *   together, share one slot: `<prefix>{shared}:pending:due`, `<prefix>{shared}:pending:entries`,
 *   `<prefix>{shared}:outcome:<paymentId>`, `<prefix>{shared}:outcomes:index`,
 *   `<prefix>{shared}:outcomes:expiry`.
 *
 * No script of the cluster layout touches keys of two slots: a script whose keys are all `{shared}`
 * stays in that slot, and every other script touches a single key.
 */
export interface StoreKeys {
  /** Which layout: the store splits two of its scripts in the cluster layout. */
  readonly layout: 'single' | 'cluster';
  /** A webhook token's binding. */
  binding(tokenId: string): string;
  /** A claim or done marker. */
  event(eventKey: string): string;
  /** A rate limiter's slot. */
  rate(key: string): string;
  /** The queue's sorted set of payment ids by due time. */
  readonly pendingDue: string;
  /** The queue's hash of entries by payment id. */
  readonly pendingEntries: string;
  /** The prefix of outcome records: the record of a payment is this followed by its id. */
  readonly outcomePrefix: string;
  /** The sorted set ordering the records as `listOutcomes` returns them. */
  readonly outcomesIndex: string;
  /** The sorted set of the records' expiry times. */
  readonly outcomesExpiry: string;
  /** An order's settlement or open checkout (one key per script: its own hash tag in both layouts). */
  order(orderKey: string, what: 'settled' | 'checkout'): string;
  /** A payment's refund record (one key per script: its own hash tag in both layouts). */
  refund(refundKey: string): string;
}

/**
 * Whether a key prefix carries a Redis Cluster hash tag (a `{` followed later by a `}` with
 * something between): then every key hashes to the prefix's slot, and the single layout's
 * multi-key scripts are valid on a cluster too (everything on one master).
 */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * The key layout of a store: `cluster` for a Redis Cluster client, unless the prefix already pins
 * every key to one slot (a prefix such as `{payments}:`, which keeps its earlier key names).
 */
export function storeKeys(prefix: string, cluster: boolean): StoreKeys {
  if (!cluster || hasHashTag(prefix)) {
    return {
      layout: 'single',
      binding: (tokenId) => `${prefix}binding:${tokenId}`,
      event: (eventKey) => `${prefix}event:${eventKey}`,
      rate: (key) => `${prefix}rate:${key}`,
      pendingDue: `${prefix}pending:due`,
      pendingEntries: `${prefix}pending:entries`,
      outcomePrefix: `${prefix}outcome:`,
      outcomesIndex: `${prefix}outcomes:index`,
      outcomesExpiry: `${prefix}outcomes:expiry`,
      order: (orderKey, what) => `${prefix}{order:${orderKey}}:${what}`,
      refund: (refundKey) => `${prefix}{refund:${refundKey}}:record`,
    };
  }
  const shared = `${prefix}{shared}:`;
  return {
    layout: 'cluster',
    binding: (tokenId) => `${prefix}binding:{${tokenId}}`,
    event: (eventKey) => `${prefix}event:{${eventKey}}`,
    rate: (key) => `${prefix}rate:{${key}}`,
    pendingDue: `${shared}pending:due`,
    pendingEntries: `${shared}pending:entries`,
    outcomePrefix: `${shared}outcome:`,
    outcomesIndex: `${shared}outcomes:index`,
    outcomesExpiry: `${shared}outcomes:expiry`,
    order: (orderKey, what) => `${prefix}{order:${orderKey}}:${what}`,
    refund: (refundKey) => `${prefix}{refund:${refundKey}}:record`,
  };
}
