import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { postJson } from '../support/outcome-kit.js';
import {
  describeWithService,
  MARIADB_URL,
  mariadbAvailable,
  POSTGRES_URL,
  postgresAvailable,
  REDIS_URL,
  redisAvailable,
} from '../support/services.js';
import { settle } from '../faults/support/guards.js';
import { bundleFixture } from '../support/bundle.js';
import { startFixtureProcess, type FixtureProcess } from '../support/fixture-process.js';
import { hostDb, type HostDb, type ServedDialect } from './support/hosts.js';
import { RECIPE_CASES } from './support/recipe-cases.js';
// @ts-expect-error a plain .mjs script without types
import { generatePrismaRecipes } from '../../scripts/prisma-recipes.mjs';

// Exactly-once effects with the inbox under real crashes, for every recipe of docs/exactly-once.md
// (the guide's files, imported by the app) on each database it speaks, with the plugin's state in
// Redis or in PostgreSQL (without `transactional`). The app (a child process, plain Express) keeps
// its orders in its own database. Its first life settles one order untouched and counts the awaits
// of that outcome from the handler's first write to the store's done marker (every round trip it
// starts: test/inbox/fixtures/app.mjs). Then each round has one life per await: it pays one new
// order, is sent its webhook, and SIGKILLs itself while awaiting that round trip. A last life,
// never killed, is sent every webhook until each is answered (each first meets a dead life's claim,
// busy until its lease ends). Then every order was written exactly once (one event row, although the recipes'
// handlers are not idempotent), has one inbox row, and every payment is done in the store (its
// webhook is a duplicate).
//
// INBOX_CRASH_ROUNDS (default 1) sets the rounds per combination, or INBOX_CRASH_RUNS the killed
// lives (rounds enough to reach it); INBOX_CRASH_ONLY (a substring of
// a combination's title) runs only some; INBOX_CRASH_REPORT (a file) gets one JSON line of counts
// per combination (scripts/inbox-crash-matrix.mjs runs the matrix and prints the table).
// The whole matrix runs when INBOX_CRASH_RUNS or INBOX_CRASH_ALL=1 is set; by default (the README's
// test command) each recipe on each database runs with one of the two stores, in turn, so every
// recipe, database and store is killed at every await in half the time.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-inbox-crash', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'entry.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/app.mjs');
const SECRET = 'whsec_inbox_crash_0123456789abcdef';
const LEASE_MS = 400;
const ROUNDS = Number(process.env.INBOX_CRASH_ROUNDS ?? 1);
/** Killed lives per combination wanted instead of rounds: as many rounds as reach it. */
const RUNS = process.env.INBOX_CRASH_RUNS ? Number(process.env.INBOX_CRASH_RUNS) : undefined;
const ONLY = process.env.INBOX_CRASH_ONLY ?? '';
const REPORT = process.env.INBOX_CRASH_REPORT;
const ALL = RUNS !== undefined || process.env.INBOX_CRASH_ALL === '1';

const [pgUp, mariaUp, redisUp] = await Promise.all([postgresAvailable(), mariadbAvailable(), redisAvailable()]);
let sandbox: PaymentsSandbox;
const children: ChildProcess[] = [];

interface Order {
  orderId: string;
  paymentId: string;
  token: string;
}

interface AppState {
  orders: Array<{ id: string; status: string; events: number }>;
  inbox: Array<{ payment_id: string; order_id: string }>;
  /** The awaits of the last outcome of its own the life settled untouched. */
  awaits: number;
}

/** What one combination counted: lives killed, and the orders' effects. */
interface CrashCounts {
  lives: number;
  kills: number;
  /** Lives that had fewer round trips than their kill point, and answered. */
  lived: number;
  awaits: number;
  orders: number;
  /** Orders with more than one event row, payments with more than one inbox row. */
  duplicates: number;
  /** Orders with no event row or not paid, payments with no inbox row. */
  losses: number;
  maxEventsPerOrder: number;
  maxInboxRowsPerPayment: number;
}

const deliver = (app: FixtureProcess, order: Order) =>
  postJson(`${app.url}/hook/${order.token}`, { payment_id: order.paymentId }).catch(() => ({
    status: 0,
    body: undefined,
  }));

const createOrder = async (app: FixtureProcess): Promise<Order> => {
  const [order] = (await (
    await fetch(`${app.url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ count: 1 }),
    })
  ).json()) as Array<Omit<Order, 'token'>>;
  await sandbox.completePayment(order.paymentId, { requireDelivery: false });
  const webhook = sandbox.getPayment(order.paymentId)!.webhook!;
  return { ...order, token: new URL(webhook).pathname.split('/').at(-1)! };
};

/** The whole scenario on one store, one host database and one recipe. */
async function crashLoop(title: string, env: Record<string, string>): Promise<CrashCounts> {
  const start = (killAt?: number) =>
    startFixtureProcess(
      FIXTURE,
      {
        ...env,
        KILL_AT: killAt === undefined ? '' : String(killAt),
        BUNDLE,
        SERVICE_URL: sandbox.url,
        PUBLIC_KEY: sandbox.publicKey,
        PRIVATE_KEY: sandbox.privateKey,
        SECRET,
        LEASE_MS: String(LEASE_MS),
      },
      children,
    );
  const orders: Order[] = [];
  const done = new Set<string>();

  // The first life counts the awaits of an outcome of its own, untouched.
  const first = await start();
  let awaits: number;
  try {
    const order = await createOrder(first);
    orders.push(order);
    expect(await deliver(first, order)).toEqual({ status: 200, body: { received: true } });
    done.add(order.paymentId);
    awaits = ((await (await fetch(`${first.url}/state`)).json()) as AppState).awaits;
  } finally {
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
  }
  // At least the handler's two writes, the commit and the done marker.
  expect(awaits).toBeGreaterThanOrEqual(4);

  let kills = 0;
  let lived = 0;
  const rounds = RUNS === undefined ? ROUNDS : Math.ceil(RUNS / awaits);
  for (let round = 0; round < rounds; round++) {
    for (let point = 1; point <= awaits; point++) {
      const app = await start(point);
      const newest = await createOrder(app);
      orders.push(newest);
      // Its webhook alone: the outcome meets the process as the first life's did, at the same awaits.
      const answer = await deliver(app, newest);
      const end = await Promise.race([app.exited, settle(10_000).then(() => ({ answer, stderr: app.stderr() }))]);
      if ('answer' in end) {
        // A life that answered had fewer round trips than the first (a driver's packets split by
        // what its pool holds: Prisma on MariaDB): it may live only past its own last await.
        const own = ((await (await fetch(`${app.url}/state`)).json()) as AppState).awaits;
        app.child.kill('SIGKILL');
        await app.exited;
        expect({ point, awaits, own, end }).toEqual({ point, awaits, own: Math.min(own, point - 1), end });
        expect(end.answer).toEqual({ status: 200, body: { received: true } });
        done.add(newest.paymentId);
        lived += 1;
        continue;
      }
      expect({ point, awaits, end }).toEqual({ point, awaits, end: { code: null, signal: 'SIGKILL' } });
      kills += 1;
    }
  }

  const last = await start();
  try {
    for (let round = 0; round < 100 && done.size < orders.length; round++) {
      const pending = orders.filter((o) => !done.has(o.paymentId));
      const answers = await Promise.all(pending.map(async (order) => [order, await deliver(last, order)] as const));
      for (const [order, answer] of answers) if (answer.status === 200) done.add(order.paymentId);
      if (done.size < orders.length) await settle(LEASE_MS / 2);
    }
    const state = (await (await fetch(`${last.url}/state`)).json()) as AppState;
    const inboxRows = (paymentId: string) => state.inbox.filter((r) => r.payment_id === paymentId).length;
    const counted = orders.map((o) => ({
      events: state.orders.find((r) => r.id === o.orderId)?.events ?? 0,
      paid: state.orders.find((r) => r.id === o.orderId)?.status === 'paid',
      inbox: inboxRows(o.paymentId),
    }));
    const counts: CrashCounts = {
      lives: rounds * awaits + 2,
      kills,
      lived,
      awaits,
      orders: orders.length,
      duplicates: counted.filter((c) => c.events > 1 || c.inbox > 1).length,
      losses: counted.filter((c) => c.events === 0 || !c.paid || c.inbox === 0).length,
      maxEventsPerOrder: Math.max(...counted.map((c) => c.events)),
      maxInboxRowsPerPayment: Math.max(...counted.map((c) => c.inbox)),
    };
    if (REPORT) appendFileSync(REPORT, `${JSON.stringify({ combination: title, ...counts })}\n`);
    expect(kills).toBeGreaterThan(lived);
    expect(done.size).toBe(orders.length);
    // Each is now a duplicate: the store's done marker is there for every one.
    for (const order of orders)
      expect(await deliver(last, order)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    expect(state.orders).toEqual(orders.map((o) => ({ id: o.orderId, status: 'paid', events: 1 })).sort(byId));
    expect(state.inbox).toEqual(
      orders
        .map((o) => ({ payment_id: o.paymentId, order_id: o.orderId }))
        .sort((a, b) => (a.payment_id < b.payment_id ? -1 : 1)),
    );
    return counts;
  } finally {
    last.child.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);
  }
}

/** The plugin's state: a Redis key prefix (db 5) or a PostgreSQL schema of its own, dropped after. */
async function pluginStore(
  kind: 'redis' | 'postgres',
): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const name = `inbox_crash_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
  if (kind === 'redis') {
    const url = new URL(REDIS_URL);
    url.pathname = '/5';
    const prefix = `inbox-h:${name}:`;
    return {
      env: { STORE: 'redis', REDIS_URL: url.toString(), REDIS_PREFIX: prefix },
      drop: async () => {
        const redis = new Redis(url.toString());
        try {
          const keys = await redis.keys(`${prefix}*`);
          if (keys.length) await redis.del(...keys);
        } finally {
          redis.disconnect();
        }
      },
    };
  }
  const { default: pg } = await import('pg');
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  await admin.query(`CREATE SCHEMA ${name}`);
  return {
    env: { STORE: 'postgres', POSTGRES_URL, STORE_SCHEMA: name },
    drop: async () => {
      await admin.query(`DROP SCHEMA ${name} CASCADE`);
      await admin.end();
    },
  };
}

/** The host's env for the fixture, on a host database of the suite's own. */
function hostEnv(db: HostDb): Record<string, string> {
  return db.dialect === 'postgres'
    ? { HOST: 'postgres', HOST_SERVER: POSTGRES_URL, HOST_NAME: db.location }
    : { HOST: 'mysql', HOST_SERVER: MARIADB_URL, HOST_NAME: new URL(db.location).pathname.slice(1) };
}

const STORES = {
  redis: { label: 'Redis', up: redisUp, reason: `Redis not reachable at ${REDIS_URL}` },
  postgres: { label: 'PostgreSQL', up: pgUp, reason: `PostgreSQL not reachable at ${POSTGRES_URL}` },
} as const;
const HOSTS = {
  postgres: { label: 'PostgreSQL', up: pgUp, reason: `PostgreSQL not reachable at ${POSTGRES_URL}` },
  mysql: { label: 'MariaDB', up: mariaUp, reason: `MariaDB not reachable at ${MARIADB_URL}` },
} as const;

/** Every recipe on every database it speaks, with each store (by default each store in turn): the matrix. */
const MATRIX = RECIPE_CASES.flatMap((recipe) =>
  recipe.dialects.filter((d): d is ServedDialect => d !== 'sqlite').map((dialect) => ({ recipe, dialect })),
)
  .flatMap(({ recipe, dialect }, i) =>
    (ALL ? (['redis', 'postgres'] as const) : [i % 2 === 0 ? ('redis' as const) : ('postgres' as const)]).map(
      (store) => ({
        store,
        dialect,
        recipe,
        title: `${recipe.name} on ${HOSTS[dialect].label}, plugin state in ${STORES[store].label}`,
      }),
    ),
  )
  .filter((c) => c.title.includes(ONLY));

describe(`SIGKILL at each await between an inbox recipe's first write and the plugin's bookkeeping, ${ROUNDS} round(s) per combination`, () => {
  beforeAll(async () => {
    mkdirSync(OUT_DIR, { recursive: true });
    (generatePrismaRecipes as () => string[])();
    bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE, true);
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

  for (const { store, dialect, recipe, title } of MATRIX) {
    const up = STORES[store].up && HOSTS[dialect].up;
    describeWithService(up, STORES[store].up ? HOSTS[dialect].reason : STORES[store].reason)(title, () => {
      it(
        'every order written exactly once, one inbox row each, every payment done',
        async () => {
          const db = await hostDb(dialect);
          const plugin = await pluginStore(store);
          try {
            const counts = await crashLoop(title, { ...plugin.env, ...hostEnv(db), RECIPE: recipe.file });
            // Every life between the first and the last was killed at its await, or (had it fewer round
            // trips than its kill point) lived past its own last one and answered.
            expect(counts.kills + counts.lived).toBe(counts.lives - 2);
          } finally {
            await db.drop();
            await plugin.drop();
          }
        },
        60_000 + (RUNS ?? ROUNDS * 12) * 5_000,
      );
    });
  }
});
