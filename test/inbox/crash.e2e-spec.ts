import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
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
import { hostDb, type HostDb } from './support/hosts.js';

// Exactly-once effects with the inbox under real crashes: the app (a child process, plain Express)
// keeps its orders in its own database (PostgreSQL or MariaDB) and the plugin's state in another
// store (Redis, or PostgreSQL without `transactional`). Each life of the app pays one new order and
// is sent the webhook of every order not done yet; the process SIGKILLs itself at one await between
// the handler's first write and the plugin's bookkeeping: after the first write, after the second,
// after the host's commit, inside the store's done marker call. Each round kills once at each. A
// last life, never killed, is sent every webhook until each is answered. Then every order was
// updated exactly once (one `paid_runs`, one event row, although the handler is not idempotent),
// has one inbox row, and every payment is done in the store (its webhook is a duplicate).
//
// INBOX_CRASH_ROUNDS (default 3) sets the rounds per combination of store and host database.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-inbox-crash', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/app.mjs');
const SECRET = 'whsec_inbox_crash_0123456789abcdef';
const LEASE_MS = 400;
const ROUNDS = Number(process.env.INBOX_CRASH_ROUNDS ?? 3);
/** The awaits the app kills itself at, in the order a settlement reaches them. */
const KILL_POINTS = ['write1', 'write2', 'committed', 'finishing'] as const;

const [pgUp, mariaUp, redisUp] = await Promise.all([postgresAvailable(), mariadbAvailable(), redisAvailable()]);
let sandbox: PaymentsSandbox;
const children: ChildProcess[] = [];

interface Order {
  orderId: string;
  paymentId: string;
  token: string;
}

interface AppState {
  orders: Array<{ id: string; status: string; paid_runs: number; events: number }>;
  inbox: Array<{ payment_id: string; order_id: string }>;
}

const deliver = (app: FixtureProcess, order: Order) =>
  postJson(`${app.url}/hook/${order.token}`, { payment_id: order.paymentId }).catch(() => ({
    status: 0,
    body: undefined,
  }));

/** The whole scenario on one store and one host database. */
async function crashLoop(env: Record<string, string>): Promise<number> {
  const start = (killAt?: string) =>
    startFixtureProcess(
      FIXTURE,
      {
        ...env,
        KILL_AT: killAt ?? '',
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
  let kills = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const point of KILL_POINTS) {
      const app = await start(point);
      const created = (await (
        await fetch(`${app.url}/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ count: 1 }),
        })
      ).json()) as Array<Omit<Order, 'token'>>;
      for (const order of created) {
        await sandbox.completePayment(order.paymentId, { requireDelivery: false });
        const webhook = sandbox.getPayment(order.paymentId)!.webhook!;
        orders.push({ ...order, token: new URL(webhook).pathname.split('/').at(-1)! });
      }
      // The new order's webhook reaches the kill point; older ones may be busy (a dead life's claim) or done.
      const newest = orders.at(-1)!;
      for (const order of orders.filter((o) => !done.has(o.paymentId) && o !== newest))
        void deliver(app, order).then((answer) => {
          if (answer.status === 200) done.add(order.paymentId);
        });
      await deliver(app, newest);
      expect(await app.exited).toEqual({ code: null, signal: 'SIGKILL' });
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
    expect(done.size).toBe(orders.length);
    // Each is now a duplicate: the store's done marker is there for every one.
    for (const order of orders)
      expect(await deliver(last, order)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    const state = (await (await fetch(`${last.url}/state`)).json()) as AppState;
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    expect(state.orders).toEqual(
      orders.map((o) => ({ id: o.orderId, status: 'paid', paid_runs: 1, events: 1 })).sort(byId),
    );
    expect(state.inbox).toEqual(
      orders
        .map((o) => ({ payment_id: o.paymentId, order_id: o.orderId }))
        .sort((a, b) => (a.payment_id < b.payment_id ? -1 : 1)),
    );
  } finally {
    last.child.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);
  }
  return kills;
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
function hostEnv(db: HostDb, name: string): Record<string, string> {
  return db.dialect === 'postgres'
    ? { HOST: 'postgres', HOST_URL: POSTGRES_URL, HOST_SCHEMA: name }
    : { HOST: 'mysql', HOST_URL: name };
}

describe(`SIGKILL at each await between an inbox handler's first write and the plugin's bookkeeping, ${ROUNDS} rounds of ${KILL_POINTS.length} kills per combination`, () => {
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

  const cases = [
    ['redis', 'postgres', redisUp && pgUp, `Redis (${REDIS_URL}) or PostgreSQL (${POSTGRES_URL}) not reachable`],
    ['redis', 'mysql', redisUp && mariaUp, `Redis (${REDIS_URL}) or MariaDB (${MARIADB_URL}) not reachable`],
    ['postgres', 'postgres', pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`],
    ['postgres', 'mysql', pgUp && mariaUp, `PostgreSQL (${POSTGRES_URL}) or MariaDB (${MARIADB_URL}) not reachable`],
  ] as const;
  for (const [store, dialect, up, reason] of cases)
    describeWithService(up, reason)(
      `plugin state in ${store}, orders in ${dialect === 'mysql' ? 'MariaDB' : 'PostgreSQL'}`,
      () => {
        it(
          'every order updated exactly once, one inbox row each, every payment done',
          async () => {
            const db = await hostDb(dialect);
            const plugin = await pluginStore(store);
            try {
              expect(await crashLoop({ ...plugin.env, ...hostEnv(db, db.location) })).toBe(ROUNDS * KILL_POINTS.length);
            } finally {
              await db.drop();
              await plugin.drop();
            }
          },
          60_000 + ROUNDS * KILL_POINTS.length * 5_000,
        );
      },
    );
});
