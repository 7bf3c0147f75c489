import { PostgresStoryLog } from './postgres.story.js';
import {
  type BindingClaim,
  type CheckoutOpen,
  type CheckoutOpening,
  type CheckoutSave,
  type ClaimOutcome,
  epochMs,
  type OrderLedger,
  outcomeCursor,
  type OutcomeFinish,
  type OutcomePage,
  outcomePageLimit,
  type OutcomeQuery,
  type OutcomeRecord,
  parseOutcomeCursor,
  type PaymentBinding,
  type PaymentsStore,
  type PaymentsTransactionWork,
  type PendingPayment,
  positiveMs,
  type RateLimiter,
  type RefundLedger,
  type RefundRecord,
  type RefundSwap,
  type PaymentStoryLog,
} from '../core/store/index.js';
import { PostgresConnection } from './postgres.connection.js';
import { PostgresRateLimiter } from './postgres.limiter.js';
import { orderStatements, PostgresOrderLedger } from './postgres.orders.js';
import { PostgresRefundLedger } from './postgres.refunds.js';
import { storeTables } from './postgres.schema.js';
import { type PostgresPaymentsStoreOptions, type PostgresQueryable, resolveTableNames } from './postgres.options.js';
import { parseBinding, parseOutcome, parsePending, valueOf } from './postgres.rows.js';
import { finishOutcomeParams } from './postgres.transaction.js';

/**
 * One page of `PostgresPaymentsStore.listOutcomes`: records newest update first (ties by payment
 * id), filtered, paged by the rows' key columns.
 */
export async function listOutcomePage(db: PostgresConnection, query: OutcomeQuery): Promise<OutcomePage> {
  const limit = outcomePageLimit(query);
  const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
  // One row more than the page tells whether there is a next page.
  // Each on the index that holds its few rows among many: failed handlers, then an outcome other
  // than confirmed, else the order of every record.
  const sql =
    query.handlers === 'failed'
      ? db.sql.listFailedOutcomes
      : query.outcome !== undefined && query.outcome !== 'confirmed'
        ? db.sql.listOutcomesOf
        : db.sql.listOutcomes;
  const rows = await db.query('listOutcomes', sql, [
    query.handlers ?? null,
    query.outcome ?? null,
    after?.updatedAt ?? null,
    after?.paymentId ?? null,
    limit + 1,
  ]);
  const items = rows
    .slice(0, limit)
    .map((row) => parseOutcome(valueOf(row)))
    .filter((r): r is OutcomeRecord => r !== undefined);
  if (rows.length <= limit) return { items };
  // The cursor comes from the row's key columns, not the parsed record, so that a row that
  // failed to parse cannot stop the paging.
  const last = rows[limit - 1] as { updated_at?: unknown; payment_id?: unknown };
  return {
    items,
    nextCursor: outcomeCursor({ updatedAt: String(last.updated_at), paymentId: String(last.payment_id) }),
  };
}

// NUL cannot occur in a PostgreSQL text value, so the pair cannot collide.
const claimId = (eventKey: string, owner: string): string => `${eventKey}\u0000${owner}`;

/**
 * A store's claim statements not settled yet, by (key, owner). A claim statement is remembered
 * until it settles, whether or not its caller still waits: a claim that timed out on our side may
 * still be queued for a connection or in flight, and commit after the caller's release() ran on
 * another connection, blocking the payment for a whole lease. release() of the same (key, owner)
 * is sent only once it settled.
 */
export class ClaimsInFlight {
  readonly #claims = new Map<string, Promise<unknown>>();

  /** Remembers a claim statement until it settles. */
  track(eventKey: string, owner: string, sent: Promise<unknown[]>): void {
    const id = claimId(eventKey, owner);
    const previous = this.#claims.get(id);
    const tracked = previous ? Promise.allSettled([previous, sent]) : sent;
    this.#claims.set(id, tracked);
    const forget = () => {
      if (this.#claims.get(id) === tracked) this.#claims.delete(id);
    };
    tracked.then(forget, forget);
  }

  /** The claim statements of (key, owner) still unsettled, if any. */
  of(eventKey: string, owner: string): Promise<unknown> | undefined {
    return this.#claims.get(claimId(eventKey, owner));
  }
}

/**
 * A {@link PaymentsStore} in PostgreSQL, for several app instances sharing one database (or one
 * PGlite database in a single process, e.g. in tests or an embedded app).
 *
 * Every operation is one SQL statement, atomic on its own: claims are
 * `INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING` (no read-then-write), the reconciliation
 * queue is taken with `FOR UPDATE SKIP LOCKED`. Leases and TTLs run on the database clock, so
 * instances agree on expiry whatever their own clocks say. Expired rows are ignored by reads,
 * overwritten by writes, and deleted in small batches every `cleanupEveryWrites` writes: no cron.
 *
 * ```ts
 * PaymentsModule.forRoot({ ..., store: new PostgresPaymentsStore(pool) })              // a pg Pool
 * PaymentsModule.forRoot({ ..., store: new PostgresPaymentsStore(process.env.DATABASE_URL!) })
 * ```
 *
 * Operations reject after `operationTimeoutMs` (default 5 s), so that an unreachable database
 * makes webhooks answer 503 (the service delivers again later) instead of hanging.
 */
export class PostgresPaymentsStore implements PaymentsStore, OrderLedger, RefundLedger {
  // A private field (not `private`) keeps the connection string, whose password may be in it, and
  // the pool out of util.inspect and JSON.stringify of the store.
  readonly #db: PostgresConnection;
  /** Claim statements not settled yet, by (key, owner): see release. */
  readonly #claimsInFlight = new ClaimsInFlight();
  readonly #orders: PostgresOrderLedger;
  readonly #refunds: PostgresRefundLedger;
  /** The payments' stories and the desk's tallies (see docs/desk.md); absent with `story: false`. */
  readonly story?: PaymentStoryLog;

  /** The webhook's rate limits: rows of `<prefix>rate_limits`, shared by every instance. */
  readonly rateLimits: RateLimiter;

  /**
   * @param poolOrUrl a `pg` Pool (or Client), a PGlite instance, anything with
   *   `query(text, params)` answering `{ rows }`: the store uses it and never ends it, it is the
   *   host's. Or a connection string (`postgres://user:password@host:5432/db`): the store then
   *   creates a `pg` Pool (the optional peer dependency `pg`, loaded only then) and ends it on
   *   {@link close}.
   * @param options see {@link PostgresPaymentsStoreOptions}
   * @throws TypeError or RangeError on a bad argument or option
   */
  constructor(poolOrUrl: PostgresQueryable | string, options: PostgresPaymentsStoreOptions = {}) {
    this.#db = new PostgresConnection(poolOrUrl, options);
    this.rateLimits = new PostgresRateLimiter(this.#db);
    this.transactional = this.#db.transactional;
    const tables = storeTables(resolveTableNames(options));
    this.#orders = new PostgresOrderLedger(this.#db, orderStatements(tables), this.#claimsInFlight);
    this.#refunds = new PostgresRefundLedger(this.#db, tables);
    if (options.story !== undefined && options.story !== false)
      this.story = new PostgresStoryLog(this.#db, tables, options.story === true ? {} : options.story);
  }

  /** @inheritdoc */
  findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    return this.#refunds.findRefund(refundKey);
  }
  /** @inheritdoc */
  swapRefund(...args: Parameters<RefundLedger['swapRefund']>): Promise<RefundSwap> {
    return this.#refunds.swapRefund(...args);
  }

  /** @inheritdoc */
  settleOrder(...args: Parameters<OrderLedger['settleOrder']>): ReturnType<OrderLedger['settleOrder']> {
    return this.#orders.settleOrder(...args);
  }
  /** @inheritdoc */
  findOrderSettlement(orderKey: string): ReturnType<OrderLedger['findOrderSettlement']> {
    return this.#orders.findOrderSettlement(orderKey);
  }
  /** @inheritdoc */
  saveCheckout(...args: Parameters<OrderLedger['saveCheckout']>): Promise<void> {
    return this.#orders.saveCheckout(...args);
  }
  /** @inheritdoc */
  findCheckout(orderKey: string): ReturnType<OrderLedger['findCheckout']> {
    return this.#orders.findCheckout(orderKey);
  }
  /**
   * The order's lock, taken in its checkout row, the checkout and its payment's standing, in one
   * statement (one round trip).
   */
  openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    return this.#orders.openCheckout(open);
  }
  /** The checkout saved (when given) and the order's lock freed, in one statement (one round trip). */
  closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    return this.#orders.closeCheckout(orderKey, owner, save);
  }

  /** See {@link PostgresPaymentsStoreOptions.transactional}. */
  readonly transactional: boolean;

  /**
   * Runs `work` in one transaction of the store's database, then commits (rolls back on a throw): the
   * capability `TransactionalPaymentsStore.runInTransaction` that the outcome runner uses.
   * @throws Error unless the store was created with `{ transactional: true }`
   */
  runInTransaction<T>(work: PaymentsTransactionWork<T>): Promise<T> {
    return this.#db.transact(work);
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    await this.#db.write('saveBinding', this.#db.sql.saveBinding, [tokenId, JSON.stringify(binding), ttl]);
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const rows = await this.#db.query('findBinding', this.#db.sql.findBinding, [tokenId]);
    return rows.length === 0 ? undefined : parseBinding(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const sent = this.#db.send('claim', this.#db.sql.claim, [eventKey, owner, lease]);
    this.#claimsInFlight.track(eventKey, owner, sent);
    const rows = await this.#db.bounded('claim', sent);
    this.#db.countWrite();
    const row = rows[0] as { state?: unknown; owner?: unknown } | undefined;
    if (row?.state === 'done') return 'done';
    if (row?.state === 'claimed') return row.owner === owner ? 'claimed' : 'busy';
    throw new Error('PostgresPaymentsStore: unexpected answer to claim');
  }

  /** The binding lookup and claim of a webhook in one statement (one round trip): claims only when the binding names the payment. */
  async findBindingAndClaim(
    tokenId: string,
    paymentId: string,
    eventKey: string,
    owner: string,
    leaseMs: number,
  ): Promise<BindingClaim> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const sent = this.#db.send('findBindingAndClaim', this.#db.sql.findBindingAndClaim, [
      tokenId,
      eventKey,
      owner,
      paymentId,
      lease,
    ]);
    this.#claimsInFlight.track(eventKey, owner, sent);
    const rows = await this.#db.bounded('findBindingAndClaim', sent);
    this.#db.countWrite();
    const row = rows[0] as { value?: unknown; state?: unknown; owner?: unknown } | undefined;
    const binding = row === undefined ? undefined : parseBinding(row.value);
    if (row?.state === null || row?.state === undefined) return { binding };
    const claim: ClaimOutcome = row.state === 'done' ? 'done' : row.owner === owner ? 'claimed' : 'busy';
    if (!binding) {
      // The statement read a payment id from a value this store does not take for a binding
      // (written by hand or by another version): nothing may be claimed for it.
      if (claim === 'claimed') await this.release(eventKey, owner);
      return { binding };
    }
    return { binding, claim };
  }

  /** markDone (or release), removePending and saveOutcome with its attempts counted, in one statement (one round trip). */
  async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    const rows = await this.#db.write('finishOutcome', this.#db.sql.finishOutcome, finishOutcomeParams(finish));
    return valueOf(rows[0]) === '1';
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    const rows = await this.#db.write('markDone', this.#db.sql.markDone, [eventKey, owner, ttl]);
    return rows.length === 1;
  }

  /**
   * Gives a claim up if `owner` still holds it. Also what to call after a claim timed out (see
   * `operationTimeoutMs`): the claim may still be waiting for a connection or in flight, and
   * commit later on another connection than this release. A release is therefore sent only once
   * this store's claims of the same key and owner have settled, so it frees such a late claim
   * (its promise may reject on the timeout meanwhile; the release still goes out).
   */
  async release(eventKey: string, owner: string): Promise<void> {
    const inFlight = this.#claimsInFlight.of(eventKey, owner);
    await this.#db.query(
      'release',
      this.#db.sql.release,
      [eventKey, owner],
      inFlight?.catch(() => undefined),
    );
    this.#db.countWrite();
  }

  /** @inheritdoc */
  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    // Rounded up: an entry is never offered before the time asked for.
    const due = Math.ceil(epochMs('PostgresPaymentsStore', dueAt, 'dueAt'));
    await this.#db.write('schedulePending', this.#db.sql.schedulePending, [
      entry.paymentId,
      JSON.stringify(entry),
      String(due),
    ]);
  }

  /** @inheritdoc */
  async queueGenerated(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = Math.ceil(epochMs('PostgresPaymentsStore', dueAt, 'dueAt'));
    await this.#db.write('queueGenerated', this.#db.sql.queueGenerated, [
      entry.paymentId,
      JSON.stringify(entry),
      String(due),
    ]);
  }

  /** @inheritdoc */
  async queueRecheck(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = Math.ceil(epochMs('PostgresPaymentsStore', dueAt, 'dueAt'));
    await this.#db.write('queueRecheck', this.#db.sql.queueRecheck, [
      entry.paymentId,
      JSON.stringify(entry),
      String(due),
    ]);
  }

  /** @inheritdoc */
  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const at = Math.floor(epochMs('PostgresPaymentsStore', now, 'now'));
    const count = Math.floor(limit);
    if (!(count > 0)) return [];
    const rows = await this.#db.write('takeDuePending', this.#db.sql.takeDuePending, [
      String(at),
      Math.min(count, 2 ** 31 - 1),
      String(at + lease),
    ]);
    return rows.map((row) => parsePending(valueOf(row))).filter((e): e is PendingPayment => e !== undefined);
  }

  /** @inheritdoc */
  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const rows = await this.#db.query('findPending', this.#db.sql.findPending, [paymentId]);
    return rows.length === 0 ? undefined : parsePending(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async removePending(paymentId: string): Promise<void> {
    await this.#db.write('removePending', this.#db.sql.removePending, [paymentId]);
  }

  /** @inheritdoc */
  async countPending(): Promise<number> {
    const rows = await this.#db.query('countPending', this.#db.sql.countPending, []);
    return Number(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    await this.#db.write('saveOutcome', this.#db.sql.saveOutcome, [
      record.paymentId,
      record.outcome,
      record.handlers,
      record.updatedAt,
      JSON.stringify(record),
      ttl,
    ]);
  }

  /** @inheritdoc */
  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const rows = await this.#db.query('getOutcome', this.#db.sql.getOutcome, [paymentId]);
    return rows.length === 0 ? undefined : parseOutcome(valueOf(rows[0]));
  }

  /** @inheritdoc */
  listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    return listOutcomePage(this.#db, query);
  }

  /** Runs `SELECT 1` (and creates the tables if that is still to do); rejects when the database does not answer. */
  async ping(): Promise<void> {
    await this.#db.query('ping', this.#db.sql.ping, []);
  }

  /**
   * The database server's clock, in epoch ms: the shared clock every instance reads, so that skew
   * between app instances cannot freeze or skip work (leases and TTLs already run on it inside
   * the store's statements).
   * @returns `clock_timestamp()` of the server, with its sub-millisecond part
   */
  async now(): Promise<number> {
    const rows = await this.#db.query('now', this.#db.sql.now, []);
    const value = Number(valueOf(rows[0]));
    if (!Number.isFinite(value)) throw new Error('PostgresPaymentsStore: unexpected answer to now');
    return value;
  }

  /**
   * Waits for a cleanup in progress, then ends the pool the store created from a connection
   * string; later operations reject at once. A pool or PGlite passed in is left open (it is the
   * host's) and the store keeps working on it. Safe to call more than once.
   */
  async close(): Promise<void> {
    return this.#db.close();
  }
}
