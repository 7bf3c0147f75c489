// A store variable set while its client package (ioredis, pg) is not installed: doctor and
// outcomes say so in one line naming the package, never "does not answer" or a require stack.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMissingPackage } from '../../lib/cli/cli.config.js';
import { buildCli, runCliProcess, type BuiltCli } from './cli.helpers.js';

/** The CLI in a project whose node_modules has everything of the repo's but ioredis and pg. */
async function cliWithoutStoreClients(): Promise<BuiltCli> {
  const cli = await buildCli();
  const root = path.dirname(path.dirname(cli.main));
  const modules = path.join(root, 'node_modules');
  await rm(modules);
  await mkdir(modules);
  const repo = path.resolve('node_modules');
  for (const name of await readdir(repo)) {
    if (name === 'ioredis' || name === 'pg') continue;
    await symlink(path.join(repo, name), path.join(modules, name), 'dir');
  }
  return cli;
}

describe('a missing store client', () => {
  let cli: BuiltCli;
  const env = {
    PAYMENTS_REDIS_URL: 'redis://127.0.0.1:6379',
    PAYMENTS_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test',
  };

  beforeAll(async () => {
    cli = await cliWithoutStoreClients();
  });
  afterAll(async () => {
    await cli?.remove();
  });

  it('outcomes: one line naming the variable and the package to install', async () => {
    const redis = await runCliProcess(cli, ['outcomes'], { PAYMENTS_REDIS_URL: env.PAYMENTS_REDIS_URL });
    expect([redis.code, redis.stdout, redis.stderr]).toEqual([
      1,
      '',
      'nestjs-payments: PAYMENTS_REDIS_URL needs the package ioredis, which is not installed here: npm install ioredis\n',
    ]);
    const pg = await runCliProcess(cli, ['outcomes'], { PAYMENTS_DATABASE_URL: env.PAYMENTS_DATABASE_URL });
    expect(pg.stderr).toBe(
      'nestjs-payments: PAYMENTS_DATABASE_URL needs the package pg, which is not installed here: npm install pg\n',
    );
  });

  it('doctor: the store is "not checked: <package> is not installed", not "does not answer"', async () => {
    const run = await runCliProcess(cli, ['doctor'], env);
    const stores = run.stdout.split('\n').filter((l) => l.includes(' store: ') || l.includes('fix: npm install'));
    expect(stores).toEqual([
      '✖ store: Redis not checked: ioredis is not installed (PAYMENTS_REDIS_URL names a Redis store)',
      '    fix: npm install ioredis',
      '✖ store: PostgreSQL not checked: pg is not installed (PAYMENTS_DATABASE_URL names a PostgreSQL store)',
      '    fix: npm install pg',
    ]);
    expect(run.stdout).not.toContain('does not answer');
  });
});

describe('isMissingPackage: the loader says the package itself is missing', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'missing-package-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * The error Node's own loader throws for `name` from a folder with no node_modules (in a child
   * process: Jest has a loader of its own), rebuilt with its code and message.
   */
  function loadError(system: 'require' | 'import', name: string): unknown {
    const script =
      system === 'require'
        ? `try { require(${JSON.stringify(name)}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`
        : `import(${JSON.stringify(name)}).catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
    const out = execFileSync(
      process.execPath,
      [system === 'require' ? '-e' : '--input-type=module', ...(system === 'import' ? ['-e'] : []), script],
      {
        cwd: dir,
      },
    );
    const { code, message } = JSON.parse(out.toString()) as { code: string; message: string };
    return Object.assign(new Error(message), { code });
  }

  it.each([
    ['require', 'ioredis', 'ioredis', true], // CommonJS: "Cannot find module 'ioredis'\nRequire stack: ..."
    ['import', 'pg', 'pg', true], // ES modules: "Cannot find package 'pg' imported from ..."
    ['require', 'ioredis/built/missing', 'ioredis', false], // a file inside the package
    ['require', 'cluster-key-slot-x', 'ioredis', false], // another package it needs
    ['import', 'pg-pool-x', 'pg', false],
  ] as const)('%s of %s, asking about %s: %s', (system, name, asked, expected) => {
    expect(isMissingPackage(loadError(system, name), asked)).toBe(expected);
  });

  it('anything but a loader error is not a missing package', () => {
    expect(isMissingPackage(new Error("Cannot find module 'ioredis'"), 'ioredis')).toBe(false);
    expect(isMissingPackage(undefined, 'ioredis')).toBe(false);
  });
});
