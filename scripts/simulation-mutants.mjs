#!/usr/bin/env node
// The simulation proves its own power: each deliberate bug of test/simulation/mutants.json is
// applied to the engine's source in turn, the simulation runs (at most SIM_HISTORIES histories,
// default 2000: what CI runs), and it must fail. Prints a table: bug, histories until caught.
// A bug marked `"stores": true` (in a real store's code: lib/redis, lib/postgres) is run against
// the simulation over the real stores instead (simulation.stores.e2e-spec.ts: Redis and
// PostgreSQL must be up; SIM_STORE_HISTORIES histories per store, default 40).
// The source is restored after each bug, whatever happens (also on Ctrl-C).
// Usage: node scripts/simulation-mutants.mjs [name filter]
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const mutants = JSON.parse(readFileSync(join(root, 'test/simulation/mutants.json'), 'utf8'));
const filter = process.argv[2];
const histories = process.env.SIM_HISTORIES ?? '2000';
const rows = [];
let restore;
process.on('SIGINT', () => {
  restore?.();
  process.exit(130);
});

for (const mutant of mutants.filter((m) => !filter || m.name.includes(filter))) {
  const file = join(root, mutant.file);
  const original = readFileSync(file, 'utf8');
  if (original.split(mutant.find).length !== 2)
    throw new Error(`${mutant.file}: the anchor of "${mutant.name}" is not there exactly once`);
  restore = () => writeFileSync(file, original);
  writeFileSync(file, original.replace(mutant.find, mutant.replace));
  const started = Date.now();
  try {
    const spec = mutant.stores ? 'test/simulation/simulation.stores.e2e-spec.ts' : 'test/simulation/simulation.spec.ts';
    const run = spawnSync(
      process.execPath,
      ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', spec, '--maxWorkers=1'],
      {
        cwd: root,
        // CI set: a real store that is not up fails the run rather than skipping it unseen.
        env: {
          ...process.env,
          SIM_HISTORIES: histories,
          SIM_STOP_AT_FIRST: '1',
          ...(mutant.stores ? { CI: process.env.CI ?? 'true' } : {}),
        },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const out = `${run.stdout}\n${run.stderr}`;
    // A bug the histories miss may still fail a pinned one (a finding replayed on every run).
    const first =
      /first violation at history (\d+)/.exec(out) ??
      /(after \d+ histories: a latency bound)/.exec(out) ??
      /✕ (pinned history \d+)/.exec(out);
    const violation = /\n\s+\+\s+\d+(?:\.\d+)?s: ([^\n"]+)/.exec(out);
    const caught = run.status !== 0;
    rows.push([
      mutant.name,
      caught
        ? first
          ? first[1]
          : `(run failed: ${/Received:.*|Error:.*/.exec(out)?.[0] ?? 'see log'})`
        : `NOT CAUGHT in ${mutant.stores ? `the stores' run` : histories}`,
      violation ? violation[1].slice(0, 90) : '',
      `${Math.round((Date.now() - started) / 1000)} s`,
    ]);
  } finally {
    restore();
    restore = undefined;
  }
  console.log(`| ${rows.at(-1).join(' | ')} |`);
}
console.log(
  `\n| bug | histories until caught | first violation | time |\n|---|---|---|---|\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}`,
);
if (rows.some((r) => r[1].startsWith('NOT CAUGHT'))) process.exit(1);
