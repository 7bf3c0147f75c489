// Turns a copy of a project made by `nest new` (test/compat/apps/nest11-cli or nest12-cli, reused
// rather than generated on every run: the generator's install alone would cost minutes) into the
// guides project of test/compat/guides:
//   node prepare.mjs <repo> <project> <nest major>
// - package.json: the peers the guides use (@nestjs/config, @nestjs/terminus, ioredis, pg) for that
//   Nest major, a `build` (the project's own tsc and tsconfig.build.json) and a `check` (driver.mjs);
//   the testing recipes of the template are dropped (its apps run those);
// - src/guides/<doc>-<export>.ts: each snippet the guides project runs, extracted from the markdown
//   now and written exactly as printed (scripts/readme-snippets.mjs reads the blocks);
// - src/app.module.ts and src/main.ts: the harness's own (a shop route and a counting handler);
// - driver.mjs: starts the sandbox and the instances and pays (see its header).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const [root, project, major] = process.argv.slice(2);
if (!root || !project || !['11', '12'].includes(major ?? '')) {
  console.error('usage: node prepare.mjs <repo> <project> <11|12>');
  process.exit(1);
}

/** The snippets pasted, by guide: the exported names that identify each block. */
export const PASTED = {
  'docs/configuration.md': ['OutletModule'],
  'docs/stores.md': ['RedisPaymentsModule', 'PostgresPaymentsModule'],
  'docs/operations.md': ['HealthModule'],
  'docs/exactly-once.md': ['transactionalStore'],
};

const { docSnippets } = await import(pathToFileURL(path.join(root, 'scripts/readme-snippets.mjs')).href);
mkdirSync(path.join(project, 'src/guides'), { recursive: true });
for (const [doc, names] of Object.entries(PASTED)) {
  const blocks = docSnippets('x', readFileSync(path.join(root, doc), 'utf8')).map(([, text]) => text);
  for (const name of names) {
    const found = blocks.filter((text) => new RegExp(`^export (?:class|function|const) ${name}\\b`, 'm').test(text));
    if (found.length !== 1) throw new Error(`${doc}: expected one block exporting ${name}, found ${found.length}`);
    const file = `src/guides/${path.basename(doc, '.md')}-${name}.ts`;
    writeFileSync(path.join(project, file), found[0]);
    console.log(`guides: ${doc} ${name} -> ${file}`);
  }
}

for (const file of ['app.module.ts', 'exactly-once.module.ts', 'main.ts'])
  copyFileSync(path.join(HERE, 'src', file), path.join(project, 'src', file));
copyFileSync(path.join(HERE, 'driver.mjs'), path.join(project, 'driver.mjs'));
rmSync(path.join(project, 'test'), { recursive: true, force: true });
rmSync(path.join(project, 'src/app.controller.spec.ts'), { force: true });

const pkg = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8'));
const nest =
  major === '11'
    ? { config: '^4.0.0', terminus: '^11.0.0', ioredis: '^5.0.0' }
    : { config: '^12.0.0', terminus: '^12.0.0', ioredis: '^6.0.0' };
pkg.name = `guides-nest${major}`;
pkg.description = `The guides, pasted into a project made by nest new ${major} (test/compat/guides).`;
delete pkg.compat;
pkg.scripts = { build: 'tsc -p tsconfig.build.json', check: 'node driver.mjs' };
Object.assign(pkg.dependencies, {
  '@nestjs/config': nest.config,
  '@nestjs/terminus': nest.terminus,
  ioredis: nest.ioredis,
  pg: '^8.0.0',
});
Object.assign(pkg.devDependencies, { '@types/pg': '^8.0.0' });
writeFileSync(path.join(project, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
