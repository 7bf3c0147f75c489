// Compatibility app: docs/exactly-once.md's inbox recipes in a Nest 11 CommonJS app. run.sh copies
// the recipes' files and the guide's Nest wiring into src/recipes/, and the runs' plain files of
// test/inbox/support/ into src/support/ (test/compat/inbox/prepare.mjs); the build generates the
// Prisma clients with this app's own prisma CLI. Each recipe runs on each database its ORM or driver
// speaks (a schema or database of its own on POSTGRES_URL and MARIADB_URL), in a Nest 11 app made
// of the guide's InboxPaymentsModule, the sandbox's webhook reaching it over HTTP: the checks the
// repository's Express and Nest 12 suites make (support/recipe-run.ts). Prints
// `nest11-inbox: ok (...)` and exits 0, or prints each failure and exits 1. Without a database it
// prints one line saying so and passes, except under CI (CI set), where it fails.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { openHostDb, type HostDb } from './support/host-database.js';
import { nestFrontEnd } from './support/nest-front-end.js';
import { RECIPE_CASES } from './support/recipe-cases.js';
import { RECIPE_CHECKS } from './support/recipe-run.js';
import type { ServedDialect } from './support/served-dialect.js';

const NAME = 'nest11-inbox';
const SERVERS: Record<ServedDialect, { label: string; url: string }> = {
  postgres: { label: 'PostgreSQL', url: process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
  mysql: { label: 'MariaDB', url: process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test' },
};

function reachable(url: string, port: number): Promise<boolean> {
  const { hostname } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname || '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The version of `name`, which must resolve from this app's own install (the packed package, the ORMs it pinned). */
function installed(name: string): string {
  const own = path.join(__dirname, '..', 'node_modules');
  const file = require.resolve(name);
  assert.ok(file.startsWith(own + path.sep), `${name} resolved outside this app: ${file}`);
  return (JSON.parse(readFileSync(path.join(own, name, 'package.json'), 'utf8')) as { version: string }).version;
}

async function main(): Promise<number> {
  const nest = installed('@nestjs/core');
  assert.match(nest, /^11\./, `expected @nestjs/core 11, got ${nest}`);
  assert.equal(typeof module, 'object', 'not running as CommonJS');
  for (const name of [
    'nestjs-payments',
    'typeorm',
    '@prisma/client',
    'knex',
    'kysely',
    'drizzle-orm',
    '@mikro-orm/core',
  ])
    installed(name);

  const missing: string[] = [];
  for (const [dialect, server] of Object.entries(SERVERS))
    if (!(await reachable(server.url, Number(new URL(server.url).port || (dialect === 'postgres' ? 5432 : 3306)))))
      missing.push(`${server.label} not reachable at ${server.url}`);
  if (missing.length > 0) {
    if (process.env.CI) throw new Error(missing.join('; '));
    console.log(`${NAME}: ok (skipped: ${missing.join('; ')})`);
    return 0;
  }

  const sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
  const failures: string[] = [];
  let runs = 0;
  try {
    for (const dialect of Object.keys(SERVERS) as ServedDialect[]) {
      const db: HostDb = await openHostDb(dialect, SERVERS[dialect].url);
      try {
        for (const recipe of RECIPE_CASES.filter((r) => r.dialects.includes(dialect)))
          for (const check of RECIPE_CHECKS) {
            const label = `${recipe.name} on ${SERVERS[dialect].label}: ${check.name}`;
            runs++;
            try {
              const { observed, expected } = await check.run(nestFrontEnd, sandbox, db, recipe);
              assert.deepStrictEqual(observed, expected);
            } catch (error) {
              failures.push(`${label}\n${error instanceof Error ? error.message : String(error)}`);
            }
          }
      } finally {
        await db.drop();
      }
    }
  } finally {
    await sandbox.close();
  }
  for (const failure of failures) console.log(`${NAME}: FAIL ${failure}`);
  if (failures.length > 0) return 1;
  const recipes = RECIPE_CASES.length;
  console.log(
    `${NAME}: ok (${recipes} recipes, ${runs} runs on PostgreSQL and MariaDB, webhook over HTTP) [@nestjs/core ${nest}, ` +
      `typeorm ${installed('typeorm')}, prisma ${installed('@prisma/client')}, knex ${installed('knex')}, ` +
      `kysely ${installed('kysely')}, drizzle-orm ${installed('drizzle-orm')}, mikro-orm ${installed('@mikro-orm/core')}]`,
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.log(`${NAME}: FAIL ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
