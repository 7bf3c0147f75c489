import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { PoolConnection } from 'mysql2/promise';
import type { PaymentConfirmedEvent } from '../../lib/index.js';
import { MemoryPaymentsStore, type OutcomeFinish, type PaymentsInbox } from '../../lib/store/index.js';
import { createPaymentsClient, createWebhookRouter } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
// @ts-expect-error a plain .mjs script without types: the docs' blocks are read as the extractor reads them
import { docSnippets } from '../../scripts/readme-snippets.mjs';
import { quietLogger, tokenOf } from '../support/outcome-kit.js';
import {
  describeWithService,
  MARIADB_URL,
  mariadbAvailable,
  POSTGRES_URL,
  postgresAvailable,
} from '../support/services.js';
// @ts-expect-error a plain .mjs script without types
import { generatePrismaRecipes } from '../../scripts/prisma-recipes.mjs';
import { hostDb, orderState, type HostDb, type ServedDialect } from './support/hosts.js';
import { RECIPE_CASES, type Recipe } from './support/recipe-cases.js';
import { markPaidWithMysql2, mysqlInbox } from './recipes/inbox-mysql2.js';
import { markPaidWithPg, pgInbox } from './recipes/inbox-pg.js';

// The inbox recipes of docs/exactly-once.md, run: each file in recipes/ is a block of the guide,
// word for word (checked first), and each is run against the sandbox on a real host database
// (PostgreSQL, MariaDB: every recipe on each database its ORM or driver speaks) with the plugin's
// state in a memory store: a first attempt that fails after the recipe wrote leaves nothing; the
// next writes once; a done marker the store lost after the host's commit runs no handler again.
// Then the set-ups the inbox refuses.

// The Prisma recipe's clients (one per provider) are generated first: the recipe imports one.
(generatePrismaRecipes as () => string[])();

const RECIPES = path.join(import.meta.dirname, 'recipes');
const GUIDE = path.join(import.meta.dirname, '../../docs/exactly-once.md');
const SECRET = 'whsec_inbox_recipes_0123456789abcdef';

const pgUp = await postgresAvailable();
const mariaUp = await mariadbAvailable();
let sandbox: PaymentsSandbox;
let counter = 0;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  await sandbox?.close();
});

/** A memory store that loses the first done marker it is asked for: the crash after the host's commit. */
class LosesFirstDone extends MemoryPaymentsStore {
  lost = 0;
  override async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    if (finish.claim === 'done' && this.lost++ === 0) {
      await this.release(finish.eventKey, finish.owner);
      throw new Error('the process died before the done marker');
    }
    return super.finishOutcome(finish);
  }
}

/**
 * Pays an order and delivers its webhook `deliveries` times to a client with `inbox`, whose
 * handler runs `recipe` then `after(call)`; the answers, the order after each delivery and the calls.
 */
async function exercise(
  db: HostDb,
  inbox: PaymentsInbox,
  recipe: Recipe,
  options: {
    after?: (call: number, event: PaymentConfirmedEvent) => Promise<void>;
    store?: MemoryPaymentsStore;
    deliveries?: number;
    between?: (delivery: number) => Promise<void>;
  } = {},
) {
  const orderId = `ord_inbox_${++counter}`;
  await db.query(`INSERT INTO orders (id) VALUES (${db.p(1)})`, [orderId]);
  const logs: string[] = [];
  const client = createPaymentsClient({
    ...sandbox.options(),
    maxRetries: 0,
    webhook: { publicUrl: 'http://127.0.0.1:9/hook', secret: SECRET },
    reconciliation: { enabled: false },
    logger: quietLogger(logs),
    store: options.store ?? new MemoryPaymentsStore(),
    inbox,
  });
  let calls = 0;
  createWebhookRouter({
    client,
    onPaymentConfirmed: async (event) => {
      calls++;
      await recipe(event);
      await options.after?.(calls, event);
    },
  });
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
    for (let i = 0; i < (options.deliveries ?? 3); i++) {
      await options.between?.(i);
      answers.push((await client.webhooks.handle(delivery)).status);
      states.push(await orderState(db, orderId));
    }
    const inboxRows = await db
      .query(`SELECT payment_id, event, order_id FROM payments_inbox WHERE payment_id = ${db.p(1)}`, [paymentId])
      .catch(() => []);
    return { answers, states, calls, logs, paymentId, orderId, inboxRows };
  } finally {
    await client.close();
  }
}

const PAID = { status: 'paid', events: ['paid'] };
const PENDING = { status: 'pending', events: [] };

const failFirst = async (call: number) => {
  if (call === 1) throw new Error('failed after the recipe wrote');
};

it('every inbox recipe file is a block of docs/exactly-once.md, word for word', () => {
  const blocks = new Map(docSnippets('exactly-once', readFileSync(GUIDE, 'utf8')) as Array<[string, string]>);
  const files = readdirSync(RECIPES).sort();
  expect(files).toEqual(RECIPE_FILES);
  for (const file of files) expect(blocks.get(file)).toBe(readFileSync(path.join(RECIPES, file), 'utf8'));
});

it("the Prisma recipe's schema is the guide's, and the MariaDB client's differs only by its provider and output", () => {
  const guide = readFileSync(GUIDE, 'utf8');
  const schema = (name: string) => readFileSync(path.join(import.meta.dirname, 'prisma', name), 'utf8');
  expect([...guide.matchAll(/^```prisma\n([\s\S]*?)^```$/gm)].map((m) => m[1])).toEqual([schema('postgres.prisma')]);
  expect(schema('mysql.prisma')).toBe(
    schema('postgres.prisma')
      .replace('"../generated/prisma"', '"../generated/prisma-mysql"')
      .replace('provider = "postgresql"', 'provider = "mysql"'),
  );
});

const RECIPE_FILES = RECIPE_CASES.map((r) => r.file).sort();

/** The recipes' behaviour on one host database. */
function recipeCases(
  name: string,
  setup: (db: HostDb) => Promise<{ inbox: PaymentsInbox; recipe: Recipe }>,
  db: () => HostDb,
) {
  it(`${name}: a failed attempt leaves no write (nor inbox row); the next writes once`, async () => {
    const { inbox, recipe } = await setup(db());
    const run = await exercise(db(), inbox, recipe, { after: failFirst });
    expect({ answers: run.answers, states: run.states, calls: run.calls }).toEqual({
      answers: [500, 200, 200],
      states: [PENDING, PAID, PAID],
      calls: 2,
    });
    expect(run.inboxRows).toEqual([{ payment_id: run.paymentId, event: 'payment.confirmed', order_id: run.orderId }]);
  });

  it(`${name}: the store lost its done marker after the host's commit: the next attempt runs no handler and finishes the bookkeeping`, async () => {
    const { inbox, recipe } = await setup(db());
    const store = new LosesFirstDone();
    const run = await exercise(db(), inbox, recipe, { store });
    expect({ answers: run.answers, states: run.states, calls: run.calls, lost: store.lost }).toEqual({
      answers: [200, 200, 200],
      states: [PAID, PAID, PAID],
      calls: 1,
      // The first finish lost; the second attempt's finish marked it done; the third found it done.
      lost: 2,
    });
  });
}

/** Per host database: the plain driver's inbox and handler, and how a handler commits behind the inbox's back. */
const HOSTS = {
  postgres: {
    label: 'PostgreSQL',
    up: pgUp,
    reason: `PostgreSQL not reachable at ${POSTGRES_URL}`,
    plain: (db: HostDb) => ({ inbox: pgInbox(db.pgPool!), recipe: markPaidWithPg }),
    commit: (client: unknown) => (client as PoolClient).query('COMMIT'),
  },
  mysql: {
    label: 'MariaDB',
    up: mariaUp,
    reason: `MariaDB not reachable at ${MARIADB_URL}`,
    plain: (db: HostDb) => ({ inbox: mysqlInbox(db.mysqlPool!), recipe: markPaidWithMysql2 }),
    commit: (client: unknown) => (client as PoolConnection).commit(),
  },
} as const;

const DIALECTS: readonly ServedDialect[] = ['postgres', 'mysql'];

describe.each(DIALECTS)('host database %s', (dialect) => {
  const host = HOSTS[dialect];
  describeWithService(host.up, host.reason)(host.label, () => {
    let db: HostDb;
    beforeAll(async () => {
      db = await hostDb(dialect);
    });
    afterAll(async () => {
      await db?.drop();
    });

    for (const recipe of RECIPE_CASES.filter((r) => r.dialects.includes(dialect)))
      recipeCases(
        recipe.name,
        (host) => recipe.setup(host),
        () => db,
      );

    it('a handler that commits the host’s transaction is refused: the attempt fails, nothing is marked done over it', async () => {
      const { inbox, recipe } = host.plain(db);
      const run = await exercise(db, inbox, recipe, {
        after: async (call, event) => {
          if (call === 1) await host.commit(event.transaction!.client);
        },
        deliveries: 2,
      });
      expect(run.logs.join('\n')).toContain('committed or ended the host');
      // What it committed on its own stays committed, the inbox row with it: the next attempt runs nothing.
      expect({ answers: run.answers, states: run.states, calls: run.calls }).toEqual({
        answers: [500, 200],
        states: [PAID, PAID],
        calls: 1,
      });
    });
  });
});

describe.each(DIALECTS)('inbox table missing (%s)', (dialect) => {
  const host = HOSTS[dialect];
  describeWithService(host.up, host.reason)('', () => {
    let db: HostDb;
    beforeAll(async () => {
      db = await hostDb(dialect, false);
    });
    afterAll(async () => {
      await db?.drop();
    });

    it('the attempt fails with an error naming `nestjs-payments inbox-ddl`, runs no handler, and the payment settles once the table is there', async () => {
      const { inbox, recipe } = host.plain(db);
      const run = await exercise(db, inbox, recipe, {
        deliveries: 2,
        between: async (delivery) => {
          if (delivery === 1) await db.createInbox();
        },
      });
      expect(run.logs.join('\n')).toContain(
        `the inbox table payments_inbox is missing in the host's database (the database of its transaction): create it with the DDL printed by \`npx nestjs-payments inbox-ddl --dialect ${dialect}\``,
      );
      expect({ answers: run.answers, states: run.states, calls: run.calls }).toEqual({
        answers: [500, 200],
        states: [PENDING, PAID],
        calls: 1,
      });
    });
  });
});
