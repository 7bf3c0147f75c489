import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { PendingPayment } from '../../lib/core/store/store.types.js';
import { PostgresPaymentsStore, paymentsStoreMigration } from '../../lib/postgres/index.js';
import { storeTables } from '../../lib/postgres/postgres.schema.js';
import { storeStatements } from '../../lib/postgres/postgres.statements.js';
import { POSTGRES_URL, describeWithService, postgresAvailable } from '../support/services.js';
import { describeStoreContract, sleep } from '../support/store-contract.js';
import { expectLateClaimReleased } from './late-claim.js';

const available = await postgresAvailable();

/** Every table this run creates lives in this schema, dropped in afterAll. */
const RUN_SCHEMA = `test_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const LONG_MS = 60_000;

/** A pool as a host would create it: small, failing fast when the server is absent (CI). */
const hostPool = (options: pg.PoolConfig = {}) =>
  new pg.Pool({ connectionString: POSTGRES_URL, max: 4, connectionTimeoutMillis: 2000, ...options });

const pending = (): PendingPayment => ({
  paymentId: `pay_${randomUUID()}`,
  amount: '1000',
  createdAt: new Date(0).toISOString(),
  checks: 0,
});

describeWithService(available, `PostgreSQL not reachable at ${POSTGRES_URL}`)(
  'PostgresPaymentsStore against a real PostgreSQL',
  () => {
    let admin: pg.Pool;

    beforeAll(() => {
      admin = hostPool({ max: 2 });
    });

    afterAll(async () => {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${RUN_SCHEMA}" CASCADE`);
      } finally {
        await admin.end();
      }
    });

    describe('given a pg Pool', () => {
      let pool: pg.Pool;
      beforeAll(() => {
        pool = hostPool();
      });
      afterAll(() => pool.end());

      describeStoreContract(
        'PostgresPaymentsStore (pg Pool)',
        async () => {
          const store = new PostgresPaymentsStore(pool, { schema: RUN_SCHEMA, tablePrefix: 'pool_', story: true });
          return { store, cleanup: () => store.close() };
        },
        {
          story: true,
          storyRetention: async (story) => {
            const store = new PostgresPaymentsStore(pool, { schema: RUN_SCHEMA, tablePrefix: 'pool_', story });
            return { store, cleanup: () => store.close() };
          },
        },
      );
    });

    // A wrapper with nothing but query(text, params): the statements go unnamed (preparedStatements
    // defaults to off for anything but a pg Pool or Client), and the contract holds the same.
    describe('given a wrapper with only query(text, params)', () => {
      let pool: pg.Pool;
      beforeAll(() => {
        pool = hostPool();
      });
      afterAll(() => pool.end());

      describeStoreContract('PostgresPaymentsStore (plain query wrapper, unnamed statements)', async () => {
        const wrapper = { query: (text: string, params?: unknown[]) => pool.query(text, params) };
        const store = new PostgresPaymentsStore(wrapper, { schema: RUN_SCHEMA, tablePrefix: 'wrap_' });
        return { store, cleanup: () => store.close() };
      });
    });

    describeStoreContract('PostgresPaymentsStore (connection string)', async () => {
      const store = new PostgresPaymentsStore(POSTGRES_URL, {
        schema: RUN_SCHEMA,
        tablePrefix: 'url_',
        poolOptions: { max: 4 },
      });
      return { store, cleanup: () => store.close() };
    });

    describe('tables', () => {
      it('honours schema and tablePrefix, and creates what paymentsStoreMigration() returns', async () => {
        const pool = hostPool();
        try {
          const store = new PostgresPaymentsStore(pool, { schema: RUN_SCHEMA, tablePrefix: 'auto_' });
          await store.claim('e', 'o', LONG_MS);
          // The host's own migration, run as a host would (one simple-protocol query).
          await admin.query(paymentsStoreMigration({ schema: RUN_SCHEMA, tablePrefix: 'manual_' }));
          const catalog = async (prefix: string) => ({
            columns: (
              await admin.query(
                `SELECT table_name, column_name, data_type, is_nullable, collation_name FROM information_schema.columns
               WHERE table_schema = $1 AND table_name LIKE $2 ORDER BY table_name, ordinal_position`,
                [RUN_SCHEMA, `${prefix}%`],
              )
            ).rows.map((r: Record<string, string>) => ({ ...r, table_name: r.table_name.slice(prefix.length) })),
            indexes: (
              await admin.query(
                `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename LIKE $2 ORDER BY indexname`,
                [RUN_SCHEMA, `${prefix}%`],
              )
            ).rows.map((r: Record<string, string>) => ({
              indexname: r.indexname.slice(prefix.length),
              indexdef: r.indexdef.replaceAll(prefix, 'P_'),
            })),
          });
          const [auto, manual] = [await catalog('auto_'), await catalog('manual_')];
          expect(auto.columns.map((c) => c.table_name)).toContain('events');
          // 16, the outcomes' index by outcome, and the stories' and tallies' primary keys and expiry indexes.
          expect(auto.indexes).toHaveLength(21);
          expect(auto).toEqual(manual);
          const { rows } = await admin.query(`SELECT owner FROM "${RUN_SCHEMA}".auto_events WHERE event_key = 'e'`);
          expect(rows).toEqual([{ owner: 'o' }]);
          await store.close();
        } finally {
          await pool.end();
        }
      });

      it('deletes stories and tallies past their retention in its cleanup, from a pool it created too', async () => {
        // A pool of its own, ended by close(): close() must wait for the sweep the last write started.
        const store = new PostgresPaymentsStore(POSTGRES_URL, {
          schema: RUN_SCHEMA,
          tablePrefix: 'storyttl_',
          cleanupEveryWrites: 2,
          poolOptions: { max: 2 },
          story: { retentionSecs: 1, bucketSecs: 1 },
        });
        const entry = (paymentId: string) => ({
          paymentId,
          at: '2030-01-01T00:00:00.000Z',
          instance: 'host:1',
          source: 'webhook',
          kind: 'verify' as const,
          answer: '200 handled',
        });
        const bucket = Math.floor(Date.now() / 1000) * 1000;
        await store.story!.append({
          registration: '',
          entries: [entry('pay-old')],
          tallies: [{ bucket, name: 'settled', by: 1 }],
        });
        await sleep(2200);
        await store.story!.append({ registration: '', entries: [entry('pay-new')], tallies: [] });
        await store.rateLimits.free('a');
        await store.rateLimits.free('b');
        await store.close();
        const count = async (table: string) =>
          (await admin.query(`SELECT count(*)::int AS n FROM "${RUN_SCHEMA}".storyttl_${table}`)).rows[0];
        expect(await count('stories')).toEqual({ n: 1 });
        expect(await count('tallies')).toEqual({ n: 0 });
      });

      /**
       * The plan PostgreSQL keeps for `statement` of a fresh store with tables `<kind>_<random>_`
       * once it stops looking at parameter values (a generic plan), sequential scans ruled out.
       */
      async function genericPlan(
        kind: string,
        statement: 'listFailedOutcomes' | 'listOutcomesOf',
        params: unknown[],
      ): Promise<{ prefix: string; plan: string }> {
        const prefix = `${kind}_${randomUUID().slice(0, 8)}_`;
        const store = new PostgresPaymentsStore(admin, { schema: RUN_SCHEMA, tablePrefix: prefix });
        await store.ping();
        const sql = storeStatements(storeTables({ schema: RUN_SCHEMA, prefix }))[statement];
        const client = await admin.connect();
        try {
          // A generic plan cannot lean on the parameter values; the literal filter must match the index's predicate.
          await client.query('BEGIN');
          await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
          await client.query('SET LOCAL enable_seqscan = off');
          const { rows } = await client.query(`EXPLAIN ${sql}`, params);
          return { prefix, plan: rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n') };
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      }

      it('pages through failed records on the partial index, even in a generic plan', async () => {
        const { prefix, plan } = await genericPlan('failed', 'listFailedOutcomes', ['failed', null, null, null, 51]);
        expect(plan).toContain(`${prefix}outcomes_failed_idx`);
      });

      it("pages through one outcome's records on the partial index by outcome, even in a generic plan", async () => {
        const { prefix, plan } = await genericPlan('byoutcome', 'listOutcomesOf', [null, 'mismatch', null, null, 51]);
        expect(plan).toContain(`${prefix}outcomes_outcome_idx`);
      });

      it('lets many instances create the same tables at the same time', async () => {
        const pools = Array.from({ length: 6 }, () => hostPool({ max: 1 }));
        try {
          const prefix = `race_${randomUUID().slice(0, 8)}_`;
          const stores = pools.map((p) => new PostgresPaymentsStore(p, { schema: RUN_SCHEMA, tablePrefix: prefix }));
          await expect(Promise.all(stores.map((s) => s.ping()))).resolves.toHaveLength(6);
          const outcomes = await Promise.all(stores.map((s, i) => s.claim('e', `o${i}`, LONG_MS)));
          expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
        } finally {
          await Promise.all(pools.map((p) => p.end()));
        }
      });
    });

    describe('the shared clock', () => {
      it('now() answers the server clock in epoch ms, the same for every instance whatever its own clock', async () => {
        const [a, b] = [
          new PostgresPaymentsStore(admin, { schema: RUN_SCHEMA }),
          new PostgresPaymentsStore(POSTGRES_URL, { schema: RUN_SCHEMA }),
        ];
        try {
          const clock = async () =>
            (await admin.query<{ ms: number }>('SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms'))
              .rows[0].ms;
          const before = await clock();
          const readings = [await a.now(), await b.now()];
          const after = await clock();
          for (const now of readings) {
            expect(now).toBeGreaterThanOrEqual(before);
            expect(now).toBeLessThanOrEqual(after);
          }
          expect(readings[0]).toBeLessThanOrEqual(readings[1]);
        } finally {
          await b.close();
        }
      });
    });

    describe('two instances on two pools', () => {
      let pools: pg.Pool[];
      let a: PostgresPaymentsStore;
      let b: PostgresPaymentsStore;

      beforeAll(async () => {
        pools = [hostPool({ max: 5 }), hostPool({ max: 5 })];
        [a, b] = pools.map((p) => new PostgresPaymentsStore(p, { schema: RUN_SCHEMA, tablePrefix: 'shared_' }));
        await Promise.all([a.ping(), b.ping()]);
      });

      afterAll(async () => {
        await Promise.all(pools.map((p) => p.end()));
      });

      it('share claims: one instance holds, the other is told busy, then done', async () => {
        const event = `payment.confirmed:${randomUUID()}`;
        await expect(a.claim(event, 'instance-a', LONG_MS)).resolves.toBe('claimed');
        await expect(b.claim(event, 'instance-b', LONG_MS)).resolves.toBe('busy');
        await expect(b.markDone(event, 'instance-b', LONG_MS)).resolves.toBe(false);
        await expect(a.markDone(event, 'instance-a', LONG_MS)).resolves.toBe(true);
        await expect(b.claim(event, 'instance-b', LONG_MS)).resolves.toBe('done');
      });

      it('share rate limits: a slot taken on one instance is taken for the other, until freed', async () => {
        const k = `token:${randomUUID()}`;
        await expect(a.rateLimits.take(k, LONG_MS)).resolves.toBe(true);
        await expect(b.rateLimits.take(k, LONG_MS)).resolves.toBe(false);
        await b.rateLimits.free(k);
        await expect(a.rateLimits.take(k, LONG_MS)).resolves.toBe(true);
        const raced = `token:${randomUUID()}`;
        const takes = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).rateLimits.take(raced, LONG_MS)),
        );
        expect(takes.filter(Boolean)).toHaveLength(1);
      });

      it('racing 100 claims over 20 events grant exactly one claim per event', async () => {
        const events = Array.from({ length: 20 }, () => randomUUID());
        const attempts = Array.from({ length: 100 }, (_, i) => ({
          event: events[i % 20],
          owner: `o${i}`,
          store: i % 2 ? a : b,
        }));
        const outcomes = await Promise.all(attempts.map((t) => t.store.claim(t.event, t.owner, LONG_MS)));
        const winners = new Map<string, string[]>();
        attempts.forEach((t, i) => {
          if (outcomes[i] === 'claimed') winners.set(t.event, [...(winners.get(t.event) ?? []), t.owner]);
        });
        expect(winners.size).toBe(20);
        for (const owners of winners.values()) expect(owners).toHaveLength(1);
        // The database agrees with what each winner was told.
        const { rows } = await admin.query(
          `SELECT event_key, owner FROM "${RUN_SCHEMA}".shared_events WHERE event_key = ANY($1)`,
          [events],
        );
        expect(new Map(rows.map((r: { event_key: string; owner: string }) => [r.event_key, [r.owner]]))).toEqual(
          winners,
        );
      });

      it('taking due entries concurrently from both pools gives each entry to exactly one taker', async () => {
        const base = Date.now() + 10_000 * LONG_MS;
        const entries = Array.from({ length: 60 }, pending);
        await Promise.all(entries.map((e, i) => (i % 2 ? a : b).schedulePending(e, base + (i % 5))));
        // Ten takers on ten connections at once, five entries each at most, then whatever is left.
        const takes = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).takeDuePending(base + 10, 5, LONG_MS)),
        );
        const rest = await a.takeDuePending(base + 10, 100, LONG_MS);
        const ids = [...takes.flat(), ...rest]
          .map((t) => t.paymentId)
          .filter((id) => entries.some((e) => e.paymentId === id));
        expect(ids).toHaveLength(60);
        expect(new Set(ids).size).toBe(60);
        await expect(b.takeDuePending(base + 10, 100, LONG_MS)).resolves.toEqual([]);
        await Promise.all(entries.map((e) => a.removePending(e.paymentId)));
      });
    });

    describe('the cleanup sweep racing a write over an expired row', () => {
      // A write that lands on an expired row (a re-claim after a crash, a record or binding saved
      // again) is held open in a transaction on one connection while another instance sweeps on
      // another: the sweep picked the row while it was expired, and must not delete it once it is live.
      it('keeps the fresh claim, binding and record, so a third claimer is told busy', async () => {
        const prefix = `sweep_${randomUUID().slice(0, 8)}_`;
        const names = { schema: RUN_SCHEMA, tablePrefix: prefix };
        const applicationName = `nestjs-payments-sweep-${randomUUID().slice(0, 8)}`;
        const pools = {
          setup: hostPool({ max: 1 }),
          holder: hostPool({ max: 1 }),
          sweeper: hostPool({ max: 1, application_name: applicationName }),
        };
        const event = `outcome:${randomUUID()}`;
        const token = randomUUID();
        const record = (attempts: number) => ({
          paymentId: `pay_${randomUUID()}`,
          outcome: 'confirmed' as const,
          status: 'SUCCESS',
          source: 'webhook' as const,
          handlers: 'succeeded' as const,
          attempts,
          updatedAt: new Date().toISOString(),
        });
        const old = record(1);
        const fresh = { ...old, attempts: 2 };
        const holderClient = await pools.holder.connect();
        try {
          const setup = new PostgresPaymentsStore(pools.setup, names);
          await expect(setup.claim(event, 'crashed', 50)).resolves.toBe('claimed');
          await setup.saveBinding(token, { paymentId: 'pay-old', amount: '1000', createdAt: old.updatedAt }, 50);
          await setup.saveOutcome(old, 50);
          await new Promise((r) => setTimeout(r, 200));

          // Tables exist: neither store runs its CREATE INDEX IF NOT EXISTS, which would wait for the open transaction.
          await holderClient.query('BEGIN');
          const holder = new PostgresPaymentsStore(
            { query: (text, params) => holderClient.query(text, params) },
            { ...names, createTables: false },
          );
          await expect(holder.claim(event, 'fresh', LONG_MS)).resolves.toBe('claimed');
          await holder.saveBinding(
            token,
            { paymentId: 'pay-fresh', amount: '1000', createdAt: old.updatedAt },
            LONG_MS,
          );
          await holder.saveOutcome(fresh, LONG_MS);

          const sweeper = new PostgresPaymentsStore(pools.sweeper, {
            ...names,
            createTables: false,
            cleanupEveryWrites: 1,
          });
          await sweeper.removePending(`pay_${randomUUID()}`); // one write: the sweep starts in the background
          let swept = false;
          const sweeping = sweeper.close().then(() => (swept = true)); // close() waits for the sweep
          // Until the sweep is done, or waits for the row locks of the open transaction.
          for (let i = 0; i < 250 && !swept; i++) {
            const { rows } = await admin.query(
              `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
              [applicationName],
            );
            if (rows.length > 0) break;
            await new Promise((r) => setTimeout(r, 20));
          }
          await holderClient.query('COMMIT');
          await sweeping;

          const third = new PostgresPaymentsStore(pools.setup, names);
          await expect(third.claim(event, 'third', LONG_MS)).resolves.toBe('busy');
          await expect(third.findBinding(token)).resolves.toMatchObject({ paymentId: 'pay-fresh' });
          await expect(third.getOutcome(old.paymentId)).resolves.toStrictEqual(fresh);
        } finally {
          holderClient.release();
          await Promise.all(Object.values(pools).map((p) => p.end()));
        }
      });
    });

    describe('a claim that completes after the client gave up (#13.4)', () => {
      it('is freed by release() from the same owner, instead of blocking redeliveries for its lease', async () => {
        const pool = hostPool();
        try {
          await expectLateClaimReleased(pool, { schema: RUN_SCHEMA, tablePrefix: 'late_' });
        } finally {
          await pool.end();
        }
      });
    });

    describe('prepared statements (preparedStatements)', () => {
      // pg_prepared_statements lists the session's own: one pg Client is one session.
      const preparedOn = async (client: pg.Client) =>
        (
          await client.query<{ name: string }>(
            `SELECT name FROM pg_prepared_statements WHERE name LIKE 'nestjs_payments_%' ORDER BY name`,
          )
        ).rows.map((row) => row.name);

      it('names the statements on a pg Client by default: parsed once per connection, then bound', async () => {
        const client = new pg.Client({ connectionString: POSTGRES_URL });
        await client.connect();
        try {
          const store = new PostgresPaymentsStore(client, { schema: RUN_SCHEMA, tablePrefix: 'prep_' });
          const key = randomUUID();
          await expect(store.claim(key, 'o', LONG_MS)).resolves.toBe('claimed');
          await expect(store.markDone(key, 'o', LONG_MS)).resolves.toBe(true);
          await expect(store.claim(key, 'p', LONG_MS)).resolves.toBe('done');
          const names = await preparedOn(client);
          // claim and markDone, each prepared once although claim ran twice.
          expect(names).toHaveLength(2);
          // Another store on the same connection, other tables: its own names, no clash.
          const other = new PostgresPaymentsStore(client, { schema: RUN_SCHEMA, tablePrefix: 'prep_other_' });
          await expect(other.claim(key, 'o', LONG_MS)).resolves.toBe('claimed');
          expect(await preparedOn(client)).toHaveLength(3);
        } finally {
          await client.end();
        }
      });

      it('sends them unnamed with preparedStatements: false (PgBouncer in transaction mode)', async () => {
        const client = new pg.Client({ connectionString: POSTGRES_URL });
        await client.connect();
        try {
          const store = new PostgresPaymentsStore(client, {
            schema: RUN_SCHEMA,
            tablePrefix: 'unprep_',
            preparedStatements: false,
          });
          await expect(store.claim(randomUUID(), 'o', LONG_MS)).resolves.toBe('claimed');
          await expect(store.ping()).resolves.toBeUndefined();
          expect(await preparedOn(client)).toEqual([]);
        } finally {
          await client.end();
        }
      });

      it('rejects a preparedStatements that is not a boolean', () => {
        expect(
          () => new PostgresPaymentsStore(POSTGRES_URL, { preparedStatements: 'yes' as unknown as boolean }),
        ).toThrow(/preparedStatements must be a boolean/);
      });
    });

    describe('ownership of the pool', () => {
      it('never ends a pool passed in; the store keeps working on it after close()', async () => {
        const pool = hostPool();
        try {
          const store = new PostgresPaymentsStore(pool, { schema: RUN_SCHEMA });
          await expect(store.claim(randomUUID(), 'o', LONG_MS)).resolves.toBe('claimed');
          await store.close();
          expect(pool.ended).toBe(false);
          await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
          await expect(store.claim(randomUUID(), 'o', LONG_MS)).resolves.toBe('claimed');
        } finally {
          await pool.end();
        }
      });

      it('ends the pool it created from a connection string; later calls reject; close() twice is fine', async () => {
        const applicationName = `nestjs-payments-test-${randomUUID().slice(0, 8)}`;
        const store = new PostgresPaymentsStore(POSTGRES_URL, {
          schema: RUN_SCHEMA,
          poolOptions: { application_name: applicationName },
        });
        const connections = async () =>
          Number(
            (
              await admin.query('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [
                applicationName,
              ])
            ).rows[0].n,
          );
        await expect(store.claim(randomUUID(), 'o', LONG_MS)).resolves.toBe('claimed');
        expect(await connections()).toBeGreaterThan(0);
        await store.close();
        await store.close();
        // The server notices the disconnection asynchronously: poll rather than assume a delay.
        for (let i = 0; i < 50 && (await connections()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
        expect(await connections()).toBe(0);
        await expect(store.claim(randomUUID(), 'o', LONG_MS)).rejects.toThrow(/claim called after close\(\)/);
      });

      it('keeps the password of a pool passed in out of util.inspect and JSON of the store', async () => {
        const pool = new pg.Pool({ connectionString: 'postgres://app:s3cret-pw@127.0.0.1:1/db' });
        const store = new PostgresPaymentsStore(pool);
        expect(inspect(store, { depth: 10, showHidden: true })).not.toContain('s3cret-pw');
        expect(JSON.stringify(store)).not.toContain('s3cret-pw');
        await pool.end();
      });

      it('says a reachable database that refuses the statements (no tables) is reachable, and an absent one is not', async () => {
        const quiet = { log: () => {}, warn: () => {}, error: () => {} };
        const refusing = new PostgresPaymentsStore(admin, {
          schema: RUN_SCHEMA,
          tablePrefix: 'never_created_',
          createTables: false,
          logger: quiet,
        });
        const refusal = await refusing.claim('e', 'o', LONG_MS).catch((error: Error) => error);
        expect(String(refusal)).toMatch(
          /claim: the database is reachable but refused the statement \(SQLSTATE 42P01;.*never_created_events/,
        );
        expect(String(refusal)).not.toMatch(/unreachable|could not reach/);
        const absent = new PostgresPaymentsStore('postgres://postgres@127.0.0.1:1/test', {
          operationTimeoutMs: 3000,
          logger: quiet,
        });
        await expect(absent.claim('e', 'o', LONG_MS)).rejects.toThrow(
          /claim: could not reach the database: .*ECONNREFUSED/,
        );
        await absent.close();
      });

      it('rejects operations within operationTimeoutMs when the server is unreachable', async () => {
        const store = new PostgresPaymentsStore('postgres://postgres@127.0.0.1:1/test', {
          operationTimeoutMs: 1000,
          logger: { log: () => {}, warn: () => {}, error: () => {} },
        });
        await expect(store.ping()).rejects.toThrow();
        await store.close();
      });
    });
  },
);
