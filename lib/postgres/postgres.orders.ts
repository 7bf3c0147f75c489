import {
  checkoutLockKey,
  type CheckoutOpen,
  type CheckoutOpening,
  type CheckoutSave,
  parseOrderCheckout,
  parseOrderSettlement,
  type PaymentOutcome,
  positiveMs,
  settlementText,
  type OrderCheckout,
  type OrderLedger,
  type OrderSettlement,
  type TransactionQuery,
} from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';
import { valueOf } from './postgres.rows.js';
import type { StoreTables } from './postgres.schema.js';

const expiresIn = (param: string) => `statement_timestamp() + ${param}::double precision * interval '1 millisecond'`;

/** The statements of the order ledger: one per operation, and the lock's release without a checkout. */
export interface OrderStatements {
  // Each member is the SQL of the ledger method of the same name.
  settleOrder: string;
  findOrderSettlement: string;
  saveCheckout: string;
  findCheckout: string;
  openCheckout: string;
  closeCheckout: string;
  /** closeCheckout without a checkout to save: the lock's release. */
  releaseCheckout: string;
}

/**
 * The statements of the order ledger, one per operation (values bound, table names quoted).
 *
 * An order's checkout lock lives in its checkout row, as a `lock` member (`{ owner, until }`,
 * `until` in epoch ms of the database clock) of the row's JSON value, which the checkout's reads
 * ignore. In the row, because `openCheckout` claims the lock with an upsert of that row, and
 * `INSERT ... ON CONFLICT DO UPDATE` works on the row's latest committed version (waiting for a
 * writer in flight), whatever the statement's snapshot: the checkout it returns is the one
 * `closeCheckout` of the lock's previous owner wrote, in the same update that freed the lock. A
 * lock in another row would be claimed there while the checkout was read from a snapshot taken
 * before that update committed. Taking the lock keeps the row at least until the lease ends.
 */
export function orderStatements(t: Pick<StoreTables, 'orders' | 'outcomes'>): OrderStatements {
  // The row is always updated, unchanged while it holds: the update takes its row lock, so a
  // writer in a transaction holds the order until its commit (or rollback), and the statement
  // returns the value that holds after the conflict was resolved, with no second, racy read.
  const expired = 'o.expires_at <= statement_timestamp()';
  const find = (kind: string) =>
    `SELECT value FROM ${t.orders} WHERE order_key = $1::text AND kind = '${kind}' AND expires_at > statement_timestamp()`;
  const nowMs = `floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint`;
  const lock = `(o.value::jsonb -> 'lock')`;
  // The lock is free for $2: none, run out, or $2's own (claiming again renews it).
  const free = `(${lock} IS NULL OR (${lock} ->> 'until')::bigint <= ${nowMs} OR ${lock} ->> 'owner' = $2::text)`;
  // Held by another owner than $2 (an unexpired row's unexpired lock): a checkout saved then keeps it.
  const heldByOther = `(o.expires_at > statement_timestamp() AND (${lock} ->> 'until')::bigint > ${nowMs} AND ${lock} ->> 'owner' <> $2::text)`;
  // Saves the checkout ($3, kept $4 ms) and frees the lock if $2 holds it ('' : no owner, the lock is kept).
  const save = `INSERT INTO ${t.orders} AS o (order_key, kind, value, expires_at)
VALUES ($1::text, 'checkout', $3::text, ${expiresIn('$4')})
ON CONFLICT (order_key, kind) DO UPDATE SET
  value = CASE WHEN ${heldByOther} THEN jsonb_set(EXCLUDED.value::jsonb, '{lock}', ${lock})::text ELSE EXCLUDED.value END,
  expires_at = CASE WHEN ${heldByOther} THEN GREATEST(EXCLUDED.expires_at, o.expires_at) ELSE EXCLUDED.expires_at END`;
  return {
    settleOrder: `INSERT INTO ${t.orders} AS o (order_key, kind, value, expires_at)
VALUES ($1::text, 'settled', $2::text, ${expiresIn('$3')})
ON CONFLICT (order_key, kind) DO UPDATE SET
  value = CASE WHEN ${expired} THEN EXCLUDED.value ELSE o.value END,
  expires_at = CASE WHEN ${expired} THEN EXCLUDED.expires_at ELSE o.expires_at END
RETURNING value`,
    findOrderSettlement: find('settled'),
    saveCheckout: save,
    findCheckout: find('checkout'),
    // The lock ($2, leased $3 ms) taken in the checkout row, the row as it stands after, and the
    // found payment's outcome and cancellation note (the settlement of $4 || its id). `mine`:
    // whether $2 holds the lock.
    openCheckout: `WITH c AS (
  INSERT INTO ${t.orders} AS o (order_key, kind, value, expires_at)
  VALUES ($1::text, 'checkout', jsonb_build_object('lock', jsonb_build_object('owner', $2::text, 'until', ${nowMs} + ceil($3::double precision)::bigint))::text, ${expiresIn('$3')})
  ON CONFLICT (order_key, kind) DO UPDATE SET
    value = CASE WHEN ${expired} THEN EXCLUDED.value
      WHEN ${free} THEN jsonb_set(o.value::jsonb, '{lock}', EXCLUDED.value::jsonb -> 'lock')::text
      ELSE o.value END,
    expires_at = CASE WHEN ${expired} THEN EXCLUDED.expires_at
      WHEN ${free} THEN GREATEST(o.expires_at, EXCLUDED.expires_at)
      ELSE o.expires_at END
  RETURNING o.value, (o.value::jsonb -> 'lock' ->> 'owner') = $2::text AS mine
)
SELECT c.value, c.mine, r.outcome, n.value AS note FROM c
LEFT JOIN ${t.outcomes} r ON r.payment_id = c.value::jsonb ->> 'paymentId' AND r.expires_at > statement_timestamp()
LEFT JOIN ${t.orders} n ON n.order_key = $4::text || (c.value::jsonb ->> 'paymentId') AND n.kind = 'settled'
  AND n.expires_at > statement_timestamp()`,
    closeCheckout: save,
    releaseCheckout: `UPDATE ${t.orders} SET value = (value::jsonb - 'lock')::text
WHERE order_key = $1::text AND kind = 'checkout' AND value::jsonb -> 'lock' ->> 'owner' = $2::text`,
  };
}

/** Where the ledger's lock statements are tracked until they settle (the store's `ClaimsInFlight`: see its release). */
export interface LocksInFlight {
  /** Remembers a lock statement until it settles. */
  track(lockKey: string, owner: string, sent: Promise<unknown[]>): void;
  /** The lock statements of (key, owner) still unsettled, if any. */
  of(lockKey: string, owner: string): Promise<unknown> | undefined;
}

/**
 * The {@link OrderLedger} of `PostgresPaymentsStore`: rows of `<prefix>orders`, one per order and
 * kind (`settled`, `checkout`; the checkout row also holds the order's lock). In the transactional
 * mode the order's settlement is written through the handlers' transaction, so that it commits
 * with the done marker or not at all.
 */
export class PostgresOrderLedger implements OrderLedger {
  /**
   * @param db the store's connection
   * @param sql the statements for the store's tables
   * @param locks the store's claims in flight: a lock's release waits for its claim to settle
   */
  constructor(
    private readonly db: PostgresConnection,
    private readonly sql: OrderStatements,
    private readonly locks: LocksInFlight,
  ) {}

  /** @inheritdoc */
  async settleOrder(
    orderKey: string,
    settlement: OrderSettlement,
    ttlMs: number,
    transaction?: TransactionQuery,
  ): Promise<OrderSettlement> {
    const params = [orderKey, settlementText(settlement), positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs')];
    const rows = transaction
      ? (await transaction.query(this.sql.settleOrder, params)).rows
      : await this.db.write('settleOrder', this.sql.settleOrder, params);
    const held = parseOrderSettlement(valueOf(rows[0]));
    if (!held)
      throw new Error(
        `PostgresPaymentsStore: the settlement of order ${JSON.stringify(orderKey)} is not one this store wrote`,
      );
    return held;
  }

  /** @inheritdoc */
  async findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined> {
    const rows = await this.db.query('findOrderSettlement', this.sql.findOrderSettlement, [orderKey]);
    return rows.length === 0 ? undefined : parseOrderSettlement(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void> {
    // No owner: the order's lock, when held, is kept.
    await this.db.write('saveCheckout', this.sql.saveCheckout, [
      orderKey,
      '',
      JSON.stringify(checkout),
      positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs'),
    ]);
  }

  /** The lock taken in the order's checkout row, the row read back, and the found payment's standing: one statement. */
  async openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    const lease = positiveMs('PostgresPaymentsStore', open.leaseMs, 'leaseMs');
    const sent = this.db.send('openCheckout', this.sql.openCheckout, [
      open.orderKey,
      open.owner,
      lease,
      open.cancellationPrefix,
    ]);
    this.locks.track(checkoutLockKey(open.orderKey), open.owner, sent);
    const rows = await this.db.bounded('openCheckout', sent);
    this.db.countWrite();
    const row = rows[0] as { value?: unknown; mine?: unknown; outcome?: unknown; note?: unknown } | undefined;
    if (!row) throw new Error('PostgresPaymentsStore: unexpected answer to openCheckout');
    const lock = row.mine === true ? 'claimed' : 'busy';
    const checkout = parseOrderCheckout(row.value);
    if (!checkout) return { lock };
    const outcome = typeof row.outcome === 'string' ? (row.outcome as PaymentOutcome) : undefined;
    const cancelled = parseOrderSettlement(row.note)?.paymentId === checkout.paymentId;
    return { lock, checkout, standing: { outcome, cancelled } };
  }

  /**
   * The checkout saved (when given) and the lock freed if `owner` holds it: one statement. Sent
   * once this store's lock statements of the same order and owner have settled, so that it frees
   * a lock whose claim timed out on our side and committed later.
   */
  async closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    const inFlight = this.locks.of(checkoutLockKey(orderKey), owner)?.catch(() => undefined);
    if (save) {
      const params = [
        orderKey,
        owner,
        JSON.stringify(save.checkout),
        positiveMs('PostgresPaymentsStore', save.ttlMs, 'ttlMs'),
      ];
      await this.db.query('closeCheckout', this.sql.closeCheckout, params, inFlight);
    } else {
      await this.db.query('closeCheckout', this.sql.releaseCheckout, [orderKey, owner], inFlight);
    }
    this.db.countWrite();
  }

  /** @inheritdoc */
  async findCheckout(orderKey: string): Promise<OrderCheckout | undefined> {
    const rows = await this.db.query('findCheckout', this.sql.findCheckout, [orderKey]);
    return rows.length === 0 ? undefined : parseOrderCheckout(valueOf(rows[0]));
  }
}
