import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { PoolConnection } from 'mysql2/promise';
import { PaymentsSandbox } from '../../lib/testing/index.js';
// @ts-expect-error a plain .mjs script without types: the docs' blocks are read as the extractor reads them
import { docSnippets } from '../../scripts/readme-snippets.mjs';
import { describeWithService } from '../support/services.js';
// @ts-expect-error a plain .mjs script without types
import { generatePrismaRecipes } from '../../scripts/prisma-recipes.mjs';
import { hostDb, hostServers, type HostDb, type ServedDialect } from './support/hosts.js';
import { RECIPE_CASES } from './support/recipe-cases.js';
import { PAID, PENDING, RECIPE_CHECKS, runRecipe, type FrontEnd } from './support/recipe-run.js';
import { mountInboxPayments } from './recipes/inbox-express.js';
import { markPaidWithMysql2, mysqlInbox } from './recipes/inbox-mysql2.js';
import { markPaidWithPg, pgInbox } from './recipes/inbox-pg.js';

// The inbox recipes of docs/exactly-once.md, run in an Express app: each file in recipes/ is a
// block of the guide, word for word (checked first), and each recipe is run on a real host
// database (PostgreSQL, MariaDB: every recipe on each database its ORM or driver speaks) in an
// Express app wired by the guide's `mountInboxPayments` (recipes/inbox-express.ts), the sandbox's
// webhook reaching it over HTTP, with the plugin's state in a memory store: a first attempt that
// fails after the recipe wrote leaves nothing; the next writes once; a done marker the store lost
// after the host's commit runs no handler again (support/recipe-run.ts; recipes.nest.e2e-spec.ts
// runs the same in a Nest 12 app, test/compat/apps/nest11-inbox in a Nest 11 one). Then the
// set-ups the inbox refuses.

// The Prisma recipe's clients (one per provider) are generated first: the recipe imports one.
(generatePrismaRecipes as () => string[])();

const RECIPES = path.join(import.meta.dirname, 'recipes');
const GUIDE = path.join(import.meta.dirname, '../../docs/exactly-once.md');

const SERVERS = await hostServers();
let sandbox: PaymentsSandbox;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  await sandbox?.close();
});

/** An Express app wired by the guide's `mountInboxPayments`. */
const expressFrontEnd: FrontEnd = async (inbox, handler, options) => {
  const app = express();
  const client = mountInboxPayments(app, inbox, handler, options);
  return {
    listener: app,
    generatePayment: (input) => client.generatePayment(input),
    close: () => client.close(),
  };
};

/** The blocks of the guide that wire a recipe into an app. */
const WIRING_FILES = ['inbox-express.ts', 'inbox-nest.ts'];

it('every inbox recipe file, and each wiring of one into an app, is a block of docs/exactly-once.md, word for word', () => {
  const blocks = new Map(docSnippets('exactly-once', readFileSync(GUIDE, 'utf8')) as Array<[string, string]>);
  const files = readdirSync(RECIPES).sort();
  expect(files).toEqual([...RECIPE_FILES, ...WIRING_FILES].sort());
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

/** Per host database: the plain driver's inbox and handler, and how a handler commits behind the inbox's back. */
const HOSTS = {
  postgres: {
    ...SERVERS.postgres,
    plain: (db: HostDb) => ({ inbox: pgInbox(db.pgPool!), recipe: markPaidWithPg }),
    commit: (client: unknown) => (client as PoolClient).query('COMMIT'),
  },
  mysql: {
    ...SERVERS.mysql,
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
      for (const check of RECIPE_CHECKS)
        it(`${recipe.name}: ${check.name}`, async () => {
          const { observed, expected } = await check.run(expressFrontEnd, sandbox, db, recipe);
          expect(observed).toEqual(expected);
        });

    it('a handler that commits the host’s transaction is refused: the attempt fails, nothing is marked done over it', async () => {
      const { inbox, recipe } = host.plain(db);
      const run = await runRecipe(expressFrontEnd, sandbox, db, inbox, recipe, {
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
      const run = await runRecipe(expressFrontEnd, sandbox, db, inbox, recipe, {
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
