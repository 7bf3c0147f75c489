import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { PaymentConfirmedEvent } from '../../lib/index.js';
import type { PaymentsStore } from '../../lib/store/index.js';
import { createPaymentsClient, createWebhookRouter } from '../../lib/express/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
// @ts-expect-error a plain .mjs script without types: the docs' blocks are read as the extractor reads them
import { docSnippets } from '../../scripts/readme-snippets.mjs';
import { quietLogger, tokenOf } from '../support/outcome-kit.js';
import { describeWithService, POSTGRES_URL, postgresAvailable } from '../support/services.js';
import { pgSchema } from './support/orders.js';
import { markPaidWithDrizzle } from './recipes/exactly-once-drizzle-node-postgres.js';
import { markPaidInNestedTransaction } from './recipes/exactly-once-drizzle-nested.js';
import { markPaidWithDrizzleOnPglite } from './recipes/exactly-once-drizzle-pglite.js';
import { markPaidWithSql, transactionalStore } from './recipes/exactly-once-pg.js';

// The recipes of docs/exactly-once.md, run: each file in recipes/ is a block of the guide, word
// for word (checked first), and each handler is run against the sandbox on a real database: a
// first attempt that fails after the recipe wrote leaves nothing, the next one writes once.

const RECIPES = path.join(import.meta.dirname, 'recipes');
const GUIDE = path.join(import.meta.dirname, '../../docs/exactly-once.md');
const SECRET = 'whsec_exactly_once_recipes_0123456789abcdef';
const RECIPE_DDL = `
CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
CREATE TABLE IF NOT EXISTS order_events (id serial PRIMARY KEY, order_id text NOT NULL, kind text NOT NULL)`;

const pgUp = await postgresAvailable();
let sandbox: PaymentsSandbox;
let counter = 0;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  await sandbox?.close();
});

type Db = { query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }> };

/**
 * Pays an order and delivers its webhook three times to a client on `store` whose handler is the
 * recipe, failing (after the recipe's writes) on its first call; the order's writes after each.
 */
async function exercise(db: Db, store: PaymentsStore, recipe: (event: PaymentConfirmedEvent) => Promise<void>) {
  const orderId = `ord_recipe_${++counter}`;
  await db.query('INSERT INTO orders (id) VALUES ($1)', [orderId]);
  const client = createPaymentsClient({
    ...sandbox.options(),
    maxRetries: 0,
    webhook: { publicUrl: 'http://127.0.0.1:9/hook', secret: SECRET },
    reconciliation: { enabled: false },
    logger: quietLogger(),
    store,
  });
  let calls = 0;
  createWebhookRouter({
    client,
    onPaymentConfirmed: async (event) => {
      await recipe(event);
      if (++calls === 1) throw new Error('failed after the recipe wrote');
    },
  });
  const state = async () => {
    const order = (await db.query('SELECT status FROM orders WHERE id = $1', [orderId])).rows[0] as { status: string };
    const events = (await db.query('SELECT kind FROM order_events WHERE order_id = $1', [orderId])).rows as Array<{
      kind: string;
    }>;
    return { status: order.status, events: events.map((e) => e.kind) };
  };
  try {
    const { paymentId } = await client.generatePayment({ amount: '9900', developerTrackingId: orderId });
    await sandbox.completePayment(paymentId, { requireDelivery: false });
    const delivery = {
      query: {},
      body: { payment_id: paymentId },
      pathToken: tokenOf(sandbox.getPayment(paymentId)!.webhook!),
    };
    const answers: number[] = [];
    const states: Array<{ status: string; events: string[] }> = [];
    for (let i = 0; i < 3; i++) {
      answers.push((await client.webhooks.handle(delivery)).status);
      states.push(await state());
    }
    return { answers, states, orderId };
  } finally {
    await client.close();
  }
}

const EXPECTED = {
  answers: [500, 200, 200],
  states: [
    { status: 'pending', events: [] },
    { status: 'paid', events: ['paid'] },
    { status: 'paid', events: ['paid'] },
  ],
};

it('every recipe file is a block of docs/exactly-once.md, word for word', () => {
  const blocks = new Map(docSnippets('exactly-once', readFileSync(GUIDE, 'utf8')) as Array<[string, string]>);
  const files = readdirSync(RECIPES).sort();
  expect(files).toEqual([
    'exactly-once-drizzle-nested.ts',
    'exactly-once-drizzle-node-postgres.ts',
    'exactly-once-drizzle-pglite.ts',
    'exactly-once-pg.ts',
  ]);
  for (const file of files) expect(blocks.get(file)).toBe(readFileSync(path.join(RECIPES, file), 'utf8'));
});

describe('Drizzle on PGlite', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create();
    await db.exec(RECIPE_DDL);
  });
  afterAll(async () => {
    await db.close();
  });

  it('a failed attempt leaves no write; the next writes once', async () => {
    const run = await exercise(db, new PostgresPaymentsStore(db, { transactional: true }), markPaidWithDrizzleOnPglite);
    expect({ answers: run.answers, states: run.states }).toEqual(EXPECTED);
  });
});

describeWithService(pgUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('on node-postgres', () => {
  let schema: Awaited<ReturnType<typeof pgSchema>>;
  beforeAll(async () => {
    schema = await pgSchema();
    const pool = schema.pool(1);
    await pool.query('DROP TABLE orders, order_events');
    await pool.query(RECIPE_DDL);
  });
  afterAll(async () => {
    await schema?.drop();
  });

  it('Drizzle: a failed attempt leaves no write; the next writes once', async () => {
    const pool = schema.pool();
    const run = await exercise(pool, new PostgresPaymentsStore(pool, { transactional: true }), markPaidWithDrizzle);
    expect({ answers: run.answers, states: run.states }).toEqual(EXPECTED);
  });

  it('Drizzle’s own transaction in the handler: a savepoint, so a failed attempt leaves no write; the next writes once', async () => {
    const pool = schema.pool();
    const run = await exercise(
      pool,
      new PostgresPaymentsStore(pool, { transactional: true }),
      markPaidInNestedTransaction,
    );
    expect({ answers: run.answers, states: run.states }).toEqual(EXPECTED);
  });

  it('plain pg: a failed attempt leaves no write; the next writes once and sends the receipt after its commit', async () => {
    const pool = schema.pool();
    const receipts: Array<{ orderId: string; status: string }> = [];
    const sendReceipt = async (orderId: string) => {
      // Seen from another connection: the order is committed by then.
      const { rows } = await pool.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [orderId]);
      receipts.push({ orderId, status: rows[0].status });
    };
    const run = await exercise(pool, transactionalStore(pool), markPaidWithSql(sendReceipt));
    expect({ answers: run.answers, states: run.states }).toEqual(EXPECTED);
    expect(receipts).toEqual([{ orderId: run.orderId, status: 'paid' }]);
  });
});
