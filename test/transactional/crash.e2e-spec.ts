import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { postJson } from '../support/outcome-kit.js';
import { describeWithService, POSTGRES_URL, postgresAvailable } from '../support/services.js';
import { settle } from '../faults/support/guards.js';
import { pgSchema } from './support/orders.js';
import { bundleFixture } from '../support/bundle.js';
import { startFixtureProcess, type FixtureProcess } from '../support/fixture-process.js';
import { ownServersMissing, startPgBouncer, startPostgres } from '../support/pg-servers.js';

// Exactly-once effects under real crashes: the app (a child process, plain Express, its orders and
// the plugin's transactional store on one database) is SIGKILLed at random moments while its
// confirmation handlers write orders. Each life of the app creates new paid orders and is sent the
// webhooks of every order not done yet; the kill lands while the first handler of that life runs,
// after a random pause, so at any step of any handler in flight: before its first write, between
// its writes, before the commit, after it. A last life, never killed, is sent every webhook until
// each is answered. Then every order was updated exactly once (one `paid_runs`, one event row,
// although the handler is not idempotent) and every payment is done, with no queue entry left.
//
// The fixture imports the package from a bundle esbuild makes at test start (from lib/, so the test
// needs no build); it is written under node_modules/.cache so that its bare imports resolve.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-exactly-once', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/app.mjs');
const SECRET = 'whsec_exactly_once_crash_0123456789abcdef';
const LEASE_MS = 400;
/**
 * Kills per backend, 50 in all, each inside a handler. PGlite gets fewer: opening its data
 * directory (crash recovery included) costs about 2 s of CPU per start.
 */
const LIVES = { pglite: 15, postgres: 35, pgbouncer: 12, restarts: 12 };
/** On a server of its own, restarted while a handler runs at every this many lives. */
const RESTART_EVERY = 3;
/** New paid orders per life. */
const ORDERS_PER_LIFE = 1;
/** Longest random pause between a handler's steps. */
const PAUSE_MS = 25;

const pgUp = await postgresAvailable();
let sandbox: PaymentsSandbox;
const children: ChildProcess[] = [];

// A seeded generator: a failing run can be replayed with SEED=<n>.
const seed = Number(process.env.SEED ?? Date.now() % 100_000);
let state = seed;
const random = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;

/** A life of the app: the fixture process, and when its first handler started (it printed `START`). */
interface App extends FixtureProcess {
  started: Promise<void>;
}

/** Starts the fixture on a database; resolves once it listens. */
async function startApp(database: Record<string, string>): Promise<App> {
  const app = await startFixtureProcess(
    FIXTURE,
    {
      ...database,
      BUNDLE,
      SERVICE_URL: sandbox.url,
      PUBLIC_KEY: sandbox.publicKey,
      PRIVATE_KEY: sandbox.privateKey,
      SECRET,
      LEASE_MS: String(LEASE_MS),
      PAUSE_MS: String(PAUSE_MS),
    },
    children,
  );
  return { ...app, started: app.printed('START ') };
}

interface Order {
  orderId: string;
  paymentId: string;
  token: string;
}

interface AppState {
  orders: Array<{ id: string; status: string; paid_runs: number; events: number }>;
  outcomes: Array<{ payment_id: string; handlers: string; attempts: string }>;
  done: string[];
  pending: string[];
}

const deliver = (app: App, order: Order) =>
  postJson(`${app.url}/hook/${order.token}`, { payment_id: order.paymentId }).catch(() => ({
    status: 0,
    body: undefined,
  }));

/**
 * The whole scenario on one database. `midHandler`, when given, runs in each life once a handler
 * started, before the kill (a server restart: the app must live through it).
 */
async function crashLoop(
  database: Record<string, string>,
  lives: number,
  midHandler?: (life: number, app: App) => Promise<void>,
): Promise<void> {
  const orders: Order[] = [];
  const done = new Set<string>();
  let kills = 0;
  for (let life = 0; life < lives; life++) {
    const app = await startApp(database);
    const created = (await (
      await fetch(`${app.url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ count: ORDERS_PER_LIFE }),
      })
    ).json()) as Array<Omit<Order, 'token'>>;
    for (const order of created) {
      await sandbox.completePayment(order.paymentId, { requireDelivery: false });
      const webhook = sandbox.getPayment(order.paymentId)!.webhook!;
      orders.push({ ...order, token: new URL(webhook).pathname.split('/').at(-1)! });
    }
    // Every order not known done: the new ones run; older ones may be busy (a dead life's claim) or done.
    for (const order of orders.filter((o) => !done.has(o.paymentId))) {
      void deliver(app, order).then((answer) => {
        if (answer.status === 200) done.add(order.paymentId);
      });
    }
    await app.started;
    await settle(Math.floor(random() * 4 * PAUSE_MS));
    await midHandler?.(life, app);
    expect(app.child.kill('SIGKILL')).toBe(true);
    expect(await app.exited).toEqual({ code: null, signal: 'SIGKILL' });
    kills += 1;
  }
  expect(kills).toBe(lives);

  // The last life: every webhook again until each is answered 200 (409 while a dead life's claim runs out).
  const last = await startApp(database);
  try {
    for (let round = 0; round < 100 && done.size < orders.length; round++) {
      const answers = await Promise.all(orders.map(async (order) => [order, await deliver(last, order)] as const));
      for (const [order, answer] of answers) if (answer.status === 200) done.add(order.paymentId);
      if (done.size < orders.length) await settle(LEASE_MS / 2);
    }
    expect(done.size).toBe(orders.length);
    // Each is now a duplicate, and reconciliation finds nothing left to do.
    for (const order of orders)
      expect(await deliver(last, order)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    const pass = await (
      await fetch(`${last.url}/admin/reconcile?now=${Date.now() + 3_600_000}`, { method: 'POST' })
    ).json();
    expect(pass).toEqual({ checked: 0, settled: 0 });

    const appState = (await (await fetch(`${last.url}/state`)).json()) as AppState;
    const ours = new Set(orders.map((o) => o.orderId));
    expect(appState.orders.filter((o) => ours.has(o.id))).toEqual(
      orders.map((o) => ({ id: o.orderId, status: 'paid', paid_runs: 1, events: 1 })).sort(byId),
    );
    const paymentIds = orders.map((o) => o.paymentId).sort();
    expect(
      appState.outcomes.filter((o) => paymentIds.includes(o.payment_id)).map((o) => [o.payment_id, o.handlers]),
    ).toEqual(paymentIds.map((id) => [id, 'succeeded']));
    expect(appState.done.filter((key) => paymentIds.includes(key.slice('outcome:'.length)))).toEqual(
      paymentIds.map((id) => `outcome:${id}`),
    );
    expect(appState.pending.filter((id) => paymentIds.includes(id))).toEqual([]);
  } finally {
    last.child.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);
  }
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

describe(`SIGKILL inside transactional handlers, ${LIVES.pglite} kills on PGlite and ${LIVES.postgres} on PostgreSQL (seed ${seed})`, () => {
  beforeAll(async () => {
    mkdirSync(OUT_DIR, { recursive: true });
    bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE);
    sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
  }, 60_000);

  afterEach(() => {
    // Only the processes this suite started, by their handle.
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  afterAll(async () => {
    await sandbox?.close();
    rmSync(OUT_DIR, { recursive: true, force: true });
  });

  it('PGlite on disk: every order updated exactly once, every payment done', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'exactly-once-pglite-'));
    try {
      await crashLoop({ DATA_DIR: path.join(dir, 'pgdata') }, LIVES.pglite);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  describeWithService(pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('on a server', () => {
    it('PostgreSQL: every order updated exactly once, every payment done', async () => {
      const schema = await pgSchema();
      try {
        await crashLoop({ DATABASE_URL: POSTGRES_URL, SCHEMA: schema.schema }, LIVES.postgres);
      } finally {
        await schema.drop();
      }
    }, 180_000);
  });

  const missing = ownServersMissing();
  describeWithService(!missing, missing ?? '')('on servers of its own', () => {
    it('PostgreSQL behind PgBouncer in transaction mode, default options: every order updated exactly once, every payment done', async () => {
      const server = await startPostgres();
      const bouncer = await startPgBouncer({ host: '127.0.0.1', port: server.port });
      try {
        await createDatabase(server.url, 'crash_bouncer');
        await crashLoop({ DATABASE_URL: bouncer.url('crash_bouncer') }, LIVES.pgbouncer);
      } finally {
        await bouncer.stop();
        await server.remove();
      }
    }, 180_000);

    it('PostgreSQL restarted while handlers run: the app lives on, every order updated exactly once, every payment done', async () => {
      const server = await startPostgres();
      let restarts = 0;
      try {
        await crashLoop({ DATABASE_URL: server.url }, LIVES.restarts, async (life, app) => {
          if (life % RESTART_EVERY !== 1) return;
          await server.down();
          await server.up();
          restarts += 1;
          await settle(300);
          // The transaction's connection ended under a handler: that attempt fails, not the process.
          expect({ exitCode: app.child.exitCode, stderr: app.stderr().includes('Unhandled') }).toEqual({
            exitCode: null,
            stderr: false,
          });
        });
        expect(restarts).toBe(Math.ceil((LIVES.restarts - 1) / RESTART_EVERY));
      } finally {
        await server.remove();
      }
    }, 180_000);
  });
});

/** A database of its own on a server (the app creates its tables in it). */
async function createDatabase(serverUrl: string, name: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
}
