import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { MemoryPaymentsStore, type OrderCheckout, type PaymentsStore } from '../../lib/store/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService, OK } from '../support/fake-service.js';
import { DelegatingStore, fakeServiceClient } from '../support/outcome-kit.js';
import { RedisServers, redisServerInstalled } from '../support/redis-servers.js';
import { itWithService, POSTGRES_URL, REDIS_URL, postgresAvailable, redisAvailable } from '../support/services.js';

// Store round trips of generatePayment with an order (a tracking id), before the service call
// (the order's lock and open checkout, and the found payment's standing) and after it (the token's
// binding, the queue entry, the order's checkout and the lock's release). Round trips are counted
// as waits one after the other: a call that starts once another has answered is one more round
// trip; calls made together are one. Counted at the store's methods (each one round trip in the
// shipped stores), the shared clock's reading (`now`, once per resync) apart.

const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
/** A Redis Cluster of the test's own, 3 masters without replicas (cluster bus on port + 100). */
const CLUSTER_PORTS = [26060, 26061, 26062];
const SECRET = 'whsec_checkout_rt_0123456789abcdef0123';
const GENERATE = '/api/v2/generate_payment';
let fake: FakeService;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(async () => {
  await fake.close();
});

/** Round trips (waits in a row) and calls of one phase. */
interface Phase {
  trips: number;
  calls: string[];
}

/**
 * A store whose method calls are recorded, split at the service call, and sent in rounds: the
 * calls made while a round is out wait for it to end, then go out together as the next round.
 * A phase's round trips are the rounds its calls went out in: calls made together share one, a
 * call made once another answered is one more, whatever each call's own latency.
 */
function countingProxy(store: PaymentsStore): { store: PaymentsStore; phases: () => { before: Phase; after: Phase } } {
  const uncounted = new Set(['now', 'ping', 'close']);
  const fresh = () => ({ rounds: new Set<number>(), calls: [] as string[] });
  let phases = { before: fresh(), after: fresh() };
  let round = 0;
  let waiting: Array<() => Promise<unknown>> = [];
  let out: Promise<unknown> | undefined;
  const send = () => {
    out = undefined;
    if (waiting.length === 0) return;
    round++;
    const batch = waiting;
    waiting = [];
    out = Promise.allSettled(batch.map((go) => go())).then(send);
  };
  const proxy = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (uncounted.has(String(property))) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const phase = fake.requests.some((r) => r.path === GENERATE) ? phases.after : phases.before;
        phase.calls.push(String(property));
        return new Promise((resolve, reject) => {
          waiting.push(() => {
            phase.rounds.add(round);
            const result = Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args));
            result.then(resolve, reject);
            return result;
          });
          // Calls made in the same turn of the event loop go out together.
          if (!out) out = new Promise<void>((r) => setImmediate(() => r())).then(send);
        });
      };
    },
  });
  return {
    store: proxy,
    phases: () => {
      const seen = phases;
      phases = { before: fresh(), after: fresh() };
      const strip = ({ rounds, calls }: ReturnType<typeof fresh>) => ({ trips: rounds.size, calls: [...calls].sort() });
      return { before: strip(seen.before), after: strip(seen.after) };
    },
  };
}

/** A custom store written on BasicPaymentsStore, keeping checkouts: the checkout steps built from its basic methods. */
class LedgerStore extends DelegatingStore {
  override findCheckout(orderKey: string): Promise<OrderCheckout | undefined> {
    return (this.inner as MemoryPaymentsStore).findCheckout(orderKey);
  }
  override saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void> {
    return (this.inner as MemoryPaymentsStore).saveCheckout(orderKey, checkout, ttlMs);
  }
}

/** The phases of a first generatePayment of an order, and of a repeated one (its open payment answered). */
async function perCheckout(store: PaymentsStore, phases: () => { before: Phase; after: Phase }) {
  const client = fakeServiceClient(fake, SECRET, { store });
  try {
    const once = async (trackingId: string) => {
      fake.reset();
      fake.reply(GENERATE, OK.generate(`pay_${randomUUID()}`));
      // The writes after the service call are waited for (up to a second) before the answer.
      return client.generatePayment({ amount: '12500', developerTrackingId: trackingId });
    };
    await once(`warm-${randomUUID()}`); // script loading, table creation
    phases();
    const order = `order-${randomUUID()}`;
    const first = await once(order);
    const opened = phases();
    fake.reset();
    const again = await client.generatePayment({ amount: '12500', developerTrackingId: order });
    expect(again.paymentId).toBe(first.paymentId);
    // The lock's release goes out without being waited for: let it land before counting.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reused = phases();
    return { opened, reused: reused.before };
  } finally {
    await client.close();
  }
}

// One store step before the service call and one after it (with the payment's other writes, made
// together), where the desk used to make 2-3 before (claim, findCheckout, then getOutcome with the
// cancellation note when a checkout was found) and 4 in a row after (saveBinding, queueGenerated,
// saveCheckout, release).
const ONE_STEP = {
  opened: {
    before: { trips: 1, calls: ['openCheckout'] },
    after: { trips: 1, calls: ['closeCheckout', 'queueGenerated', 'saveBinding'] },
  },
  // Answered from the one step's read (the lock released behind the answer).
  reused: { trips: 2, calls: ['closeCheckout', 'openCheckout'] },
};
// Redis on a cluster: the found payment's standing lives in other slots than the order's, so a
// repeated call reads it in a round trip of its own after the order's script.
const CLUSTER = {
  opened: ONE_STEP.opened,
  reused: { trips: 3, calls: ['closeCheckout', 'findOrderSettlement', 'getOutcome', 'openCheckout'] },
};
// A custom store on BasicPaymentsStore: the steps built from its basic methods.
const BUILT = {
  opened: {
    before: { trips: 2, calls: ['claim', 'findCheckout'] },
    after: {
      trips: 2,
      calls: ['findPending', 'release', 'saveBinding', 'saveCheckout', 'schedulePending'],
    },
  },
  reused: { trips: 4, calls: ['claim', 'findBinding', 'findCheckout', 'getOutcome', 'release'] },
};

describe('store round trips of generatePayment with an order', () => {
  it('memory store', async () => {
    const counted = countingProxy(new MemoryPaymentsStore());
    await expect(perCheckout(counted.store, counted.phases)).resolves.toEqual(ONE_STEP);
  });

  it('a custom store on BasicPaymentsStore: the steps built from its basic methods', async () => {
    const counted = countingProxy(new MemoryPaymentsStore());
    const store = new LedgerStore(counted.store);
    await expect(perCheckout(store, counted.phases)).resolves.toEqual(BUILT);
  });

  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis', async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = `d1rt:rt:${randomUUID()}:`;
    const counted = countingProxy(new RedisPaymentsStore(redis, { keyPrefix: prefix }));
    try {
      await expect(perCheckout(counted.store, counted.phases)).resolves.toEqual(ONE_STEP);
    } finally {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  });

  // Starting the cluster takes seconds: a timeout of its own.
  (redisServerInstalled() || process.env.CI ? it : it.skip)(
    'Redis Cluster',
    async () => {
      const servers = new RedisServers();
      try {
        await servers.startCluster(CLUSTER_PORTS, 3);
        const cluster = new Cluster(CLUSTER_PORTS.map((port) => ({ host: '127.0.0.1', port })));
        try {
          const counted = countingProxy(new RedisPaymentsStore(cluster, { keyPrefix: `rt:${randomUUID()}:` }));
          await expect(perCheckout(counted.store, counted.phases)).resolves.toEqual(CLUSTER);
        } finally {
          await cluster.quit();
        }
      } finally {
        await servers.stop();
      }
    },
    90_000,
  );

  // PGlite starts its WebAssembly engine blocking the event loop, for seconds on a loaded machine
  // (it outlasted 30 s beside other suites): a timeout of its own.
  it('PGlite', async () => {
    const db = new PGlite();
    await db.waitReady;
    const counted = countingProxy(new PostgresPaymentsStore(db));
    try {
      await expect(perCheckout(counted.store, counted.phases)).resolves.toEqual(ONE_STEP);
    } finally {
      await db.close();
    }
  }, 120_000);

  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL', async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
    const schema = `d1rt_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const counted = countingProxy(new PostgresPaymentsStore(pool, { schema }));
    try {
      await expect(perCheckout(counted.store, counted.phases)).resolves.toEqual(ONE_STEP);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });
});
