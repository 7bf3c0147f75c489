import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Test } from '@nestjs/testing';
import { PaymentsModule, transactionHostInbox } from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
// @ts-expect-error a plain .mjs script without types: the docs' blocks are read as the extractor reads them
import { docSnippets } from '../../scripts/readme-snippets.mjs';
import { startFixtureProcess, type FixtureProcess } from '../support/fixture-process.js';
import { freePort } from '../support/ports.js';
import {
  describeWithService,
  MARIADB_URL,
  mariadbAvailable,
  POSTGRES_URL,
  postgresAvailable,
} from '../support/services.js';
import { hostDb, orderState, type HostDb } from '../inbox/support/hosts.js';

// docs/exactly-once.md's "Nest with @nestjs-cls/transactional", run: the guide's TransactionalShopModule
// (recipes/inbox-nest-cls.ts, checked word for word first) in a real Nest app, a child process
// (fixtures/cls-app.ts: nestjs-cls is CommonJS requiring Nest 12's ES modules, which Node loads
// and Jest on Node 20 does not), with TypeORM through @nestjs-cls/transactional's TypeORM adapter
// on PostgreSQL and MariaDB, the plugin's state in its memory store. The handlers are ordinary
// `@OnPaymentConfirmed()` methods writing through `txHost.tx`: a first attempt whose handler
// throws after writing leaves nothing; the redelivery writes once; a third finds the inbox row.

const ROOT = path.resolve(import.meta.dirname, '../..');
const RECIPE = path.join(import.meta.dirname, 'recipes/inbox-nest-cls.ts');
const GUIDE = path.join(ROOT, 'docs/exactly-once.md');
const SECRET = 'whsec_nest_cls_0123456789abcdef0123';

const pgUp = await postgresAvailable();
const mariaUp = await mariadbAvailable();
const children: ChildProcess[] = [];
let sandbox: PaymentsSandbox;
let bundleDir: string;
let bundle: string;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
  bundleDir = path.join(ROOT, 'node_modules/.cache/nestjs-payments-cls', String(process.pid));
  mkdirSync(bundleDir, { recursive: true });
  bundle = path.join(bundleDir, 'cls-app.mjs');
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, 'test/support/bundle-decorated.mjs'),
      path.join(import.meta.dirname, 'fixtures/cls-app.ts'),
      bundle,
    ],
    { cwd: ROOT, stdio: 'pipe' },
  );
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sandbox?.close();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

it('the guide’s TransactionalShopModule is a block of docs/exactly-once.md, word for word', () => {
  const blocks = new Map(docSnippets('exactly-once', readFileSync(GUIDE, 'utf8')) as Array<[string, string]>);
  expect(blocks.get('inbox-nest-cls.ts')).toBe(readFileSync(RECIPE, 'utf8'));
});

async function startApp(db: HostDb): Promise<FixtureProcess> {
  const port = await freePort();
  const location: Record<string, string> =
    db.dialect === 'postgres' ? { DB_URL: POSTGRES_URL, DB_SCHEMA: db.location } : { DB_URL: db.location };
  return startFixtureProcess(
    bundle,
    {
      ...location,
      DIALECT: db.dialect,
      SERVICE: JSON.stringify(sandbox.options()),
      SECRET,
      PORT: String(port),
    },
    children,
  );
}

async function stop(app: FixtureProcess): Promise<void> {
  app.child.kill('SIGTERM');
  const timer = setTimeout(() => app.child.kill('SIGKILL'), 5000);
  await app.exited;
  clearTimeout(timer);
}

/** The order's state, its handler's runs and its inbox rows. */
async function stateOf(db: HostDb, orderId: string, paymentId: string) {
  const [{ paid_runs }] = await db.query(`SELECT paid_runs FROM orders WHERE id = ${db.p(1)}`, [orderId]);
  const inbox = await db.query(`SELECT event, order_id FROM payments_inbox WHERE payment_id = ${db.p(1)}`, [paymentId]);
  return { ...(await orderState(db, orderId)), paidRuns: Number(paid_runs), inbox };
}

function hostCases(dialect: 'postgres' | 'mysql', up: boolean, reason: string) {
  describeWithService(up, reason)(`TypeORM adapter on ${dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB'}`, () => {
    let db: HostDb;
    let app: FixtureProcess;
    beforeAll(async () => {
      db = await hostDb(dialect);
      app = await startApp(db);
    }, 60_000);
    afterAll(async () => {
      if (app) await stop(app);
      await db?.drop();
    });

    /** An order of the host and its payment, paid at the sandbox: its first webhook fails (FailsOnce). */
    async function paidOrder(orderId: string) {
      await db.query(`INSERT INTO orders (id) VALUES (${db.p(1)})`, [orderId]);
      const pay = await fetch(`${app.url}/pay/${orderId}`, { method: 'POST' });
      expect(pay.status).toBe(201);
      const { paymentId } = (await pay.json()) as { paymentId: string };
      const first = await sandbox.completePayment(paymentId, { requireDelivery: false });
      expect(first.lastStatus).toBe(500);
      await app.printed(`failed after writing through txHost.tx (${orderId})`);
      expect(await stateOf(db, orderId, paymentId)).toEqual({ status: 'pending', events: [], paidRuns: 0, inbox: [] });
      const redeliver = async () =>
        (
          await fetch(sandbox.getPayment(paymentId)!.webhook!, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ payment_id: paymentId }),
          })
        ).status;
      const done = {
        status: 'paid',
        events: ['paid'],
        paidRuns: 1,
        inbox: [{ event: 'payment.confirmed', order_id: orderId }],
      };
      return { paymentId, redeliver, done };
    }

    it('a handler that throws after writing through txHost.tx leaves nothing; the redelivery writes once; a third finds the inbox row', async () => {
      const orderId = `ord_cls_${dialect}_1`;
      const { paymentId, redeliver, done } = await paidOrder(orderId);
      expect(await redeliver()).toBe(200);
      expect(await stateOf(db, orderId, paymentId)).toEqual(done);
      expect(await redeliver()).toBe(200);
      expect(await stateOf(db, orderId, paymentId)).toEqual(done);
    });

    it('settled from inside a transaction of the host that then rolls back: the outcome’s transaction is its own, committed', async () => {
      const orderId = `ord_cls_${dialect}_2`;
      const { paymentId, redeliver, done } = await paidOrder(orderId);
      const reconciled = await fetch(`${app.url}/reconcile-in-host-transaction/${paymentId}`, { method: 'POST' });
      expect(await reconciled.json()).toEqual({ outcome: 'confirmed' });
      expect(await stateOf(db, orderId, paymentId)).toEqual(done);
      expect(await redeliver()).toBe(200);
      expect(await stateOf(db, orderId, paymentId)).toEqual(done);
    });
  });
}

describe('PaymentsModule with @nestjs-cls/transactional (transactionHostInbox)', () => {
  const inbox = () =>
    transactionHostInbox({ transactionHost: 'NoTransactionHost', dialect: 'postgres', query: async () => [] });

  it('without the TransactionHost in the app, start-up fails naming it', async () => {
    const app = Test.createTestingModule({
      imports: [PaymentsModule.forRoot({ ...sandbox.options(), inbox: inbox() })],
    });
    await expect(app.compile()).rejects.toThrow(
      'transactionHostInbox(): no TransactionHost of @nestjs-cls/transactional is provided as NoTransactionHost',
    );
  });

  it('outside PaymentsModule it refuses every transaction, saying where it belongs', async () => {
    await expect(inbox().transaction(async () => 'ran')).rejects.toThrow(
      'transactionHostInbox() is an inbox of PaymentsModule',
    );
  });

  hostCases('postgres', pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`);
  hostCases('mysql', mariaUp, `MariaDB not reachable at ${MARIADB_URL}`);
});
