import type { StoryOptions } from '../core/store/index.js';
import type { RedisOptions } from 'ioredis';
import type { PaymentsLogger } from '../core/common/index.js';

/** Options of {@link RedisPaymentsStore}. */
export interface RedisPaymentsStoreOptions {
  /**
   * Prepended to every key the store writes (`<prefix>binding:<tokenId>`,
   * `<prefix>event:<eventKey>`, `<prefix>pending:due`, `<prefix>pending:entries`,
   * `<prefix>outcome:<paymentId>`, `<prefix>outcomes:index`, `<prefix>outcomes:expiry`), so that
   * several apps or environments can share one Redis without seeing each other's claims. Applied
   * after the client's own ioredis `keyPrefix`, if any. Default `'nestjs-payments:'`.
   *
   * On a Redis Cluster the store adds hash tags after the prefix (see docs/stores.md). A prefix
   * with a hash tag of its own (`'{payments}:'`) keeps the names above and puts every key in one
   * slot: correct, but all the load on one master.
   */
  keyPrefix?: string;

  /**
   * The payments' stories and the desk's tallies (`RedisStoryLog`, keys
   * `<prefix>{story:<registration>}:...`), kept when set: `true` for the defaults of
   * `StoryOptions` (50 entries a payment, 30 days, hourly buckets), or their bounds and retention.
   * Default `false`: none kept (they cost a pipeline per turn of the event loop that notes some).
   */
  story?: StoryOptions | boolean;

  /**
   * Longest time, in ms, one store operation may take before its promise rejects, whatever the
   * client's own settings (a host's client may be configured to queue commands forever). A
   * rejection makes the webhook answer 503 and the service deliver again later, which beats a
   * request hanging until the proxy gives up. Default 2000. Must be a positive number.
   *
   * A command that timed out may still reach Redis later (ioredis cannot unsend it). For a claim
   * that would block redeliveries for its whole lease, so the caller releases it with the same
   * owner: the release follows the claim on the same connection and Redis runs them in order.
   */
  operationTimeoutMs?: number;

  /**
   * Extra ioredis options for the client the store creates when given a URL; they override the
   * store's defaults (see {@link REDIS_CLIENT_DEFAULTS}). Ignored when a client is passed in:
   * that client is the host's, configured by the host.
   */
  redisOptions?: RedisOptions;

  /**
   * Whether the writes that a failover must not lose wait for replicas. See
   * {@link RedisReplicasOptions}. Default `{ wait: 0 }`: nothing is awaited, as a standalone Redis
   * without replicas needs.
   */
  replicas?: RedisReplicasOptions;

  /**
   * Told when the store's own connection goes down (once per outage, not once per reconnect
   * attempt) and when it is back, and warned once, after the first operation, when the master's
   * replicas do not match {@link RedisReplicasOptions.wait}. Default: the core's logger, which
   * writes to stderr. A client passed in keeps its `error` events: they belong to the host.
   */
  logger?: PaymentsLogger;
}

/**
 * Replicas that must have the two writes a Redis failover must not lose before the store reports
 * them done: an order's settlement (which payment settled it: one confirmation per order) and a
 * payment's done marker (a redelivery runs nothing again). Redis replicates asynchronously, so a
 * write the master acknowledged in the instant before it died can be missing on the replica
 * promoted in its place (Sentinel, Cluster or by hand): without waiting, the order is then
 * confirmed a second time by its other payment, or the handlers of the payment run again.
 *
 * After each such write the store sends `WAIT <wait> <timeoutMs>` on the same connection (the
 * same round trip; on a cluster, to the master of the key's slot). Fewer acknowledgements than
 * `wait` fail the operation (`code: 'NOREPLICAS'`): an order settlement that fails runs no handler
 * (the webhook answers 503 and the payment is tried again), and a done marker that fails is
 * logged, and the payment stays in the reconciliation queue of every replica that lacks it. Other
 * writes (claims, bindings, the queue, the records) are not awaited: losing them costs a retry.
 */
export interface RedisReplicasOptions {
  /**
   * How many replicas must acknowledge each order settlement and done marker. `1` for a master
   * with replicas (Sentinel or Cluster: the one promoted is the most up to date); at most the
   * number of replicas each master has, or every confirmation fails. Default `0`: nothing is
   * awaited (a standalone Redis, or a loss at a failover accepted). A whole number, 0 or more.
   */
  wait?: number;

  /**
   * Longest time, in ms, that one `WAIT` blocks before the write counts as failed (a replica
   * down or behind). Must be below `operationTimeoutMs`. Default: half of `operationTimeoutMs`
   * (1000 ms with its default).
   */
  timeoutMs?: number;
}

/** Default key prefix of {@link RedisPaymentsStore}. */
export const DEFAULT_KEY_PREFIX = 'nestjs-payments:';

/** Default of {@link RedisPaymentsStoreOptions.operationTimeoutMs}. */
export const DEFAULT_OPERATION_TIMEOUT_MS = 2000;

/**
 * ioredis options of the client the store creates from a URL, chosen so that an unreachable
 * Redis fails store operations quickly instead of piling them up:
 * - `lazyConnect: false`: connect at construction, so the first webhook does not pay for it and a
 *   wrong URL shows up in the logs at startup;
 * - `enableOfflineQueue: true`: commands issued while (re)connecting wait for the connection
 *   rather than failing at once, which covers startup and short blips;
 * - `maxRetriesPerRequest: 1`: that queue is flushed with an error after the second failed
 *   reconnection attempt, so it cannot grow for as long as Redis stays down;
 * - `commandTimeout`: each command also rejects after `operationTimeoutMs` (set by the store);
 * - `connectTimeout: 5000`: a host that swallows SYN packets is given up on after 5 s (ioredis
 *   defaults to 10 s) and reconnection starts over.
 */
export const REDIS_CLIENT_DEFAULTS: Readonly<RedisOptions> = Object.freeze({
  lazyConnect: false,
  enableOfflineQueue: true,
  maxRetriesPerRequest: 1,
  connectTimeout: 5000,
});

/** The store's options with defaults applied and checked. */
export interface ResolvedStoreOptions {
  /** See {@link RedisPaymentsStoreOptions.keyPrefix}. */
  keyPrefix: string;
  /** See {@link RedisPaymentsStoreOptions.operationTimeoutMs}. */
  operationTimeoutMs: number;
  /** See {@link RedisReplicasOptions}; `chosen`: whether `wait` was given (else nobody chose the default). */
  replicas: { wait: number; timeoutMs: number; chosen: boolean };
}

/**
 * Applies defaults and rejects nonsense at construction, where a mistake is cheap to find.
 * @throws TypeError or RangeError on a bad option
 */
export function resolveStoreOptions(options: RedisPaymentsStoreOptions): ResolvedStoreOptions {
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  if (typeof keyPrefix !== 'string') throw new TypeError('RedisPaymentsStore: keyPrefix must be a string');
  const operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;
  if (typeof operationTimeoutMs !== 'number' || !Number.isFinite(operationTimeoutMs) || operationTimeoutMs <= 0) {
    throw new RangeError('RedisPaymentsStore: operationTimeoutMs must be a positive number of milliseconds');
  }
  return { keyPrefix, operationTimeoutMs, replicas: resolveReplicas(options.replicas ?? {}, operationTimeoutMs) };
}

function resolveReplicas(options: RedisReplicasOptions, operationTimeoutMs: number): ResolvedStoreOptions['replicas'] {
  const wait = options.wait ?? 0;
  if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0) {
    throw new RangeError('RedisPaymentsStore: replicas.wait must be a whole number of replicas, 0 or more');
  }
  const timeoutMs = options.timeoutMs ?? operationTimeoutMs / 2;
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isFinite(timeoutMs) ||
    timeoutMs <= 0 ||
    timeoutMs >= operationTimeoutMs
  ) {
    throw new RangeError(
      'RedisPaymentsStore: replicas.timeoutMs must be a positive number of milliseconds below operationTimeoutMs',
    );
  }
  // WAIT takes whole milliseconds, and 0 would block forever.
  return { wait, timeoutMs: Math.max(1, Math.floor(timeoutMs)), chosen: options.wait !== undefined };
}

/** Options of the client the store creates: defaults, the store's timeout, then the host's overrides. */
export function ownedClientOptions(options: RedisPaymentsStoreOptions, resolved: ResolvedStoreOptions): RedisOptions {
  return { ...REDIS_CLIENT_DEFAULTS, commandTimeout: resolved.operationTimeoutMs, ...options.redisOptions };
}
