import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { describeWithService } from '../support/services.js';
// @ts-expect-error a plain .mjs script without types
import { generatePrismaRecipes } from '../../scripts/prisma-recipes.mjs';
import { hostDb, hostServers, type HostDb } from './support/hosts.js';
import { nestFrontEnd } from './support/nest-front-end.js';
import { RECIPE_CASES } from './support/recipe-cases.js';
import { RECIPE_CHECKS } from './support/recipe-run.js';

// The inbox recipes of docs/exactly-once.md in a Nest 12 app wired as the guide shows
// (`InboxPaymentsModule`, recipes/inbox-nest.ts, word for word: recipes.e2e-spec.ts checks the
// blocks): every recipe on each database its ORM or driver speaks, the sandbox's webhook reaching
// the app over HTTP, the same checks as the Express app's (support/recipe-run.ts). The Nest 11
// compatibility app (test/compat/apps/nest11-inbox) runs them in a Nest 11 app.

// The Prisma recipe's clients (one per provider) are generated first: the recipe imports one.
(generatePrismaRecipes as () => string[])();

let sandbox: PaymentsSandbox;

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  await sandbox?.close();
});

const HOSTS = await hostServers();

describe.each(['postgres', 'mysql'] as const)('Nest 12 app, host database %s', (dialect) => {
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
          const { observed, expected } = await check.run(nestFrontEnd, sandbox, db, recipe);
          expect(observed).toEqual(expected);
        });
  });
});
