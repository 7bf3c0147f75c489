// Generates the Prisma clients of the inbox's Prisma recipe (test/inbox/recipes/inbox-prisma.ts) from
// test/inbox/prisma/*.prisma into test/inbox/generated/ (gitignored): one client per provider, as
// Prisma builds them. `npm test` runs it before the type check; the recipes' test runs it too. A
// client whose schema has not changed since it was generated is kept.
// Only `prisma generate`: the schema engine (a download) is never needed, the tests create their
// tables with SQL.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const schemas = join(root, 'test/inbox/prisma');

/** Generates each client whose schema changed; returns the names of the schemas generated. */
export function generatePrismaRecipes() {
  const generated = [];
  for (const file of readdirSync(schemas).filter((name) => name.endsWith('.prisma'))) {
    const schema = join(schemas, file);
    const text = readFileSync(schema, 'utf8');
    const output = join(schemas, /output\s*=\s*"([^"]+)"/.exec(text)[1]);
    const stamp = join(output, '.schema.prisma');
    if (existsSync(join(output, 'client.ts')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === text) continue;
    try {
      execFileSync(join(root, 'node_modules/.bin/prisma'), ['generate', '--schema', schema], {
        cwd: root,
        stdio: 'pipe',
        env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false', PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      });
    } catch (error) {
      throw new Error(`prisma generate --schema ${file} failed:\n${error.stderr ?? ''}${error.stdout ?? ''}`, {
        cause: error,
      });
    }
    writeFileSync(stamp, text);
    generated.push(file);
  }
  return generated;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const generated = generatePrismaRecipes();
  console.log(
    `prisma: ${generated.length ? `generated ${generated.join(', ')}` : 'clients up to date'} (test/inbox/generated/)`,
  );
}
