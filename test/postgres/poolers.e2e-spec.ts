import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { describeWithService } from '../support/services.js';
import { describeStoreContract } from '../support/store-contract.js';
import {
  ownServersMissing,
  startPgBouncer,
  startPostgres,
  type OwnPgBouncer,
  type OwnPostgres,
} from '../support/pg-servers.js';

// The PostgreSQL store as production runs it, on servers of the test's own: behind PgBouncer in
// transaction mode with the store's default options (each transaction may get another server
// connection, where the store's named statements are unknown or already taken), and on a server
// restarted in the middle of the contract suite (every connection of the pool ends at once).

const missing = ownServersMissing();
const LONG_MS = 60_000;
/** The contract suite restarts the server before every this many tests. */
const RESTART_EVERY = 12;

let server: OwnPostgres;
let bouncer: OwnPgBouncer;

beforeAll(async () => {
  if (missing) return;
  server = await startPostgres();
  bouncer = await startPgBouncer({ host: '127.0.0.1', port: server.port });
}, 60_000);

afterAll(async () => {
  await bouncer?.stop();
  await server?.remove();
}, 60_000);

/** A host's pool, failing fast, that hears its idle connections fail (as a host's must). */
function hostPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 3000 });
  pool.on('error', () => undefined);
  return pool;
}

describeWithService(!missing, missing ?? '')('behind PgBouncer in transaction mode, default options', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = hostPool(bouncer.url(), 6);
  });
  afterAll(() => pool?.end());

  describeStoreContract('PostgresPaymentsStore behind PgBouncer (pg Pool)', async () => {
    const store = new PostgresPaymentsStore(pool, { schema: 'bouncer', logger: silent });
    return { store, cleanup: () => store.close() };
  });

  describeStoreContract('PostgresPaymentsStore behind PgBouncer (connection string)', async () => {
    const store = new PostgresPaymentsStore(bouncer.url(), {
      schema: 'bouncer_url',
      poolOptions: { max: 4 },
      logger: silent,
    });
    return { store, cleanup: () => store.close() };
  });

  it('falls back to unnamed statements at the first clash, says so once, and every operation succeeds', async () => {
    const warnings: string[] = [];
    // Pools of several connections each, so that one client's named statement meets a server
    // connection where another client prepared it, or where it was never prepared.
    const pools = [hostPool(bouncer.url(), 4), hostPool(bouncer.url(), 4)];
    try {
      const stores = pools.map(
        (p) =>
          new PostgresPaymentsStore(p, {
            schema: 'clash',
            logger: { ...silent, warn: (m: string) => warnings.push(m) },
          }),
      );
      const keys = Array.from({ length: 40 }, () => randomUUID());
      for (let round = 0; round < 3; round++) {
        const outcomes = await Promise.all(
          keys.flatMap((k, i) => stores.map((s, j) => s.claim(k, `o${(i + j + round) % 2}`, LONG_MS))),
        );
        expect(outcomes.every((o) => o === 'claimed' || o === 'busy')).toBe(true);
      }
      await Promise.all(stores.map((s) => s.countPending()));
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      expect(warnings.length).toBeLessThanOrEqual(2); // once per store
      expect(warnings[0]).toMatch(
        /refused a named prepared statement .*PgBouncer\? The store sends its statements unnamed from now on/,
      );
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('runs the transactional mode behind it: the attempt’s transaction stays on one server connection', async () => {
    const pool = hostPool(bouncer.url(), 4);
    try {
      const store = new PostgresPaymentsStore(pool, { schema: 'bouncer_tx', transactional: true, logger: silent });
      const key = `outcome:${randomUUID()}`;
      await expect(store.claim(key, 'me', LONG_MS)).resolves.toBe('claimed');
      const marked = await store.runInTransaction(async (scope) => {
        await scope.transaction.query('CREATE TABLE IF NOT EXISTS bouncer_tx.effects (id text)');
        await scope.transaction.query('INSERT INTO bouncer_tx.effects VALUES ($1)', [key]);
        const finish = {
          eventKey: key,
          owner: 'me',
          claim: 'done' as const,
          doneTtlMs: LONG_MS,
          record: {
            paymentId: key,
            outcome: 'confirmed' as const,
            status: 'SUCCESS',
            source: 'webhook' as const,
            handlers: 'succeeded' as const,
            amount: '1',
            updatedAt: new Date().toISOString(),
          },
          attemptsAdded: 1,
          recordTtlMs: LONG_MS,
        };
        return scope.finishOutcome(finish);
      });
      expect(marked).toBe(true);
      await expect(store.claim(key, 'other', LONG_MS)).resolves.toBe('done');
      expect((await pool.query('SELECT count(*)::int AS n FROM bouncer_tx.effects WHERE id = $1', [key])).rows).toEqual(
        [{ n: 1 }],
      );
    } finally {
      await pool.end();
    }
  });
});

describeWithService(!missing, missing ?? '')('across restarts of the PostgreSQL server', () => {
  let pool: pg.Pool;
  let made = 0;
  beforeAll(() => {
    pool = hostPool(server.url, 4);
  });
  afterAll(() => pool?.end());

  // Before every RESTART_EVERY-th test, the server is stopped at once (as a crash would) and started
  // again: the store, on the same pool, goes on with new connections.
  const afterRestarts = async (make: () => PostgresPaymentsStore) => {
    if (++made % RESTART_EVERY === 0) {
      await server.down();
      await server.up();
      // The pool hears its connections' end (they were idle) before the next test uses it.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const store = make();
    return { store, cleanup: () => store.close() };
  };

  describeStoreContract('PostgresPaymentsStore across restarts (pg Pool)', () =>
    afterRestarts(() => new PostgresPaymentsStore(pool, { schema: 'restarts', logger: silent })),
  );

  describeStoreContract('PostgresPaymentsStore across restarts (connection string)', () =>
    afterRestarts(
      () => new PostgresPaymentsStore(server.url, { schema: 'restarts_url', poolOptions: { max: 4 }, logger: silent }),
    ),
  );

  it('a store whose server restarted answers again once it is back; while it is down, it rejects', async () => {
    const store = new PostgresPaymentsStore(pool, { schema: 'restarts', operationTimeoutMs: 2000, logger: silent });
    const key = randomUUID();
    await expect(store.claim(key, 'a', LONG_MS)).resolves.toBe('claimed');
    await server.down();
    try {
      await expect(store.claim(key, 'b', LONG_MS)).rejects.toThrow();
    } finally {
      await server.up();
    }
    await expect(store.claim(key, 'b', LONG_MS)).resolves.toBe('busy');
    await expect(store.markDone(key, 'a', LONG_MS)).resolves.toBe(true);
  });
});

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
