#!/usr/bin/env node
// The inbox crash matrix, measured: test/inbox/crash.e2e-spec.ts with INBOX_CRASH_RUNS killed
// lives per combination (recipe × host database × plugin store; default 200), then a Markdown
// table of what each counted. Needs Redis, PostgreSQL and MariaDB (test/support/services.ts).
//
//   node scripts/inbox-crash-matrix.mjs [--runs 200] [--out file.jsonl] [--only substring]
//   node scripts/inbox-crash-matrix.mjs --table file.jsonl     (the table of an earlier run)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};

function table(file) {
  const rows = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const lines = [
    '| ORM or driver × database × plugin store | runs (killed lives) | awaits killed at | orders | effect rows per order (max) | inbox rows per payment (max) | duplicates | losses |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.combination} | ${r.kills} | ${r.awaits} | ${r.orders} | ${r.maxEventsPerOrder} | ${r.maxInboxRowsPerPayment} | ${r.duplicates} | ${r.losses} |`,
    ),
  ];
  return lines.join('\n');
}

const tableOnly = flag('table');
if (tableOnly) {
  process.stdout.write(`${table(tableOnly)}\n`);
} else {
  const out = path.resolve(flag('out', path.join(ROOT, 'inbox-crash-matrix.jsonl')));
  if (existsSync(out)) rmSync(out);
  const run = spawnSync(
    process.execPath,
    [
      '--experimental-vm-modules',
      path.join(ROOT, 'node_modules/jest/bin/jest.js'),
      '--maxWorkers=1',
      'test/inbox/crash.e2e-spec.ts',
    ],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: {
        ...process.env,
        INBOX_CRASH_RUNS: flag('runs', '200'),
        INBOX_CRASH_REPORT: out,
        INBOX_CRASH_ONLY: flag('only', ''),
      },
    },
  );
  if (existsSync(out)) process.stdout.write(`\n${table(out)}\n`);
  process.exitCode = run.status ?? 1;
}
