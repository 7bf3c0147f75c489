/**
 * The shop killed at the worst moments, for real: the shop runs as a child process
 * (`node main.js`, see support/shop-process.ts), the payment service is a sandbox in this test
 * process (it outlives the shop, as the real service does), and SIGKILL stops the shop
 *
 *  (a) after the customer paid, before the outcome handler touched the order,
 *  (b) in the middle of the handler's transaction (the order updated, not committed),
 *  (c) after the commit (in the handler's afterCommit callback). The shop's store is
 *      transactional, so the order's update and the plugin's done mark commit together: there is
 *      no moment where one is committed and the other is not.
 *
 * Restarted on the same data, every order ends in its right state, with exactly one "paid"
 * event: on PGlite (a data directory in a temporary folder) and on PostgreSQL. Then two shop
 * instances on one PostgreSQL share the work: each outcome is handled once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { ShopDatabase, type DatabaseConfig } from '../../sample-app/src/db/database.js';
import { OrdersRepository } from '../../sample-app/src/orders/orders.repository.js';
import type { CrashPoint } from '../../sample-app/src/orders/crash-points.js';
import { describeWithService, POSTGRES_URL, postgresAvailable } from '../support/services.js';
import { paymentIdOf, ShopClient } from './shop.helpers.js';
import { buildShop, ShopProcess } from './support/shop-process.js';
import { freePort } from '../support/ports.js';

const WEBHOOK_SECRET = 'crash-test-webhook-secret-0123456789abcdef';
const ADMIN_PASSWORD = 'crash-test-admin-0123';
// A crashed instance's claim blocks the outcome this long: short, so the test need not wait a minute.
const LEASE_MS = 1500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns true (what the return page's auto-refresh does for a customer). */
async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000, everyMs = 300): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(everyMs);
  }
}

let main: string;
let service: PaymentsSandbox;

beforeAll(async () => {
  [main, service] = await Promise.all([
    buildShop(),
    // One delivery attempt: the test decides when the shop hears from the service.
    PaymentsSandbox.start({ webhookAttempts: 1, webhookTimeoutMs: 20_000 }),
  ]);
}, 180_000);

afterAll(async () => {
  await service?.close();
});

/** Environment of a shop process on `database`, in real-keys mode against the test's sandbox. */
function shopEnv(database: DatabaseConfig, port: number, holdAt?: CrashPoint): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    PAYMENTS_PUBLIC_KEY: service.publicKey,
    PAYMENTS_PRIVATE_KEY: service.privateKey,
    PAYMENTS_BASE_URL: service.url,
    PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ADMIN_PASSWORD,
    SHOP_OUTCOME_LEASE_MS: String(LEASE_MS),
    SHOP_RECONCILE_INTERVAL_SECS: '1',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : { DATA_DIR: database.dataDir! }),
    ...(holdAt && { SHOP_TEST_HOLD_AT: holdAt }),
  };
}

/** A customer buying through the catalog form; the order and payment ids. */
async function buy(client: ShopClient, productId: string): Promise<{ orderId: string; paymentId: string }> {
  const res = await client.buy(productId);
  expect(res.status).toBe(303);
  const paymentId = paymentIdOf(res.location!);
  return { paymentId, orderId: service.getPayment(paymentId)!.developerTrackingId! };
}

/** The crash scenarios, on one database. */
function crashScenarios(database: () => DatabaseConfig) {
  const results: Array<{ point: CrashPoint; orderId: string }> = [];

  for (const point of ['before-update', 'in-transaction', 'after-commit'] as const) {
    it(`SIGKILL ${point}: after a restart the order is paid, once`, async () => {
      const port = await freePort();
      const first = await ShopProcess.start(main, shopEnv(database(), port, point), `shop-${point}`);
      let orderId: string;
      let paymentId: string;
      try {
        const client = new ShopClient(`http://localhost:${port}`);
        ({ orderId, paymentId } = await buy(client, 'moka-pot'));
        // The customer pays; the service's webhook reaches the shop, whose handler stops at `point`.
        const settling = service.completePayment(paymentId, { requireDelivery: false });
        const [, held] = await first.waitFor(new RegExp(`^SHOP_HOLD ${point} (ord_[0-9a-f]+)$`));
        expect(held).toBe(orderId);
        expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
        expect((await settling).delivered).toBe(false);
      } finally {
        await first.stop('SIGKILL');
      }

      // Restart on the same data and port (so the payment's webhook URL is the shop's again).
      const second = await ShopProcess.start(main, shopEnv(database(), port), `shop-${point}-restarted`);
      try {
        const client = new ShopClient(`http://localhost:${port}`);
        if (point === 'after-commit') {
          // Committed before the crash: already paid; start-up reconciliation leaves it alone.
          expect((await client.get(`/orders/${orderId}/success?payment_id=${paymentId}`)).text).toContain(
            'data-state="paid"',
          );
          // Once the dead instance's lease is over, the service's webhook again (here, its
          // redelivery) finds the outcome done with the order (one transaction): nothing runs.
          await sleep(LEASE_MS + 200);
          const delivery = service.deliveries.filter((d) => d.paymentId === paymentId).at(-1)!;
          const again = await fetch(delivery.url, {
            method: delivery.method,
            ...(delivery.method === 'POST' && {
              headers: { 'content-type': 'application/json' },
              body: delivery.payload,
            }),
          });
          expect(again.status).toBe(200);
        } else {
          // The customer's return page (it refreshes itself) verifies and runs the handler, once
          // the crashed instance's claim has lapsed.
          await eventually(async () =>
            (await client.get(`/orders/${orderId}/success?payment_id=${paymentId}`)).text.includes('data-state="paid"'),
          );
        }
        // A second webhook delivery after that: a duplicate, nothing runs.
        const delivery = service.deliveries.filter((d) => d.paymentId === paymentId).at(-1)!;
        const dup = await fetch(delivery.url, {
          method: delivery.method,
          ...(delivery.method === 'POST' && {
            headers: { 'content-type': 'application/json' },
            body: delivery.payload,
          }),
        });
        expect(dup.status).toBe(200);
      } finally {
        expect((await second.stop('SIGTERM')).code).toBe(0);
      }
      results.push({ point, orderId: orderId! });
    }, 120_000);
  }

  it('every crashed order is paid with exactly one "paid" event', async () => {
    expect(results.map((r) => r.point)).toEqual(['before-update', 'in-transaction', 'after-commit']);
    const db = await ShopDatabase.open(database());
    try {
      const repo = new OrdersRepository(db);
      for (const { orderId } of results) {
        expect((await repo.get(orderId))!.status).toBe('paid');
        expect((await repo.events(orderId)).map((e) => e.kind)).toEqual(['created', 'paid']);
      }
    } finally {
      await db.close();
    }
  });
}

describe('crash tests on PGlite (a data directory)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'shop-crash-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });
  crashScenarios(() => ({ dataDir: join(dataDir, 'pgdata') }));
});

const pgUp = await postgresAvailable();

describeWithService(pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('crash tests on PostgreSQL', () => {
  // A database of its own, dropped at the end: nothing shared with other suites on the server.
  const name = `shop_crash_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.href;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
  });
  afterAll(async () => {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  crashScenarios(() => ({ databaseUrl }));

  it('two shop instances on one PostgreSQL: every outcome is handled once', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    // Started together: the migrations are applied once, under the advisory lock.
    const [a, b] = await Promise.all([
      ShopProcess.start(main, shopEnv({ databaseUrl }, portA), 'shop-A'),
      ShopProcess.start(main, shopEnv({ databaseUrl }, portB), 'shop-B'),
    ]);
    const orders: Array<{ orderId: string; paymentId: string }> = [];
    try {
      const customerA = new ShopClient(`http://localhost:${portA}`);
      const customerB = new ShopClient(`http://localhost:${portB}`);
      for (let i = 0; i < 6; i++)
        orders.push(await buy(i % 2 ? customerB : customerA, i % 3 ? 'espresso-beans' : 'pour-over-set'));
      // Each payment reaches both instances at once: the webhook (to the instance that made
      // it), its copy to the other instance, and the customer's return on both.
      await Promise.all(
        orders.map(async ({ orderId, paymentId }) => {
          await service.completePayment(paymentId, { requireDelivery: false });
          const delivery = service.deliveries.filter((d) => d.paymentId === paymentId).at(-1)!;
          const other = new URL(delivery.url);
          other.port = String(other.port === String(portA) ? portB : portA);
          const send = (target: string) =>
            fetch(target, {
              method: delivery.method,
              ...(delivery.method === 'POST' && {
                headers: { 'content-type': 'application/json' },
                body: delivery.payload,
              }),
            });
          await Promise.all([
            send(delivery.url),
            send(other.href),
            customerA.get(`/orders/${orderId}/success?payment_id=${paymentId}`),
            customerB.get(`/orders/${orderId}/success?payment_id=${paymentId}`),
          ]);
        }),
      );
      for (const { orderId, paymentId } of orders) {
        await eventually(async () =>
          (await customerA.get(`/orders/${orderId}/success?payment_id=${paymentId}`)).text.includes(
            'data-state="paid"',
          ),
        );
      }
    } finally {
      await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')]);
    }
    // The handler logs "order X: paid" only when it changed the order: once per order, in all.
    const paidLines = [...a.lines, ...b.lines].filter((line) => /order ord_[0-9a-f]+: paid \(payment/.test(line));
    expect(paidLines).toHaveLength(orders.length);
    const db = await ShopDatabase.open({ databaseUrl });
    try {
      const repo = new OrdersRepository(db);
      for (const { orderId } of orders)
        expect((await repo.events(orderId)).map((e) => e.kind)).toEqual(['created', 'paid']);
      // The plugin's record: one handled outcome per payment.
      const { rows } = await (db.queryable as unknown as pg.Pool).query<{ handlers: string }>(
        'SELECT handlers FROM payments_outcomes WHERE payment_id = ANY($1)',
        [orders.map((o) => o.paymentId)],
      );
      expect(rows.map((r) => r.handlers)).toEqual(orders.map(() => 'succeeded'));
    } finally {
      await db.close();
    }
  }, 120_000);
});
