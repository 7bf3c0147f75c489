import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { PGlite } from '@electric-sql/pglite';
import { eq, sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { PaymentConfirmedEvent } from '../../lib/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { describeWithService, POSTGRES_URL, postgresAvailable } from '../support/services.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';
import { MARK_PAID, ordersState, pgliteDb, pgSchema, type Db } from './support/orders.js';
import { instance, paidOrder, type Handler } from './support/apps.js';

// Handlers and servers that do what they should not while the outcome's transaction is open: the
// server ends the transaction's connection, a handler ends or nests the transaction itself, the
// server's default isolation is serializable, a handler writes on the PGlite instance. Each
// attempt fails (rolled back, retried later) or nests cleanly; none commits half, none hangs, and
// the process lives on.

const pgUp = await postgresAvailable();
const rejections = collectUnhandledRejections();
let sandbox: PaymentsSandbox;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  await sandbox?.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

const orders = pgTable('orders', {
  id: text('id').primaryKey(),
  status: text('status').notNull(),
  paidRuns: integer('paid_runs').notNull(),
});
const orderEvents = pgTable('order_events', {
  id: serial('id').primaryKey(),
  orderId: text('order_id').notNull(),
  kind: text('kind').notNull(),
  source: text('source').notNull(),
  pid: integer('pid').notNull(),
});

/** The non-idempotent write with Drizzle, on any Drizzle database. */
async function markPaidWithDrizzle(db: ReturnType<typeof drizzlePg>, event: PaymentConfirmedEvent): Promise<void> {
  const id = event.developerTrackingId!;
  await db
    .update(orders)
    .set({ status: 'paid', paidRuns: sql`${orders.paidRuns} + 1` })
    .where(eq(orders.id, id));
  await db.insert(orderEvents).values({ orderId: id, kind: 'paid', source: event.source, pid: process.pid });
}

const markPaid = async (event: PaymentConfirmedEvent) => {
  await event.transaction!.query(MARK_PAID[0], [event.developerTrackingId]);
  await event.transaction!.query(MARK_PAID[1], [event.developerTrackingId, event.source, process.pid]);
};

/**
 * Delivers an order's webhook twice to an instance on `store` whose handler is `first` on its
 * first call and a clean write after; answers, the order after each, and the instance's logs.
 */
async function twice(db: Db, store: PostgresPaymentsStore, first: Handler, leaseMs?: number) {
  let calls = 0;
  const app = await instance(
    sandbox,
    store,
    async (event) => (++calls === 1 ? first(event) : markPaid(event)),
    leaseMs,
  );
  try {
    const order = await paidOrder(sandbox, db, app.client);
    const state = async () => (await ordersState(db)).find((o) => o.id === order.orderId);
    const firstAnswer = await order.deliver(app);
    const afterFirst = await state();
    const secondAnswer = await order.deliver(app);
    return {
      answers: [firstAnswer.status, secondAnswer.status],
      afterFirst,
      afterSecond: await state(),
      logs: app.logs,
      order,
    };
  } finally {
    await app.close();
  }
}

const untouched = { status: 'pending', paid_runs: 0, events: 0 };
const paidOnce = { status: 'paid', paid_runs: 1, events: 1 };

describeWithService(pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('on PostgreSQL (pg Pool)', () => {
  let schema: Awaited<ReturnType<typeof pgSchema>>;
  let db: pg.Pool;
  beforeAll(async () => {
    schema = await pgSchema();
    db = schema.pool(4);
  });
  afterAll(async () => {
    await schema?.drop();
  });
  const store = () => new PostgresPaymentsStore(schema.pool(6), { transactional: true });

  it.each([
    ['pg_terminate_backend', async (pid: number) => void (await db.query('SELECT pg_terminate_backend($1)', [pid]))],
    ['idle_in_transaction_session_timeout', async () => undefined],
  ])(
    'the server ending the connection while a handler awaits (%s) fails that attempt, not the process; a later one settles',
    async (_how, end) => {
      const run = await twice(db, store(), async (event) => {
        await markPaid(event);
        await event.transaction!.query('SET LOCAL idle_in_transaction_session_timeout = 200');
        const { rows } = await event.transaction!.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await end(rows[0].pid);
        await settle(700); // something slow, with no statement running: the connection ends meanwhile
      });
      expect(run.answers).toEqual([500, 200]);
      expect(run.afterFirst).toMatchObject(untouched);
      expect(run.afterSecond).toMatchObject(paidOnce);
    },
  );

  it('a COMMIT or ROLLBACK through event.transaction is refused, and fails the attempt even when the handler swallows the refusal', async () => {
    for (const statement of [
      'COMMIT',
      'rollback',
      '/* done */ END',
      'ABORT',
      'PREPARE TRANSACTION $$x$$',
      'COMMIT AND CHAIN',
    ]) {
      const refusals: string[] = [];
      const run = await twice(db, store(), async (event) => {
        await markPaid(event);
        await event.transaction!.query(statement).catch((error: Error) => refusals.push(error.message));
        await event.transaction!.query(MARK_PAID[1], [event.developerTrackingId, 'after', process.pid]);
      });
      expect({
        statement,
        answers: run.answers,
        afterFirst: run.afterFirst,
        afterSecond: run.afterSecond,
      }).toMatchObject({
        statement,
        answers: [500, 200],
        afterFirst: untouched,
        afterSecond: paidOnce,
      });
      expect(refusals).toEqual([expect.stringContaining('a handler tried to end the outcome’s transaction')]);
    }
  });

  it('a raw BEGIN ... COMMIT through event.transaction nests as a savepoint: a later throw rolls it back with the rest', async () => {
    const run = await twice(db, store(), async (event) => {
      await event.transaction!.query('BEGIN');
      await markPaid(event);
      await event.transaction!.query('COMMIT');
      throw new Error('failed after the nested commit');
    });
    expect(run.answers).toEqual([500, 200]);
    expect(run.afterFirst).toMatchObject(untouched);
    expect(run.afterSecond).toMatchObject(paidOnce);
  });

  it('Drizzle’s .transaction() on event.transaction.client nests as a savepoint; its rollback undoes only its own writes', async () => {
    const run = await twice(db, store(), async (event) => {
      const d = drizzlePg({ client: event.transaction!.client as pg.PoolClient });
      await d.transaction(async (tx) => markPaidWithDrizzle(tx as unknown as ReturnType<typeof drizzlePg>, event));
      await d
        .transaction(async (tx) => {
          await tx
            .insert(orderEvents)
            .values({ orderId: event.developerTrackingId!, kind: 'undone', source: 'x', pid: 0 });
          tx.rollback();
        })
        .catch(() => undefined);
      throw new Error('failed after Drizzle committed its transaction');
    });
    expect(run.answers).toEqual([500, 200]);
    expect(run.afterFirst).toMatchObject(untouched);
    expect(run.afterSecond).toMatchObject(paidOnce);
  });

  it('a COMMIT the guard cannot see (several statements in one query on the client) fails the attempt before the done marker', async () => {
    const run = await twice(db, store(), async (event) => {
      const client = event.transaction!.client as pg.PoolClient;
      await client.query(`SELECT 1; COMMIT`);
      await markPaid(event);
    });
    expect(run.answers[0]).toBe(500);
    expect(run.logs.some((l) => l.includes('the outcome’s transaction was ended while its handlers ran'))).toBe(true);
    // The payment is not done: the second attempt ran (its writes are the ones that count).
    expect(run.answers[1]).toBe(200);
    await expect(store().getOutcome(run.order.paymentId)).resolves.toMatchObject({
      handlers: 'succeeded',
      attempts: 2,
    });
  });

  it('a handler cannot release the transaction’s client', async () => {
    const run = await twice(db, store(), async (event) => {
      await markPaid(event);
      (event.transaction!.client as pg.PoolClient).release();
    });
    expect(run.answers).toEqual([500, 200]);
    expect(run.afterFirst).toMatchObject(untouched);
    expect(run.logs.some((l) => l.includes('released by the plugin'))).toBe(true);
  });
});

describeWithService(pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)(
  'on a database whose default isolation is serializable',
  () => {
    const database = `nestjs_payments_serializable_${process.pid}`;
    let admin: pg.Client;
    let db: pg.Pool;
    beforeAll(async () => {
      admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.query(`ALTER DATABASE ${database} SET default_transaction_isolation = 'serializable'`);
      const url = new URL(POSTGRES_URL);
      url.pathname = `/${database}`;
      db = new pg.Pool({ connectionString: url.toString(), max: 6 });
      await db.query(
        `CREATE TABLE orders (id text PRIMARY KEY, amount text NOT NULL, status text NOT NULL DEFAULT 'pending', paid_runs integer NOT NULL DEFAULT 0);
       CREATE TABLE order_events (id serial PRIMARY KEY, order_id text NOT NULL, kind text NOT NULL, source text NOT NULL, pid integer NOT NULL)`,
      );
    });
    afterAll(async () => {
      await db?.end();
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    });

    it('a handler slower than a third of the lease still commits: the transaction runs at read committed', async () => {
      const { rows } = await db.query<{ level: string }>(
        `SELECT current_setting('default_transaction_isolation') AS level`,
      );
      expect(rows).toEqual([{ level: 'serializable' }]);
      let level = '';
      const app = await instance(
        sandbox,
        new PostgresPaymentsStore(db, { transactional: true }),
        async (event) => {
          await markPaid(event);
          level = (await event.transaction!.query<{ transaction_isolation: string }>('SHOW transaction_isolation'))
            .rows[0].transaction_isolation;
          await settle(900); // the claim is renewed on another connection meanwhile, every 100 ms
        },
        300,
      );
      try {
        const order = await paidOrder(sandbox, db, app.client);
        expect(await order.deliver(app)).toEqual({ status: 200, body: { received: true } });
        expect((await ordersState(db)).find((o) => o.id === order.orderId)).toMatchObject(paidOnce);
        expect(level).toBe('read committed');
      } finally {
        await app.close();
      }
    });
  },
);

describe('on PGlite', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await pgliteDb();
  });
  afterAll(async () => {
    await db.close();
  });
  const store = () => new PostgresPaymentsStore(db, { transactional: true });

  it('a write on the PGlite instance from a handler fails at once, saying what to do; other operations go on', async () => {
    const failures: string[] = [];
    const run = await twice(db, store(), async (event) => {
      await markPaid(event);
      let timer: NodeJS.Timeout | undefined;
      const blocked = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('blocked for 5 s'), 5000)));
      const answer = await Promise.race([
        db.query(MARK_PAID[0], [event.developerTrackingId]).then(() => 'ran'),
        blocked,
      ])
        .catch((e: Error) => e.message)
        .finally(() => clearTimeout(timer));
      failures.push(answer);
      throw new Error(answer);
    });
    expect(failures).toEqual([expect.stringContaining('Send it through event.transaction')]);
    expect(run.answers).toEqual([500, 200]);
    expect(run.afterFirst).toMatchObject(untouched);
    expect(run.afterSecond).toMatchObject(paidOnce);
    // The instance is the host's own again.
    await expect(db.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });

  it('Drizzle’s .transaction() on event.transaction.client nests as a savepoint; a COMMIT or rollback() on it is refused', async () => {
    const refusals: string[] = [];
    const run = await twice(db, store(), async (event) => {
      const d = drizzlePglite({ client: event.transaction!.client as PGlite });
      await d.transaction(async (tx) => markPaidWithDrizzle(tx as unknown as ReturnType<typeof drizzlePg>, event));
      const client = event.transaction!.client as PGlite & { rollback(): Promise<void> };
      await client.query('COMMIT').catch((e: Error) => refusals.push(e.message));
      await client.rollback().catch((e: Error) => refusals.push(e.message));
      throw new Error('failed after Drizzle committed its transaction');
    });
    expect(refusals).toHaveLength(2);
    expect(run.answers).toEqual([500, 200]);
    expect(run.afterFirst).toMatchObject(untouched);
    expect(run.afterSecond).toMatchObject(paidOnce);
  });
});
