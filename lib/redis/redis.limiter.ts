import { positiveMs, type RateLimiter } from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';

/**
 * The {@link RateLimiter} of `RedisPaymentsStore`: one key per slot, `<keyPrefix>rate:<key>` (`rate:{<key>}` on a cluster),
 * taken with `SET NX PX` (atomic on the server, so shared by every instance on the same Redis,
 * and expiring on the server's clock) and freed with `DEL`.
 */
export class RedisRateLimiter implements RateLimiter {
  // A private field, like the store's: the connection holds the client and its options.
  readonly #db: RedisConnection;

  /** @param db the store's connection */
  constructor(db: RedisConnection) {
    this.#db = db;
  }

  /** @inheritdoc */
  async take(key: string, windowMs: number): Promise<boolean> {
    const px = positiveMs('RedisPaymentsStore', windowMs, 'windowMs');
    const reply = await this.#db.run('rateLimits.take', () =>
      this.#db.client.set(this.#db.keys.rate(key), '1', 'PX', px, 'NX'),
    );
    return reply === 'OK';
  }

  /** @inheritdoc */
  async free(key: string): Promise<void> {
    await this.#db.run('rateLimits.free', () => this.#db.client.del(this.#db.keys.rate(key)));
  }
}
