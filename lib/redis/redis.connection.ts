import { type Cluster, Redis } from 'ioredis';
import { defaultPaymentsLogger, type PaymentsLogger } from '../core/common/index.js';
import {
  ownedClientOptions,
  type RedisPaymentsStoreOptions,
  type ResolvedStoreOptions,
  resolveStoreOptions,
} from './redis.options.js';
import { checkReplication } from './redis.replicas.js';
import { SCRIPTS, type StoreScriptCommands } from './redis.scripts.js';

/**
 * The names of the store's keys. Two layouts:
 *
 * - `single` (a standalone Redis or a Sentinel-managed primary, or any prefix that carries a hash
 *   tag of its own): `<prefix>binding:<tokenId>`, `<prefix>event:<eventKey>`, `<prefix>rate:<key>`,
 *   `<prefix>pending:due`, `<prefix>pending:entries`, `<prefix>outcome:<paymentId>`,
 *   `<prefix>outcomes:index`, `<prefix>outcomes:expiry` (the names every earlier version wrote), and
 *   the filter indexes under `<prefix>outcomes:by:`.
 * - `cluster` (a Redis Cluster client): each key carries a hash tag, so that a payment's claim
 *   lands on the slot of its own event key (`<prefix>event:{outcome:<paymentId>}`), bindings and
 *   rate slots on their own (`<prefix>binding:{<tokenId>}`, `<prefix>rate:{<key>}`): the webhook's
 *   hot path spreads over the masters. The queue and the record of outcomes, which scripts change
 *   together, share one slot: `<prefix>{shared}:pending:due`, `<prefix>{shared}:pending:entries`,
 *   `<prefix>{shared}:outcome:<paymentId>`, `<prefix>{shared}:outcomes:index`,
 *   `<prefix>{shared}:outcomes:expiry`, `<prefix>{shared}:outcomes:by:...`.
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
  /**
   * The prefix of the filter indexes (redis.records.ts): `outcome:<outcome>` and
   * `handlers:failed` sorted sets, and the `ready` and `backfill` marks of their build.
   */
  readonly outcomesBy: string;
  /** An order's settlement or open checkout (one key per script: its own hash tag in both layouts). */
  order(orderKey: string, what: 'settled' | 'checkout'): string;
  /**
   * An order's checkout lock, in the slot of its checkout: the single layout keeps the claim key
   * of earlier versions (`event:checkout:<orderKey>`), the cluster layout puts it under the
   * order's hash tag (`{order:<orderKey>}:lock`).
   */
  orderLock(orderKey: string): string;
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
      outcomesBy: `${prefix}outcomes:by:`,
      order: (orderKey, what) => `${prefix}{order:${orderKey}}:${what}`,
      orderLock: (orderKey) => `${prefix}event:checkout:${orderKey}`,
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
    outcomesBy: `${shared}outcomes:by:`,
    order: (orderKey, what) => `${prefix}{order:${orderKey}}:${what}`,
    orderLock: (orderKey) => `${prefix}{order:${orderKey}}:lock`,
    refund: (refundKey) => `${prefix}{refund:${refundKey}}:record`,
  };
}

/**
 * The Redis client as the store's parts use it: its scripts defined, keys named by the layout of
 * its kind (standalone or cluster), every operation bounded in time, and the client closed when the
 * store owns it.
 */
export class RedisConnection {
  // Private fields (not `private`) keep the client, whose options may hold a password, out of
  // util.inspect and JSON.stringify of the store and of its rate limiter.
  readonly #client: Redis;
  readonly #ownsClient: boolean;
  readonly #timeoutMs: number;
  readonly #logger: PaymentsLogger;
  readonly #cluster: boolean;
  /** Whether the master's replicas were compared with the `replicas` option (after the first operation). */
  #replicationChecked = false;

  /** The `replicas` option, resolved: what the writes a failover must not lose wait for. */
  readonly replicas: ResolvedStoreOptions['replicas'];

  /** The store's keys, in the layout of the client's kind. */
  readonly keys: StoreKeys;
  #closing: Promise<void> | undefined;
  /** The code of the error that took the store's own connection down (`ECONNREFUSED`...), while it is down. */
  #downCode: string | undefined;

  /** @see RedisPaymentsStore's constructor */
  constructor(urlOrClient: string | Redis | Cluster, options: RedisPaymentsStoreOptions) {
    const resolved = resolveStoreOptions(options);
    this.#timeoutMs = resolved.operationTimeoutMs;
    this.replicas = resolved.replicas;
    this.#logger = options.logger ?? defaultPaymentsLogger;
    if (typeof urlOrClient === 'string') {
      this.#client = new Redis(urlOrClient, ownedClientOptions(options, resolved));
      this.#ownsClient = true;
      watchConnection(this.#client, this.#logger, (code) => (this.#downCode = code));
    } else if (isRedisClient(urlOrClient)) {
      // A Cluster has the same command methods as a Redis; what differs is where keys live, which
      // the key layout takes care of.
      this.#client = urlOrClient as Redis;
      this.#ownsClient = false;
    } else {
      throw new TypeError('RedisPaymentsStore: expected a Redis URL, an ioredis Redis client or an ioredis Cluster');
    }
    this.#cluster = isClusterClient(urlOrClient);
    this.keys = storeKeys(resolved.keyPrefix, this.#cluster);
    for (const { name, lua, numberOfKeys } of SCRIPTS) this.#client.defineCommand(name, { lua, numberOfKeys });
  }

  /** The client, for plain commands. */
  get client(): Redis {
    return this.#client;
  }

  /** The client viewed with the commands `defineCommand` added (ioredis cannot type them). */
  get scripts(): StoreScriptCommands {
    return this.#client as unknown as StoreScriptCommands;
  }

  // Bounds every operation by our own timer rather than trusting the client's settings: a host's
  // client may queue commands for as long as Redis is down (maxRetriesPerRequest: null).
  /** Sends one operation, rejecting after `operationTimeoutMs` or at once after {@link close}. */
  run<T>(operation: string, send: () => Promise<T>): Promise<T> {
    // Once its own client is closed, ioredis may queue rather than reject (a client closed while
    // reconnecting never reaches "end"), so the store answers for it, at once and clearly.
    if (this.#closing && this.#ownsClient) {
      return Promise.reject(new Error(`RedisPaymentsStore: ${operation} called after close()`));
    }
    const pending = send();
    // One promise settled by whichever comes first, the answer or the timer: no race, no chain of
    // then/catch/finally (promises and turns on every store call).
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        const error = new Error(
          `RedisPaymentsStore: ${operation} timed out after ${this.#timeoutMs} ms (is Redis reachable?)`,
        );
        reject(Object.assign(error, { code: this.#downCode ?? 'TIMEOUT' }));
      }, this.#timeoutMs);
      // A pending store call must never be what keeps the process alive.
      timer.unref();
      pending.then(
        (value) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          try {
            this.#checkReplicationOnce();
          } catch (error) {
            // Passed on as it came (with the connection's code when it has none), as a throw would be.
            // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
            reject(this.#withDownCode(error));
            return;
          }
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          // The client's own rejection, passed on as it came (with the connection's code when it has none).
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          reject(this.#withDownCode(error));
        },
      );
    });
  }

  // ioredis gives up with an error of its own that says nothing of why (no `code`): the cause of
  // the outage is the connection's, and an operator (or a health check) wants it.
  #withDownCode(error: unknown): unknown {
    if (this.#downCode !== undefined && error instanceof Error && (error as { code?: unknown }).code === undefined) {
      Object.assign(error, { code: this.#downCode });
    }
    return error;
  }

  // Once the client has answered (a cluster then knows its masters), in the background: the
  // operator learns at start-up that a failover can lose writes, or that every settlement will fail.
  #checkReplicationOnce(): void {
    if (this.#replicationChecked) return;
    this.#replicationChecked = true;
    void this.run('checkReplication', () =>
      checkReplication(this.#client, this.#cluster, this.replicas, this.#logger),
    ).catch(() => undefined);
  }

  /** Closes the client if the store created it (once); a host's client is left open. */
  close(): Promise<void> {
    if (!this.#ownsClient) return Promise.resolve();
    this.#closing ??= quitOrDisconnect(this.#client);
    return this.#closing;
  }
}

// Duck-typed rather than `instanceof Redis`: the host's client may come from another copy of
// ioredis in node_modules (another version or a duplicate install), which would fail instanceof.
function isRedisClient(value: unknown): value is Redis | Cluster {
  const c = value as Record<string, unknown> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    ['defineCommand', 'get', 'set', 'on'].every((m) => typeof c[m] === 'function')
  );
}

// ioredis sets `isCluster` on both kinds of client (true on a Cluster); duck-typed for the same
// reason as isRedisClient.
function isClusterClient(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { isCluster?: unknown }).isCluster === true;
}

// One line per outage rather than one per reconnection attempt (ioredis emits `error` for each).
// `error` carries the cause; `reconnecting` also covers a server that closed the socket cleanly,
// which emits no error. The listener also stops ioredis printing "Unhandled error event" itself.
function watchConnection(client: Redis, logger: PaymentsLogger, downCode: (code: string | undefined) => void): void {
  let down = false;
  const wentDown = (cause: string) => {
    if (down) return;
    down = true;
    logger.error(`Redis store connection ${cause}; store operations fail until it is back`);
  };
  client.on('error', (error: Error & { code?: unknown }) => {
    const code = typeof error.code === 'string' ? error.code : /^([A-Z][A-Z_]{2,31})\b/.exec(error.message)?.[1];
    downCode(code ?? 'CONNECTION_FAILED');
    wentDown(`failed: ${error.message}`);
  });
  client.on('reconnecting', () => wentDown('lost'));
  client.on('ready', () => {
    downCode(undefined);
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
