import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { DEFAULT_TABLE_PREFIX, PostgresPaymentsStore, paymentsStoreMigration } from '../../lib/postgres/index.js';
import { describeStoreContract, sleep } from '../support/store-contract.js';
import { expectLateClaimReleased } from './late-claim.js';

const LONG_MS = 60_000;
const binding = { paymentId: 'pay-1', amount: '12500', createdAt: '2025-01-01T00:00:00.000Z' };

/** Rows of a query, for looking at what the store wrote. */
async function rows(db: PGlite, text: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  return (await db.query<Record<string, unknown>>(text, params)).rows;
}

// One in-memory database for the contract suite: keys are random per test, as on a shared server.
let shared: PGlite;

/**
 * A new in-memory database, started: its WebAssembly start (seconds on a loaded machine) is not
 * the store's to wait for within its operation timeout.
 */
async function startedPGlite(): Promise<PGlite> {
  const db = new PGlite();
  await db.waitReady;
  return db;
}

beforeAll(async () => {
  shared = await startedPGlite();
});

afterAll(async () => {
  await shared.close();
});

describeStoreContract(
  'PostgresPaymentsStore on PGlite',
  async () => {
    // PGlite answers one statement at a time, in this process: the contract's bursts (dozens of
    // claims at once) queue behind each other, and on a loaded machine the queue can outlast the
    // default 5 s bound, which is there for an unreachable server, not what the contract checks.
    const store = new PostgresPaymentsStore(shared, { operationTimeoutMs: 60_000, story: true });
    return { store, cleanup: () => store.close() };
  },
  {
    story: true,
    storyRetention: async (story) => {
      const store = new PostgresPaymentsStore(shared, { operationTimeoutMs: 60_000, story });
      return { store, cleanup: () => store.close() };
    },
  },
);

describe('PostgresPaymentsStore on PGlite', () => {
  it('creates its tables with the default prefix in the search_path schema', async () => {
    const db = await startedPGlite();
    try {
      const store = new PostgresPaymentsStore(db);
      await store.ping();
      const tables = await rows(
        db,
        `SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'payments\\_%' ORDER BY table_name`,
      );
      expect(DEFAULT_TABLE_PREFIX).toBe('payments_');
      expect(tables).toEqual(
        ['bindings', 'events', 'orders', 'outcomes', 'pending', 'rate_limits', 'refunds', 'stories', 'tallies'].map(
          (t) => ({
            table_schema: 'public',
            table_name: `payments_${t}`,
          }),
        ),
      );
    } finally {
      await db.close();
    }
  });

  it('honours tablePrefix and schema, and keeps stores with different names apart', async () => {
    const db = await startedPGlite();
    try {
      const a = new PostgresPaymentsStore(db, { tablePrefix: 'shop_a_', schema: 'billing' });
      const b = new PostgresPaymentsStore(db, { tablePrefix: 'Shop_B_' });
      await expect(a.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
      await expect(b.claim('e', 'o2', LONG_MS)).resolves.toBe('claimed');
      await a.saveBinding('t', binding, LONG_MS);
      await expect(b.findBinding('t')).resolves.toBeUndefined();
      expect(await rows(db, `SELECT owner FROM billing.shop_a_events WHERE event_key = 'e'`)).toEqual([{ owner: 'o' }]);
      // Quoted: the case of the prefix is kept, not folded.
      expect(await rows(db, `SELECT owner FROM public."Shop_B_events" WHERE event_key = 'e'`)).toEqual([
        { owner: 'o2' },
      ]);
      expect(
        await rows(db, `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'billing'`),
      ).toEqual([{ n: 9 }]);
    } finally {
      await db.close();
    }
  });

  it('creates exactly what paymentsStoreMigration() returns, which hosts can run themselves', async () => {
    const db = await startedPGlite();
    try {
      // The host's own migration in one schema, the store's automatic one in another.
      await db.exec(paymentsStoreMigration({ schema: 'by_host' }));
      await db.exec(paymentsStoreMigration({ schema: 'by_host' })); // idempotent
      await new PostgresPaymentsStore(db, { schema: 'by_store' }).ping();
      const catalog = async (schema: string) => ({
        columns: await rows(
          db,
          `SELECT table_name, column_name, data_type, is_nullable, collation_name, ordinal_position FROM information_schema.columns
           WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
          [schema],
        ),
        indexes: (
          await rows(db, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, [
            schema,
          ])
        ).map((r) => ({
          ...r,
          indexdef: String(r.indexdef).replaceAll(schema, 'S'),
        })),
        checks: await rows(
          db,
          `SELECT conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 ORDER BY conname`,
          [schema],
        ),
      });
      const [host, byStore] = [await catalog('by_host'), await catalog('by_store')];
      expect(host.columns.length).toBeGreaterThan(10);
      // 16, the outcomes' index by outcome, and the stories' and tallies' primary keys and expiry indexes.
      expect(host.indexes).toHaveLength(21);
      expect(byStore).toEqual(host);
      // A store told not to create tables works on the host's.
      const store = new PostgresPaymentsStore(db, { schema: 'by_host', createTables: false });
      await expect(store.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
    } finally {
      await db.close();
    }
  });

  it('adds the rate_limits table to an install made before it, or says to migrate again', async () => {
    const names = { tablePrefix: 'before_rl_' };
    // An install of the version before: the tables of then, without rate_limits.
    await new PostgresPaymentsStore(shared, names).ping();
    await shared.exec('DROP TABLE before_rl_rate_limits');
    const migrated = new PostgresPaymentsStore(shared, { ...names, createTables: false });
    await migrated.saveBinding('t', binding, LONG_MS);
    await expect(migrated.rateLimits.take('k', LONG_MS)).rejects.toThrow(
      /before_rl_rate_limits.*apply paymentsStoreMigration\(\) again/,
    );
    // A store that creates its tables adds the new one next to the old ones, which keep their rows.
    const upgraded = new PostgresPaymentsStore(shared, names);
    await expect(upgraded.rateLimits.take('k', LONG_MS)).resolves.toBe(true);
    await expect(upgraded.findBinding('t')).resolves.toEqual(binding);
    await expect(migrated.rateLimits.take('k', LONG_MS)).resolves.toBe(false);
  });

  it('writes a rate-limit slot as a row with its expiry, and sweeps it once expired', async () => {
    const store = new PostgresPaymentsStore(shared, { tablePrefix: 'sweep_rl_', cleanupEveryWrites: 2 });
    await expect(store.rateLimits.take('unsigned:p', 300)).resolves.toBe(true); // write 1
    expect(await rows(shared, `SELECT limit_key, expires_at > now() AS live FROM sweep_rl_rate_limits`)).toEqual([
      { limit_key: 'unsigned:p', live: true },
    ]);
    await sleep(400);
    await store.rateLimits.free('other'); // write 2: sweep
    await store.close(); // waits for the sweep
    expect(await rows(shared, 'SELECT count(*)::int AS n FROM sweep_rl_rate_limits')).toEqual([{ n: 0 }]);
  });

  it('sweeps stories and tallies past their retention with the other expired rows, and keeps the live ones', async () => {
    const store = new PostgresPaymentsStore(shared, {
      tablePrefix: 'sweep_story_',
      cleanupEveryWrites: 2,
      story: { retentionSecs: 1, bucketSecs: 1 },
    });
    const log = store.story!;
    const entry = (paymentId: string) => ({
      paymentId,
      at: '2030-01-01T00:00:00.000Z',
      instance: 'host:1',
      source: 'webhook',
      kind: 'verify' as const,
      answer: '200 handled',
    });
    const bucket = Math.floor(Date.now() / 1000) * 1000;
    await log.append({ registration: '', entries: [entry('pay-old')], tallies: [{ bucket, name: 'settled', by: 1 }] });
    // Past the story's retention, and past the bucket's end plus the retention.
    await sleep(2200);
    const fresh = Math.floor(Date.now() / 1000) * 1000;
    await log.append({
      registration: '',
      entries: [entry('pay-new')],
      tallies: [{ bucket: fresh, name: 'settled', by: 1 }],
    });
    await store.rateLimits.free('a'); // at least two writes since the first append: a sweep
    await store.rateLimits.free('b');
    await store.close(); // waits for the sweep
    expect(await rows(shared, 'SELECT payment_id FROM sweep_story_stories')).toEqual([{ payment_id: 'pay-new' }]);
    expect(await rows(shared, 'SELECT bucket::float8 AS bucket FROM sweep_story_tallies')).toEqual([{ bucket: fresh }]);
  });

  it("sweeps an order's settlement and checkout once expired", async () => {
    const store = new PostgresPaymentsStore(shared, { tablePrefix: 'sweep_ord_', cleanupEveryWrites: 3 });
    await store.settleOrder('order-1', { paymentId: 'pay-1', amount: '12500' }, 300); // write 1
    await store.saveCheckout(
      'order-2',
      {
        paymentId: 'pay-2',
        link: 'https://pay.example/2',
        amount: '12500',
        fingerprint: 'f',
        sessionEndsAt: new Date(Date.now() + 300).toISOString(),
      },
      300,
    ); // write 2
    expect(await rows(shared, `SELECT order_key, kind FROM sweep_ord_orders ORDER BY order_key`)).toEqual([
      { order_key: 'order-1', kind: 'settled' },
      { order_key: 'order-2', kind: 'checkout' },
    ]);
    await sleep(400);
    await store.rateLimits.free('other'); // write 3: sweep
    await store.close(); // waits for the sweep
    expect(await rows(shared, 'SELECT count(*)::int AS n FROM sweep_ord_orders')).toEqual([{ n: 0 }]);
  });

  it('with createTables: false fails clearly when the tables are missing', async () => {
    const db = await startedPGlite();
    try {
      const store = new PostgresPaymentsStore(db, { createTables: false });
      await expect(store.claim('e', 'o', LONG_MS)).rejects.toThrow(/payments_events/);
    } finally {
      await db.close();
    }
  });

  it.each([
    ['a quote', 'x"; DROP TABLE t; --'],
    ['a dot', 'a.b'],
    ['a leading digit', '1abc'],
    ['a space', 'a b'],
    ['an empty name', ''],
    ['a name too long', 'a'.repeat(41)],
  ])('refuses a tablePrefix or schema with %s', (_what, bad) => {
    expect(() => new PostgresPaymentsStore(shared, { tablePrefix: bad })).toThrow(TypeError);
    expect(() => new PostgresPaymentsStore(shared, { schema: bad })).toThrow(TypeError);
    expect(() => paymentsStoreMigration({ tablePrefix: bad })).toThrow(TypeError);
  });

  it('refuses bad options and something that cannot query', () => {
    expect(() => new PostgresPaymentsStore({} as unknown as string)).toThrow(TypeError);
    expect(() => new PostgresPaymentsStore('')).toThrow(TypeError);
    expect(() => new PostgresPaymentsStore(shared, { operationTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => new PostgresPaymentsStore(shared, { cleanupEveryWrites: 0 })).toThrow(RangeError);
  });

  it('binds every value: keys full of SQL are stored as they are', async () => {
    const store = new PostgresPaymentsStore(shared);
    const evil = `'); DELETE FROM payments_events; --${randomUUID()}`;
    await expect(store.claim(evil, evil, LONG_MS)).resolves.toBe('claimed');
    await store.saveBinding(evil, { ...binding, paymentId: evil }, LONG_MS);
    await expect(store.findBinding(evil)).resolves.toMatchObject({ paymentId: evil });
    await expect(store.markDone(evil, evil, LONG_MS)).resolves.toBe(true);
    await expect(store.claim(evil, 'x', LONG_MS)).resolves.toBe('done');
  });

  it('deletes expired rows every cleanupEveryWrites writes, and only expired ones', async () => {
    const db = await startedPGlite();
    try {
      const store = new PostgresPaymentsStore(db, { cleanupEveryWrites: 3 });
      await store.saveBinding('short', binding, 500); // write 1
      await store.saveBinding('long', binding, LONG_MS); // write 2
      await store.saveOutcome(
        {
          paymentId: 'p',
          outcome: 'confirmed',
          status: 'SUCCESS',
          source: 'webhook',
          handlers: 'succeeded',
          attempts: 1,
          updatedAt: 'x',
        },
        500,
      ); // write 3: sweep starts, nothing expired yet
      await store.close(); // waits for the sweep in progress
      expect(await rows(db, 'SELECT token_id FROM payments_bindings ORDER BY token_id')).toEqual([
        { token_id: 'long' },
        { token_id: 'short' },
      ]);
      await sleep(600);
      await store.claim('e1', 'o', LONG_MS); // 4
      await store.claim('e2', 'o', LONG_MS); // 5
      await store.claim('e3', 'o', LONG_MS); // 6: sweep
      await store.close();
      expect(await rows(db, 'SELECT token_id FROM payments_bindings')).toEqual([{ token_id: 'long' }]);
      expect(await rows(db, 'SELECT payment_id FROM payments_outcomes')).toEqual([]);
      expect(await rows(db, 'SELECT count(*)::int AS n FROM payments_events')).toEqual([{ n: 3 }]);
    } finally {
      await db.close();
    }
  });

  it('sends its statements to PGlite as named prepared statements, each parsed once, unless preparedStatements: false', async () => {
    const db = await startedPGlite();
    const prepared = () =>
      rows(db, `SELECT name FROM pg_prepared_statements WHERE name LIKE 'nestjs\\_payments\\_%' ORDER BY name`);
    try {
      // Bounded generously: a fresh PGlite starts slowly on a loaded machine.
      const options = { operationTimeoutMs: LONG_MS };
      const store = new PostgresPaymentsStore(db, options);
      const claimed = () => store.findBindingAndClaim('t1', binding.paymentId, `outcome:${randomUUID()}`, 'o', LONG_MS);
      await store.saveBinding('t1', binding, LONG_MS);
      await expect(claimed()).resolves.toEqual({ binding, claim: 'claimed' });
      const once = await prepared();
      expect(once).toHaveLength(2);
      await expect(claimed()).resolves.toEqual({ binding, claim: 'claimed' });
      expect(await prepared()).toEqual(once);
      await expect(store.findBinding('t1')).resolves.toEqual(binding);
      expect(await prepared()).toHaveLength(3);
      // A second store on the same instance and tables finds the names taken: the same statements.
      const twin = new PostgresPaymentsStore(db, options);
      await expect(twin.findBinding('t1')).resolves.toEqual(binding);
      await expect(twin.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
      await expect(twin.markDone('e', 'o', LONG_MS)).resolves.toBe(true);
      expect(await prepared()).toHaveLength(5);
      // A statement that fails leaves the session usable, and the next one runs.
      const missing = new PostgresPaymentsStore(db, { ...options, tablePrefix: 'missing_', createTables: false });
      await expect(missing.findBinding('t1')).rejects.toThrow(/refused the statement.*missing_bindings/);
      await expect(twin.claim('e', 'x', LONG_MS)).resolves.toBe('done');

      const plain = new PGlite();
      try {
        const unnamed = new PostgresPaymentsStore(plain, { ...options, preparedStatements: false });
        await unnamed.saveBinding('t1', binding, LONG_MS);
        await expect(unnamed.findBinding('t1')).resolves.toEqual(binding);
        expect(await rows(plain, `SELECT name FROM pg_prepared_statements`)).toEqual([]);
      } finally {
        await plain.close();
      }
    } finally {
      await db.close();
    }
  });

  it('leaves a PGlite passed in open after close(), and keeps working on it', async () => {
    const db = await startedPGlite();
    try {
      const store = new PostgresPaymentsStore(db);
      await store.claim('e', 'o', LONG_MS);
      await store.close();
      expect(db.closed).toBe(false);
      await expect(store.claim('e', 'o2', LONG_MS)).resolves.toBe('busy');
    } finally {
      await db.close();
    }
  });

  it('reads the database clock with now(): epoch ms between two readings of clock_timestamp()', async () => {
    const store = new PostgresPaymentsStore(shared);
    const clock = async () =>
      Number((await rows(shared, 'SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms'))[0].ms);
    const before = await clock();
    const now = await store.now();
    const after = await clock();
    expect(typeof now).toBe('number');
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });

  it('pings, and rejects ping once the database is gone', async () => {
    const db = await startedPGlite();
    const store = new PostgresPaymentsStore(db);
    await expect(store.ping()).resolves.toBeUndefined();
    await db.close();
    await expect(store.ping()).rejects.toThrow();
  });

  it('rejects within operationTimeoutMs when the database never answers', async () => {
    const hung = { query: () => new Promise<{ rows: unknown[] }>(() => undefined) };
    const store = new PostgresPaymentsStore(hung, { operationTimeoutMs: 100 });
    await expect(store.claim('e', 'o', LONG_MS)).rejects.toThrow(/claim timed out after 100 ms/);
  });

  it('frees a claim that commits after it timed out, once the caller releases it (#13.4)', async () => {
    await expectLateClaimReleased(shared, { tablePrefix: 'late_' });
  });

  it('treats rows it did not write as absent rather than trusting them', async () => {
    const db = await startedPGlite();
    try {
      const store = new PostgresPaymentsStore(db);
      await store.ping();
      await db.query(`INSERT INTO payments_bindings VALUES ('t', '{"paymentId": 5}', now() + interval '1 hour')`);
      await db.query(`INSERT INTO payments_pending VALUES ('p', '[]', 0)`);
      await expect(store.findBinding('t')).resolves.toBeUndefined();
      await expect(store.findPending('p')).resolves.toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it('keeps a connection string with its password out of util.inspect and JSON', async () => {
    const store = new PostgresPaymentsStore('postgres://app:s3cret-pw@127.0.0.1:1/db');
    expect(inspect(store, { depth: 10, showHidden: true })).not.toContain('s3cret-pw');
    expect(JSON.stringify(store)).not.toContain('s3cret-pw');
    await store.close();
  });
});
