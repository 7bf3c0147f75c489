// Turns the install of test/compat/apps/nest11-inbox (a copy outside the repo) into the Nest 11 app
// of docs/exactly-once.md's inbox recipes:
//   node prepare.mjs <repo> <project>
// - src/recipes/: the recipes' files and the guide's Nest wiring (inbox-nest.ts), as test/inbox/recipes/
//   keeps them (the guide's blocks word for word: test/inbox/recipes.e2e-spec.ts checks it); the
//   Express wiring stays out (no Express app here);
// - src/support/: the plain files of test/inbox/support/ the runs are made of (the host databases,
//   the recipes' set-ups, the runs and their checks, the Nest front end): the repository's Nest 12
//   suite runs the same files;
// - src/prisma/: the Prisma recipe's schemas (the app's build generates the clients into src/generated/);
// - package.json: each dependency whose version is "lock" gets the version the root
//   package-lock.json installs, so the npm cache the root install filled serves the same packages.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [root, project] = process.argv.slice(2);
if (!root || !project) {
  console.error('usage: node prepare.mjs <repo> <project>');
  process.exit(1);
}

/** test/inbox/support's files the app runs: plain code importing the package by name. */
export const SUPPORT = [
  'served-dialect.ts',
  'host-handle.ts',
  'host-database.ts',
  'recipe-cases.ts',
  'kysely-handle.ts',
  'drizzle-handles.ts',
  'recipe-run.ts',
  'nest-front-end.ts',
];

const inbox = path.join(root, 'test/inbox');
const copies = [
  ...readdirSync(path.join(inbox, 'recipes'))
    .filter((name) => name.endsWith('.ts') && name !== 'inbox-express.ts')
    .map((name) => `recipes/${name}`),
  ...SUPPORT.map((name) => `support/${name}`),
  ...readdirSync(path.join(inbox, 'prisma')).map((name) => `prisma/${name}`),
];
for (const file of copies) {
  mkdirSync(path.join(project, 'src', path.dirname(file)), { recursive: true });
  copyFileSync(path.join(inbox, file), path.join(project, 'src', file));
}
console.log(`inbox: ${copies.length} files of test/inbox copied into src/ (${copies.join(', ')})`);

const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages;
const pkgFile = path.join(project, 'package.json');
const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
const pinned = [];
for (const field of ['dependencies', 'devDependencies'])
  for (const [name, version] of Object.entries(pkg[field] ?? {})) {
    if (version !== 'lock') continue;
    const locked = lock[`node_modules/${name}`]?.version;
    if (!locked) throw new Error(`${name}: not in the root package-lock.json`);
    pkg[field][name] = locked;
    pinned.push(`${name}@${locked}`);
  }
writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
console.log(`inbox: pinned to the root lock: ${pinned.join(', ')}`);
