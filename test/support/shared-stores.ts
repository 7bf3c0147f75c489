import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { POSTGRES_URL, REDIS_URL, postgresAvailable, redisAvailable } from './services.js';

/** A store that several app instances of one test share, as a deployment would. */
export interface SharedStoreKind {
  name: string;
  /** Whether its server answers (a test of an absent one skips, or fails under CI). */
  available: boolean;
  /** One store per instance (or the same object for every one, as the memory store must be). */
  make(): () => PaymentsStore;
  /** Removes what the test wrote (its own key prefix or tables). */
  cleanup(): Promise<void>;
}

/**
 * The stores the multi-instance order tests run on: the memory store (one object), Redis, and
 * PostgreSQL in the transactional mode, each under a key prefix or table prefix of its own.
 * @param tag a short word naming the test file, in the prefixes
 * @param kinds which of the three (default all)
 */
export async function sharedStoreKinds(
  tag: string,
  kinds: ReadonlyArray<'memory' | 'redis' | 'postgres'> = ['memory', 'redis', 'postgres'],
): Promise<SharedStoreKind[]> {
  const redisPrefix = `test:${tag}:${randomUUID()}:`;
  const tablePrefix = `${tag.slice(0, 3)}_${randomUUID().slice(0, 8)}_`;
  const all: Record<'memory' | 'redis' | 'postgres', () => Promise<SharedStoreKind>> = {
    memory: async () => ({
      name: 'memory store (one object)',
      available: true,
      make: () => {
        const shared = new MemoryPaymentsStore();
        return () => shared;
      },
      cleanup: async () => undefined,
    }),
    redis: async () => ({
      name: 'Redis',
      available: await redisAvailable(),
      make: () => () => new RedisPaymentsStore(REDIS_URL, { keyPrefix: redisPrefix }),
      cleanup: async () => {
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${redisPrefix}*`);
        if (keys.length) await redis.del(...keys);
        await redis.quit();
      },
    }),
    // The order is settled inside the confirmation's transaction: the order screen only reads it.
    postgres: async () => ({
      name: 'PostgreSQL, transactional',
      available: await postgresAvailable(),
      make: () => () => new PostgresPaymentsStore(POSTGRES_URL, { transactional: true, tablePrefix }),
      cleanup: async () => {
        const pool = new pg.Pool({ connectionString: POSTGRES_URL });
        const { rows } = await pool.query<{ t: string }>(
          `SELECT tablename AS t FROM pg_tables WHERE tablename LIKE $1`,
          [`${tablePrefix}%`],
        );
        for (const { t } of rows) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
        await pool.end();
      },
    }),
  };
  return Promise.all(kinds.map((k) => all[k]()));
}
