import type { Cluster, Redis } from 'ioredis';
import {
  type BindingClaim,
  type CheckoutOpen,
  type CheckoutOpening,
  type CheckoutSave,
  type ClaimOutcome,
  epochMs,
  type OrderLedger,
  type OrderSettlement,
  outcomeCursor,
  type OutcomeFinish,
  type OutcomePage,
  outcomePageLimit,
  type OutcomeQuery,
  type OutcomeRecord,
  parseOutcomeCursor,
  type PaymentBinding,
  type PaymentsStore,
  type PendingPayment,
  positiveMs,
  type RateLimiter,
  type RefundLedger,
  type RefundRecord,
  type RefundSwap,
  type PaymentStoryLog,
} from '../core/store/index.js';
import { RedisConnection } from './redis.connection.js';
import { RedisRateLimiter } from './redis.limiter.js';
import { DEFAULT_KEY_PREFIX, type RedisPaymentsStoreOptions } from './redis.options.js';
import { RedisStoryLog } from './redis.story.js';
import { RedisOrderLedger } from './redis.orders.js';
import { RedisRefundLedger } from './redis.refunds.js';
import { SCRIPT_NAMES } from './redis.scripts.js';
import { finishInTwoSlots, markDoneOn } from './redis.split.js';
import { outcomeScore, parseBinding, parseOutcome, parsePending } from './redis.values.js';
import { FINISH_OUTCOME_LUA } from './redis.records.js';
import { writeThenWait } from './redis.replicas.js';

/**
 * One page of `RedisPaymentsStore.listOutcomes`: records newest update first (ties by payment id),
 * filtered, paged by the order index's score and member (see the store's method).
 */
export async function listOutcomePage(db: RedisConnection, query: OutcomeQuery): Promise<OutcomePage> {
  const limit = outcomePageLimit(query);
  const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
  const reply = await db.run('listOutcomes', () =>
    db.scripts[SCRIPT_NAMES.listOutcomes](
      db.keys.outcomesIndex,
      db.keys.outcomePrefix,
      db.keys.outcomesExpiry,
      db.keys.outcomesBy,
      after ? outcomeScore(after.updatedAt) : '-inf',
      after ? '1' : '0',
      after?.paymentId ?? '',
      limit + 1,
      query.handlers ?? '',
      query.outcome ?? '',
    ),
  );
  if (!Array.isArray(reply) || reply.length < 3)
    throw new Error('RedisPaymentsStore: unexpected reply to listOutcomes');
  const [lastScore, lastId, exhausted, ...flat] = reply.map((v) => String(v));
  const matches: Array<{ score: string; id: string; record: OutcomeRecord | undefined }> = [];
  for (let i = 0; i + 2 < flat.length; i += 3)
    matches.push({ score: flat[i], id: flat[i + 1], record: parseOutcome(flat[i + 2]) });
  const items = matches
    .slice(0, limit)
    .map((m) => m.record)
    .filter((r): r is OutcomeRecord => r !== undefined);
  // Cursors are made from the index (score and member), the order the script pages by, so a
  // record that fails to parse cannot stop the paging. With more matches than the page, go on
  // after the page's last one; when the scan budget ran out first, after the last examined.
  const next =
    matches.length > limit
      ? matches[limit - 1]
      : exhausted !== '1' && lastId !== ''
        ? { score: lastScore, id: lastId }
        : undefined;
  return next
    ? {
        items,
        nextCursor: outcomeCursor({ updatedAt: new Date(-Number(next.score)).toISOString(), paymentId: next.id }),
      }
    : { items };
}

/**
 * `RedisPaymentsStore.finishOutcome`: the claim's end, the queue entry's removal and the record,
 * in one script on a standalone server, in two steps on a cluster (see the store's method).
 */
export async function finishOutcomeOn(db: RedisConnection, finish: OutcomeFinish): Promise<boolean> {
  const donePx = positiveMs('RedisPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
  const recordPx = positiveMs('RedisPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
  const record = withoutAttempts(finish.record);
  if (db.keys.layout === 'cluster') return finishInTwoSlots(db, finish, record, donePx, recordPx);
  const keys = [
    db.keys.event(finish.eventKey),
    db.keys.pendingDue,
    db.keys.pendingEntries,
    db.keys.outcomePrefix + record.paymentId,
    db.keys.outcomesIndex,
    db.keys.outcomesExpiry,
    db.keys.outcomesBy,
  ] as const;
  const args = [
    finish.owner,
    finish.claim,
    donePx,
    JSON.stringify(record),
    recordPx,
    outcomeScore(record.updatedAt),
    record.paymentId,
    Math.trunc(finish.attemptsAdded),
  ] as const;
  // A done marker a promotion lost would let a redelivery run the handlers again: replicas (when
  // awaited) have it before the attempt counts as done.
  const reply =
    finish.claim === 'done' && db.replicas.wait > 0
      ? await writeThenWait(db, 'finishOutcome', `the done marker of ${record.paymentId}`, {
          lua: FINISH_OUTCOME_LUA,
          keys: [...keys],
          args: [...args],
        })
      : await db.run('finishOutcome', () => db.scripts[SCRIPT_NAMES.finishOutcome](...keys, ...args));
  // A host's client with `stringNumbers: true` answers '1' instead of 1.
  return Number(reply) === 1;
}

// The script counts the attempts: a record handed in with a count of its own (typed without one,
// so only from untyped code) is written without it. Read only, never changed: no copy otherwise.
function withoutAttempts(given: Omit<OutcomeRecord, 'attempts'>): Omit<OutcomeRecord, 'attempts'> {
  if (!Object.hasOwn(given, 'attempts')) return given;
  const { attempts: _ignored, ...record } = given as OutcomeRecord;
  return record;
}

/** `RedisPaymentsStore.saveOutcome`: the record with its TTL, indexed, in one script. */
export async function saveOutcomeOn(db: RedisConnection, record: OutcomeRecord, ttlMs: number): Promise<void> {
  const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
  await db.run('saveOutcome', () =>
    db.scripts[SCRIPT_NAMES.saveOutcome](
      db.keys.outcomePrefix + record.paymentId,
      db.keys.outcomesIndex,
      db.keys.outcomesExpiry,
      db.keys.outcomesBy,
      JSON.stringify(record),
      px,
      outcomeScore(record.updatedAt),
      record.paymentId,
    ),
  );
}

/**
 * A {@link PaymentsStore} in Redis, for several app instances behind one webhook URL: a claim
 * taken by one instance is seen by all, so concurrent duplicate deliveries run the handlers once.
 *
 * Every check-and-set is one Lua script (one round trip, atomic on the server). Leases and TTLs
 * are Redis `PX` expiries, so they hold across instances whatever their clocks say.
 *
 * Every operation settles within `operationTimeoutMs` (default 2 s): when Redis is down it
 * rejects, and the webhook layer answers 503 so that the service delivers again later.
 *
 * On a master with replicas, `replicas: { wait: 1 }` makes an order's settlement and a done marker
 * count only once a replica has them (`WAIT`), so that a promotion cannot lose them (see
 * `RedisReplicasOptions`).
 *
 * Keys (under `keyPrefix`): `binding:<tokenId>`, `event:<eventKey>`, `rate:<key>`, `pending:due` (sorted set
 * of payment ids by due time) and `pending:entries` (hash), `outcome:<paymentId>` (record, with
 * PX), `outcomes:index` and `outcomes:expiry` (sorted sets over the records), an order's
 * `{order:<key>}:settled` and `{order:<key>}:checkout` (its checkout's lock `event:checkout:<key>`,
 * `{order:<key>}:lock` on a cluster), a payment's `{refund:<key>}:record`. Given an ioredis
 * `Cluster`, the keys carry hash tags so that every script stays in one slot while payments spread
 * over the masters (see docs/stores.md); a Sentinel-managed client is a standalone one.
 *
 * ```ts
 * PaymentsModule.forRoot({ ..., store: new RedisPaymentsStore(process.env.REDIS_URL!) })
 * ```
 */
export class RedisPaymentsStore implements PaymentsStore, OrderLedger, RefundLedger {
  // A private field (not `private`) keeps the client, whose options may hold a password, out of
  // util.inspect and JSON.stringify of the store.
  readonly #db: RedisConnection;
  readonly #orders: RedisOrderLedger;
  readonly #refunds: RedisRefundLedger;

  /** The webhook's rate limits: `SET NX PX` keys `<keyPrefix>rate:<key>`, shared by every instance. */
  readonly rateLimits: RateLimiter;

  /** The payments' stories and the desk's tallies (see docs/desk.md); absent with `story: false`. */
  readonly story?: PaymentStoryLog;

  /**
   * @param urlOrClient a Redis URL (`redis://[user:password@]host:port/db`, `rediss://` for TLS),
   *   from which the store creates a client it owns and closes; or an ioredis client of the host,
   *   which the store uses but never closes (a standalone or Sentinel client, or a `Cluster`; the
   *   scripts reply only strings and integers, the same under every protocol and reply mapping).
   * @param options see {@link RedisPaymentsStoreOptions}
   */
  constructor(urlOrClient: string | Redis | Cluster, options: RedisPaymentsStoreOptions = {}) {
    this.#db = new RedisConnection(urlOrClient, options);
    this.rateLimits = new RedisRateLimiter(this.#db);
    this.#orders = new RedisOrderLedger(this.#db);
    this.#refunds = new RedisRefundLedger(this.#db);
    if (options.story !== undefined && options.story !== false)
      this.story = new RedisStoryLog(
        this.#db,
        options.keyPrefix ?? DEFAULT_KEY_PREFIX,
        options.story === true ? {} : options.story,
      );
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
  settleOrder(orderKey: string, settlement: OrderSettlement, ttlMs: number): Promise<OrderSettlement> {
    return this.#orders.settleOrder(orderKey, settlement, ttlMs);
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
   * The order's lock and checkout in one script (one round trip), with the found payment's
   * standing in the single layout (in the cluster layout the caller reads it: other slots).
   */
  openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    return this.#orders.openCheckout(open);
  }
  /** The checkout saved (when given) and the order's lock freed, in one script (one round trip). */
  closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    return this.#orders.closeCheckout(orderKey, owner, save);
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    await this.#db.run('saveBinding', () =>
      this.#db.client.set(this.#bindingKey(tokenId), JSON.stringify(binding), 'PX', px),
    );
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const raw = await this.#db.run('findBinding', () => this.#db.client.get(this.#bindingKey(tokenId)));
    return raw === null ? undefined : parseBinding(raw);
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const px = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    const reply = await this.#db.run('claim', () =>
      this.#db.scripts[SCRIPT_NAMES.claim](this.#eventKey(eventKey), owner, px),
    );
    if (reply === 'claimed' || reply === 'done' || reply === 'busy') return reply;
    throw new Error(`RedisPaymentsStore: unexpected reply to claim: ${String(reply)}`);
  }

  /**
   * The binding lookup and claim of a webhook in one script (one round trip): claims only when
   * the binding names the payment. On a cluster, where the two keys live in different slots, the
   * lookup and then the claim (two round trips; a binding never changes once written).
   */
  async findBindingAndClaim(
    tokenId: string,
    paymentId: string,
    eventKey: string,
    owner: string,
    leaseMs: number,
  ): Promise<BindingClaim> {
    const px = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    if (this.#db.keys.layout === 'cluster') {
      const found = await this.findBinding(tokenId);
      return found?.paymentId === paymentId
        ? { binding: found, claim: await this.claim(eventKey, owner, px) }
        : { binding: found };
    }
    const reply = await this.#db.run('findBindingAndClaim', () =>
      this.#db.scripts[SCRIPT_NAMES.findBindingAndClaim](
        this.#bindingKey(tokenId),
        this.#eventKey(eventKey),
        paymentId,
        owner,
        px,
      ),
    );
    if (!Array.isArray(reply)) throw new Error('RedisPaymentsStore: unexpected reply to findBindingAndClaim');
    const binding = reply.length === 0 ? undefined : parseBinding(String(reply[0]));
    const claim = reply[1] === undefined ? undefined : String(reply[1]);
    if (claim === undefined) return { binding };
    if (claim !== 'claimed' && claim !== 'done' && claim !== 'busy')
      throw new Error(`RedisPaymentsStore: unexpected reply to findBindingAndClaim: ${claim}`);
    if (!binding) {
      // The script read a payment id from a value this store does not take for a binding (written
      // by hand or by another version): nothing may be claimed for a binding that is not one.
      if (claim === 'claimed') await this.release(eventKey, owner);
      return { binding };
    }
    return { binding, claim };
  }

  /**
   * markDone (or release), removePending and saveOutcome with its attempts counted, in one script
   * (one round trip). On a cluster, where the claim lives in its payment's slot and the queue and
   * records in a shared one: the claim's end first, then the rest (a crash between them leaves the
   * payment queued, and the next check of it finds it done).
   */
  finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    return finishOutcomeOn(this.#db, finish);
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    const reply = await markDoneOn(this.#db, this.#eventKey(eventKey), owner, px, 'markDone', eventKey);
    // A host's client with `stringNumbers: true` answers '1' instead of 1.
    return Number(reply) === 1;
  }

  /**
   * Gives a claim up if `owner` still holds it. Also what to call after a claim timed out on the
   * client (see `operationTimeoutMs`): the claim may still have reached Redis and would block
   * redeliveries for its whole lease. The release goes out on the same connection after the
   * claim, and Redis runs a connection's commands in order, so it frees such a late claim.
   */
  async release(eventKey: string, owner: string): Promise<void> {
    await this.#db.run('release', () => this.#db.scripts[SCRIPT_NAMES.release](this.#eventKey(eventKey), owner));
  }

  /** @inheritdoc */
  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('RedisPaymentsStore', dueAt, 'dueAt');
    await this.#db.run('schedulePending', () =>
      this.#db.scripts[SCRIPT_NAMES.schedulePending](
        this.#db.keys.pendingDue,
        this.#db.keys.pendingEntries,
        entry.paymentId,
        JSON.stringify(entry),
        String(due),
      ),
    );
  }

  /** @inheritdoc */
  async queueGenerated(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('RedisPaymentsStore', dueAt, 'dueAt');
    await this.#db.run('queueGenerated', () =>
      this.#db.scripts[SCRIPT_NAMES.queueGenerated](
        this.#db.keys.pendingDue,
        this.#db.keys.pendingEntries,
        entry.paymentId,
        JSON.stringify(entry),
        String(due),
      ),
    );
  }

  /** @inheritdoc */
  async queueRecheck(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('RedisPaymentsStore', dueAt, 'dueAt');
    await this.#db.run('queueRecheck', () =>
      this.#db.scripts[SCRIPT_NAMES.queueRecheck](
        this.#db.keys.pendingDue,
        this.#db.keys.pendingEntries,
        entry.paymentId,
        JSON.stringify(entry),
        String(due),
      ),
    );
  }

  /** @inheritdoc */
  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    const at = epochMs('RedisPaymentsStore', now, 'now');
    const count = Math.floor(limit);
    if (!(count > 0)) return [];
    const reply = await this.#db.run('takeDuePending', () =>
      this.#db.scripts[SCRIPT_NAMES.takeDuePending](
        this.#db.keys.pendingDue,
        this.#db.keys.pendingEntries,
        String(at),
        count,
        String(at + lease),
      ),
    );
    return (Array.isArray(reply) ? reply : []).map(parsePending).filter((e): e is PendingPayment => e !== undefined);
  }

  /** @inheritdoc */
  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const raw = await this.#db.run('findPending', () => this.#db.client.hget(this.#db.keys.pendingEntries, paymentId));
    return raw === null ? undefined : parsePending(raw);
  }

  /** @inheritdoc */
  async removePending(paymentId: string): Promise<void> {
    await this.#db.run('removePending', () =>
      this.#db.scripts[SCRIPT_NAMES.removePending](this.#db.keys.pendingDue, this.#db.keys.pendingEntries, paymentId),
    );
  }

  /** @inheritdoc */
  async countPending(): Promise<number> {
    return Number(await this.#db.run('countPending', () => this.#db.client.hlen(this.#db.keys.pendingEntries)));
  }

  /** @inheritdoc */
  saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    return saveOutcomeOn(this.#db, record, ttlMs);
  }

  /** @inheritdoc */
  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const raw = await this.#db.run('getOutcome', () => this.#db.client.get(this.#db.keys.outcomePrefix + paymentId));
    return raw === null ? undefined : parseOutcome(raw);
  }

  /**
   * Records, newest update first (ties by payment id), filtered and paginated. Ordered by the
   * update time in whole milliseconds (`updatedAt` is ISO 8601). One call examines at most 1000
   * records: with a rare filter a page may hold fewer than `limit` items and still have a
   * `nextCursor`, which keeps each call short.
   */
  async listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    return listOutcomePage(this.#db, query);
  }

  /**
   * The Redis server's clock (`TIME`), in epoch ms: the shared clock every instance reads, so that
   * skew between app instances cannot freeze or skip work. On a cluster, the clock of whichever
   * node answers (keep the nodes' clocks synchronised, as Redis itself expects).
   */
  async now(): Promise<number> {
    const [seconds, micros] = await this.#db.run('now', () => this.#db.client.time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Sends PING; rejects when Redis does not answer within `operationTimeoutMs`. */
  async ping(): Promise<void> {
    await this.#db.run('ping', () => this.#db.client.ping());
  }

  /**
   * Closes the connection the store opened from a URL, after the replies already asked for;
   * later operations reject at once. A client passed in is left open (it belongs to the host)
   * and the store keeps working on it. Safe to call more than once.
   */
  async close(): Promise<void> {
    return this.#db.close();
  }

  #bindingKey(tokenId: string): string {
    return this.#db.keys.binding(tokenId);
  }

  #eventKey(eventKey: string): string {
    return this.#db.keys.event(eventKey);
  }
}
