/**
 * `nestjs-payments/redis`: the Redis store, for several app instances sharing webhook delivery.
 * Needs the optional peer dependency `ioredis` (5 or 6).
 */
export { RedisPaymentsStore } from './redis.store.js';
export {
  DEFAULT_KEY_PREFIX,
  DEFAULT_OPERATION_TIMEOUT_MS,
  REDIS_CLIENT_DEFAULTS,
  type RedisPaymentsStoreOptions,
  type RedisReplicasOptions,
} from './redis.options.js';
