import { Redis } from 'ioredis';
import { defaultPaymentsLogger, type PaymentsLogger } from '../core/payments.logger.js';
import type { ClaimOutcome, PaymentBinding, PaymentsStore } from '../core/payments.store.js';
import {
  ownedClientOptions,
  resolveStoreOptions,
  type RedisPaymentsStoreOptions,
} from './redis.options.js';
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
    const px = toPx(ttlMs, 'ttlMs');
    await this.#run('saveBinding', () => this.#client.set(this.#bindingKey(tokenId), JSON.stringify(binding), 'PX', px));
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const raw = await this.#run('findBinding', () => this.#client.get(this.#bindingKey(tokenId)));
    return raw === null ? undefined : parseBinding(raw);
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const px = toPx(leaseMs, 'leaseMs');
    const reply = await this.#run('claim', () => this.#scripts[SCRIPT_NAMES.claim](this.#eventKey(eventKey), owner, px));
    if (reply === 'claimed' || reply === 'done' || reply === 'busy') return reply;
    throw new Error(`RedisPaymentsStore: unexpected reply to claim: ${String(reply)}`);
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const px = toPx(ttlMs, 'ttlMs');
    const reply = await this.#run('markDone', () => this.#scripts[SCRIPT_NAMES.markDone](this.#eventKey(eventKey), owner, px));
    // A host's client with `stringNumbers: true` answers '1' instead of 1.
    return Number(reply) === 1;
  }

  /** @inheritdoc */
  async release(eventKey: string, owner: string): Promise<void> {
    await this.#run('release', () => this.#scripts[SCRIPT_NAMES.release](this.#eventKey(eventKey), owner));
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

// Redis wants a positive integer of ms; a zero, negative or NaN lease is a bug of the caller that
// would otherwise become "no expiry" or a Redis syntax error far from its cause.
function toPx(ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`RedisPaymentsStore: ${name} must be a positive number of milliseconds, got ${String(ms)}`);
  }
  return Math.ceil(ms);
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
