import { Redis } from 'ioredis';
import { defaultPaymentsLogger, type PaymentsLogger } from '../core/client/payments.logger.js';
import {
  epochMs,
  positiveMs,
  outcomeCursor,
  outcomePageLimit,
  parseOutcomeCursor,
  type BindingClaim,
  type ClaimOutcome,
  type OutcomeFinish,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
  type PaymentBinding,
  type PaymentsStore,
  type PendingPayment,
} from '../core/store/payments.store.js';
import { ownedClientOptions, resolveStoreOptions, type RedisPaymentsStoreOptions } from './redis.options.js';
import { SCRIPTS, SCRIPT_NAMES, type StoreScriptCommands } from './redis.scripts.js';

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
 * Keys (under `keyPrefix`): `binding:<tokenId>`, `event:<eventKey>`, `pending:due` (sorted set
 * of payment ids by due time) and `pending:entries` (hash), `outcome:<paymentId>` (record, with
 * PX), `outcomes:index` and `outcomes:expiry` (sorted sets over the records). For a standalone
 * Redis (or one primary): the scripts of the queue and the records touch several keys.
 *
 * ```ts
 * PaymentsModule.forRoot({ ..., store: new RedisPaymentsStore(process.env.REDIS_URL!) })
 * ```
 */
export class RedisPaymentsStore implements PaymentsStore {
  // Private fields (not `private`) keep the client, whose options may hold a password, out of
  // util.inspect and JSON.stringify of the store.
  readonly #client: Redis;
  readonly #scripts: StoreScriptCommands;
  readonly #ownsClient: boolean;
  readonly #keyPrefix: string;
  readonly #timeoutMs: number;
  #closing: Promise<void> | undefined;

  /**
   * @param urlOrClient a Redis URL (`redis://[user:password@]host:port/db`, `rediss://` for TLS),
   *   from which the store creates a client it owns and closes; or an ioredis client of the host,
   *   which the store uses but never closes (any standalone client; the scripts reply only strings
   *   and integers, the same under every protocol and reply mapping).
   * @param options see {@link RedisPaymentsStoreOptions}
   */
  constructor(urlOrClient: string | Redis, options: RedisPaymentsStoreOptions = {}) {
    const resolved = resolveStoreOptions(options);
    this.#keyPrefix = resolved.keyPrefix;
    this.#timeoutMs = resolved.operationTimeoutMs;

    if (typeof urlOrClient === 'string') {
      this.#client = new Redis(urlOrClient, ownedClientOptions(options, resolved));
      this.#ownsClient = true;
      watchConnection(this.#client, options.logger ?? defaultPaymentsLogger);
    } else if (isRedisClient(urlOrClient)) {
      this.#client = urlOrClient;
      this.#ownsClient = false;
    } else {
      throw new TypeError('RedisPaymentsStore: expected a Redis URL or an ioredis Redis client');
    }

    for (const { name, lua, numberOfKeys } of SCRIPTS) this.#client.defineCommand(name, { lua, numberOfKeys });
    this.#scripts = this.#client as unknown as StoreScriptCommands;
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    await this.#run('saveBinding', () => this.#client.set(this.#bindingKey(tokenId), JSON.stringify(binding), 'PX', px));
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const raw = await this.#run('findBinding', () => this.#client.get(this.#bindingKey(tokenId)));
    return raw === null ? undefined : parseBinding(raw);
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const px = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    const reply = await this.#run('claim', () => this.#scripts[SCRIPT_NAMES.claim](this.#eventKey(eventKey), owner, px));
    if (reply === 'claimed' || reply === 'done' || reply === 'busy') return reply;
    throw new Error(`RedisPaymentsStore: unexpected reply to claim: ${String(reply)}`);
  }

  /**
   * The binding lookup and claim of a webhook in one script (one round trip): claims only when
   * the binding names the payment.
   */
  async findBindingAndClaim(tokenId: string, paymentId: string, eventKey: string, owner: string, leaseMs: number): Promise<BindingClaim> {
    const px = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    const reply = await this.#run('findBindingAndClaim', () =>
      this.#scripts[SCRIPT_NAMES.findBindingAndClaim](this.#bindingKey(tokenId), this.#eventKey(eventKey), paymentId, owner, px),
    );
    if (!Array.isArray(reply)) throw new Error('RedisPaymentsStore: unexpected reply to findBindingAndClaim');
    const binding = reply.length === 0 ? undefined : parseBinding(String(reply[0]));
    const claim = reply[1] === undefined ? undefined : String(reply[1]);
    if (claim === undefined) return { binding };
    if (claim !== 'claimed' && claim !== 'done' && claim !== 'busy') throw new Error(`RedisPaymentsStore: unexpected reply to findBindingAndClaim: ${claim}`);
    if (!binding) {
      // The script read a payment id from a value this store does not take for a binding (written
      // by hand or by another version): nothing may be claimed for a binding that is not one.
      if (claim === 'claimed') await this.release(eventKey, owner);
      return { binding };
    }
    return { binding, claim };
  }

  /** markDone (or release), removePending and saveOutcome with its attempts counted, in one script (one round trip). */
  async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    const donePx = positiveMs('RedisPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
    const recordPx = positiveMs('RedisPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
    const { attempts: _ignored, ...record } = finish.record as OutcomeRecord;
    const reply = await this.#run('finishOutcome', () =>
      this.#scripts[SCRIPT_NAMES.finishOutcome](
        this.#eventKey(finish.eventKey),
        this.#key('pending:due'),
        this.#key('pending:entries'),
        this.#key(`outcome:${record.paymentId}`),
        this.#key('outcomes:index'),
        this.#key('outcomes:expiry'),
        finish.owner,
        finish.claim,
        donePx,
        JSON.stringify(record),
        recordPx,
        outcomeScore(record.updatedAt),
        record.paymentId,
        Math.trunc(finish.attemptsAdded),
      ),
    );
    // A host's client with `stringNumbers: true` answers '1' instead of 1.
    return Number(reply) === 1;
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    const reply = await this.#run('markDone', () => this.#scripts[SCRIPT_NAMES.markDone](this.#eventKey(eventKey), owner, px));
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
    await this.#run('release', () => this.#scripts[SCRIPT_NAMES.release](this.#eventKey(eventKey), owner));
  }

  /** @inheritdoc */
  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('RedisPaymentsStore', dueAt, 'dueAt');
    await this.#run('schedulePending', () =>
      this.#scripts[SCRIPT_NAMES.schedulePending](this.#key('pending:due'), this.#key('pending:entries'), entry.paymentId, JSON.stringify(entry), String(due)),
    );
  }

  /** @inheritdoc */
  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('RedisPaymentsStore', leaseMs, 'leaseMs');
    const at = epochMs('RedisPaymentsStore', now, 'now');
    const count = Math.floor(limit);
    if (!(count > 0)) return [];
    const reply = await this.#run('takeDuePending', () =>
      this.#scripts[SCRIPT_NAMES.takeDuePending](this.#key('pending:due'), this.#key('pending:entries'), String(at), count, String(at + lease)),
    );
    return (Array.isArray(reply) ? reply : []).map(parsePending).filter((e): e is PendingPayment => e !== undefined);
  }

  /** @inheritdoc */
  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const raw = await this.#run('findPending', () => this.#client.hget(this.#key('pending:entries'), paymentId));
    return raw === null ? undefined : parsePending(raw);
  }

  /** @inheritdoc */
  async removePending(paymentId: string): Promise<void> {
    await this.#run('removePending', () => this.#scripts[SCRIPT_NAMES.removePending](this.#key('pending:due'), this.#key('pending:entries'), paymentId));
  }

  /** @inheritdoc */
  async countPending(): Promise<number> {
    return Number(await this.#run('countPending', () => this.#client.hlen(this.#key('pending:entries'))));
  }

  /** @inheritdoc */
  async saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    await this.#run('saveOutcome', () =>
      this.#scripts[SCRIPT_NAMES.saveOutcome](
        this.#key(`outcome:${record.paymentId}`),
        this.#key('outcomes:index'),
        this.#key('outcomes:expiry'),
        JSON.stringify(record),
        px,
        outcomeScore(record.updatedAt),
        record.paymentId,
      ),
    );
  }

  /** @inheritdoc */
  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const raw = await this.#run('getOutcome', () => this.#client.get(this.#key(`outcome:${paymentId}`)));
    return raw === null ? undefined : parseOutcome(raw);
  }

  /**
   * Records, newest update first (ties by payment id), filtered and paginated. Ordered by the
   * update time in whole milliseconds (`updatedAt` is ISO 8601). One call examines at most 1000
   * records: with a rare filter a page may hold fewer than `limit` items and still have a
   * `nextCursor`, which keeps each call short.
   */
  async listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    const limit = outcomePageLimit(query);
    const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
    const reply = await this.#run('listOutcomes', () =>
      this.#scripts[SCRIPT_NAMES.listOutcomes](
        this.#key('outcomes:index'),
        this.#key('outcome:'),
        this.#key('outcomes:expiry'),
        after ? outcomeScore(after.updatedAt) : '-inf',
        after ? '1' : '0',
        after?.paymentId ?? '',
        limit + 1,
        query.handlers ?? '',
        query.outcome ?? '',
      ),
    );
    if (!Array.isArray(reply) || reply.length < 3) throw new Error('RedisPaymentsStore: unexpected reply to listOutcomes');
    const [lastScore, lastId, exhausted, ...flat] = reply.map((v) => String(v));
    const matches: Array<{ score: string; id: string; record: OutcomeRecord | undefined }> = [];
    for (let i = 0; i + 2 < flat.length; i += 3) matches.push({ score: flat[i], id: flat[i + 1], record: parseOutcome(flat[i + 2]) });
    const items = matches
      .slice(0, limit)
      .map((m) => m.record)
      .filter((r): r is OutcomeRecord => r !== undefined);
    // Cursors are made from the index (score and member), the order the script pages by, so a
    // record that fails to parse cannot stop the paging. With more matches than the page, go on
    // after the page's last one; when the scan budget ran out first, after the last examined.
    const next = matches.length > limit ? matches[limit - 1] : exhausted !== '1' && lastId !== '' ? { score: lastScore, id: lastId } : undefined;
    return next ? { items, nextCursor: outcomeCursor({ updatedAt: new Date(-Number(next.score)).toISOString(), paymentId: next.id }) } : { items };
  }

  /** Sends PING; rejects when Redis does not answer within `operationTimeoutMs`. */
  async ping(): Promise<void> {
    await this.#run('ping', () => this.#client.ping());
  }

  /**
   * Closes the connection the store opened from a URL, after the replies already asked for;
   * later operations reject at once. A client passed in is left open (it belongs to the host)
   * and the store keeps working on it. Safe to call more than once.
   */
  async close(): Promise<void> {
    if (!this.#ownsClient) return;
    this.#closing ??= quitOrDisconnect(this.#client);
    return this.#closing;
  }

  #bindingKey(tokenId: string): string {
    return `${this.#keyPrefix}binding:${tokenId}`;
  }

  #key(suffix: string): string {
    return `${this.#keyPrefix}${suffix}`;
  }

  #eventKey(eventKey: string): string {
    return `${this.#keyPrefix}event:${eventKey}`;
  }

  // Bounds every operation by our own timer rather than trusting the client's settings: a host's
  // client may queue commands for as long as Redis is down (maxRetriesPerRequest: null).
  #run<T>(operation: string, send: () => Promise<T>): Promise<T> {
    // Once its own client is closed, ioredis may queue rather than reject (a client closed while
    // reconnecting never reaches "end"), so the store answers for it, at once and clearly.
    if (this.#closing && this.#ownsClient) {
      return Promise.reject(new Error(`RedisPaymentsStore: ${operation} called after close()`));
    }
    const pending = send();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`RedisPaymentsStore: ${operation} timed out after ${this.#timeoutMs} ms (is Redis reachable?)`));
      }, this.#timeoutMs);
      // A pending store call must never be what keeps the process alive.
      timer.unref();
    });
    return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
  }
}

// Duck-typed rather than `instanceof Redis`: the host's client may come from another copy of
// ioredis in node_modules (another version or a duplicate install), which would fail instanceof.
function isRedisClient(value: unknown): value is Redis {
  const c = value as Record<string, unknown> | null;
  return typeof c === 'object' && c !== null && ['defineCommand', 'get', 'set', 'on'].every((m) => typeof c[m] === 'function');
}

// The order index's score: minus the update time in ms, so that ascending scores (the sorted
// set's order) are newest first, and members (payment ids) break ties in byte order. A time that
// does not parse sorts as the epoch, last.
function outcomeScore(updatedAt: string): string {
  const ms = Date.parse(updatedAt);
  return String(Number.isFinite(ms) ? -ms : 0);
}

function parseObject(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';

// Same rule as bindings: what the store did not write counts as absent.
function parsePending(raw: unknown): PendingPayment | undefined {
  const entry = parseBinding(typeof raw === 'string' ? raw : '');
  return entry && typeof (entry as Partial<PendingPayment>).checks === 'number' ? (entry as PendingPayment) : undefined;
}

function parseOutcome(raw: unknown): OutcomeRecord | undefined {
  const r = parseObject(raw);
  if (!r) return undefined;
  if (!['paymentId', 'outcome', 'status', 'source', 'handlers', 'updatedAt'].every((k) => typeof r[k] === 'string') || typeof r.attempts !== 'number')
    return undefined;
  if (!optionalString(r.amount) || !optionalString(r.developerTrackingId) || !optionalString(r.lastError)) return undefined;
  return r as unknown as OutcomeRecord;
}

// The value may have been written by another version of the plugin or by hand; anything that is
// not a binding is treated as no binding, which makes the webhook guard reject the token.
function parseBinding(raw: string): PaymentBinding | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const b = value as Record<string, unknown>;
  if (typeof b.paymentId !== 'string' || typeof b.amount !== 'string' || typeof b.createdAt !== 'string') return undefined;
  if (b.developerTrackingId !== undefined && typeof b.developerTrackingId !== 'string') return undefined;
  return b as unknown as PaymentBinding;
}

// One line per outage rather than one per reconnection attempt (ioredis emits `error` for each).
// `error` carries the cause; `reconnecting` also covers a server that closed the socket cleanly,
// which emits no error. The listener also stops ioredis printing "Unhandled error event" itself.
function watchConnection(client: Redis, logger: PaymentsLogger): void {
  let down = false;
  const wentDown = (cause: string) => {
    if (down) return;
    down = true;
    logger.error(`Redis store connection ${cause}; store operations fail until it is back`);
  };
  client.on('error', (error: Error) => wentDown(`failed: ${error.message}`));
  client.on('reconnecting', () => wentDown('lost'));
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.warn('Redis store connection is back');
  });
}

// QUIT waits for pending replies, but needs a live connection: while Redis is unreachable it would
// sit in the offline queue, so then the socket is simply dropped.
async function quitOrDisconnect(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
