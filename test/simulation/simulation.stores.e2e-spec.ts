import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { PostgresPaymentsStore } from '../../lib/postgres/postgres.store.js';
import { RedisPaymentsStore } from '../../lib/redis/redis.store.js';
import {
  describeWithService,
  POSTGRES_URL,
  postgresAvailable,
  REDIS_URL,
  redisAvailable,
} from '../support/services.js';
import { runHistory, type Stressor } from './sim.history.js';

/**
 * The simulation's histories over the real stores: the same seeds as the memory store's run, each
 * on an empty key space or schema of its own, every instance sharing it. A real server expires
 * leases and rate limits on its own clock, which virtual time does not move, so the histories that
 * need a lease to lapse (crashes, store outages) are left to the memory store's run and to the
 * crash tests on real processes. `SIM_STORE_HISTORIES` sets how many per store (default 40).
 */
const HISTORIES = Number(process.env.SIM_STORE_HISTORIES ?? 40);
const FIRST_SEED = Number(process.env.SIM_SEED ?? 1);
const WITHOUT: readonly Stressor[] = ['crashes', 'outage'];
const RUN = randomUUID().slice(0, 8);

const SEEDS = Array.from({ length: HISTORIES }, (_, i) => FIRST_SEED + i);

/** The histories of `seeds`, one after the other, each on the store `open` gives it. */
async function runOver(
  open: (seed: number) => Promise<{ store: RedisPaymentsStore | PostgresPaymentsStore; close: () => Promise<void> }>,
  seeds: readonly number[] = SEEDS,
) {
  const failures: string[] = [];
  let settled = 0;
  for (const seed of seeds) {
    if (failures.length >= 3) break;
    const { store, close } = await open(seed);
    try {
      const result = await runHistory(seed, { store, without: WITHOUT });
      settled += result.settled;
      if (result.violations.length > 0) {
        failures.push(`seed ${seed} [${result.stressors.join(', ')}]:\n  ${result.violations.join('\n  ')}`);
        // For scripts/simulation-mutants.mjs, which runs this file for the bugs in the stores' code.
        if (failures.length === 1)
          process.stdout.write(`simulation: first violation at history ${seed - FIRST_SEED + 1}\n`);
        if (process.env.SIM_STOP_AT_FIRST) break;
      }
    } finally {
      await close();
    }
  }
  return { failures, settled };
}

const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
// PostgreSQL's histories run in two lanes (every other seed), each on one connection and in a
// schema of its own: the server answers a history's calls in the order they were made.
const PG_LANES = 2;
const laneSchema = (lane: number) => `sim_${RUN}_${lane}`;
const pools: pg.Pool[] = [];
const runs = new Map<'redis' | 'postgres', ReturnType<typeof runOver>>();

beforeAll(() => {
  if (redisUp || process.env.CI)
    runs.set(
      'redis',
      runOver(async (seed) => {
        const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix: `sim:${RUN}:${seed}:` });
        return { store, close: () => store.close() };
      }),
    );
  if (postgresUp || process.env.CI) {
    const lanes = Array.from({ length: PG_LANES }, (_, lane) => {
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      pools.push(pool);
      return runOver(
        async (seed) => {
          const store = new PostgresPaymentsStore(pool, { schema: laneSchema(lane), tablePrefix: `h${seed}_` });
          return { store, close: async () => undefined };
        },
        SEEDS.filter((_, i) => i % PG_LANES === lane),
      );
    });
    runs.set(
      'postgres',
      Promise.all(lanes).then((done) => ({
        failures: done.flatMap((d) => d.failures),
        settled: done.reduce((sum, d) => sum + d.settled, 0),
      })),
    );
  }
  // Awaited (and so reported) by each store's test; this only keeps Node from calling one unhandled first.
  for (const run of runs.values()) run.catch(() => undefined);
});

afterAll(async () => {
  await Promise.allSettled(runs.values());
  await Promise.all(
    pools.map(async (pool, lane) => {
      await pool.query(`DROP SCHEMA IF EXISTS ${laneSchema(lane)} CASCADE`);
      await pool.end();
    }),
  );
});

describeWithService(redisUp, `the simulation over Redis needs Redis at ${REDIS_URL}`)(
  'the engine simulation over Redis',
  () => {
    it(`${HISTORIES} histories from seed ${FIRST_SEED}: safe and live within the stated bounds`, async () => {
      const { failures, settled } = await runs.get('redis')!;
      expect(failures).toEqual([]);
      expect(settled).toBeGreaterThan(HISTORIES);
    }, 600_000);
  },
);

describeWithService(postgresUp, `the simulation over PostgreSQL needs PostgreSQL at ${POSTGRES_URL}`)(
  'the engine simulation over PostgreSQL',
  () => {
    it(`${HISTORIES} histories from seed ${FIRST_SEED}: safe and live within the stated bounds`, async () => {
      const { failures, settled } = await runs.get('postgres')!;
      expect(failures).toEqual([]);
      expect(settled).toBeGreaterThan(HISTORIES);
    }, 600_000);
  },
);
