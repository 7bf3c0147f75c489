import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { bundleFixture } from '../support/bundle.js';
import { POSTGRES_URL, REDIS_URL, itWithService, postgresAvailable, redisAvailable } from '../support/services.js';

// Issue 39 item 3: abandoned checkouts returned to many times, by a fleet. Measured from outside,
// 20 abandoned checkouts cost 149 verify calls (each return of an unpaid customer started the
// pending lane's ten checks). Here real processes on one Redis and on one PostgreSQL store: 24
// payments nobody pays, their customers back on the return page 3 times each from each of three
// instances started 3.5 s apart (their reconciliation running), one instance killed mid-way and
// started again: at most 3 verify calls per payment over its session (docs/confirmations.md).

jest.setTimeout(240_000);
const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-unpaid-fleet', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/unpaid.mjs');
const RUN = `unpaid_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
const COUNT = 24;

beforeAll(() => {
  mkdirSync(OUT_DIR, { recursive: true });
  bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE);
}, 60_000);

afterAll(async () => {
  if (redisUp) {
    const admin = new Redis(REDIS_URL);
    const keys = await admin.keys(`${RUN}:*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  }
  if (postgresUp) {
    const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    await admin.query(`DROP SCHEMA IF EXISTS "${RUN}" CASCADE`).finally(() => admin.end());
  }
  rmSync(OUT_DIR, { recursive: true, force: true });
});

/** One instance, as a process of its own. */
function instance(env: Record<string, string>): { child: ChildProcess; done: Promise<string> } {
  const child = spawn(process.execPath, [FIXTURE], {
    env: { ...process.env, ...env, BUNDLE },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const done = new Promise<string>((resolve, reject) =>
    child.once('exit', (code, signal) =>
      code === 0 || signal === 'SIGKILL' ? resolve(output) : reject(new Error(`instance exited ${code}: ${output}`)),
    ),
  );
  return { child, done };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function abandoned(store: 'redis' | 'postgres', env: Record<string, string>): Promise<void> {
  const sandbox = await PaymentsSandbox.start();
  try {
    const base = { ...env, STORE: store, SANDBOX_OPTIONS: JSON.stringify(sandbox.options()) };
    const generated = await instance({ ...base, ROLE: 'generate', COUNT: String(COUNT) }).done;
    const ids = JSON.parse(/IDS (.*)/.exec(generated)?.[1] ?? '[]') as string[];
    expect(ids).toHaveLength(COUNT);
    const returning = { ...base, ROLE: 'return', IDS: JSON.stringify(ids), ROUNDS: '3', GAP_MS: '10500' };
    const runs: Array<Promise<string>> = [];
    for (let i = 0; i < 3; i++) {
      if (i > 0) await sleep(3_500);
      const one = instance({ ...returning, LINGER_MS: String(30_000 - i * 3_500) });
      runs.push(one.done);
      if (i === 1) {
        // Killed in the middle of its returns and lanes, then started again (its returns again).
        void sleep(6_000).then(async () => {
          one.child.kill('SIGKILL');
          await sleep(1_000);
          runs.push(instance({ ...returning, ROUNDS: '2', LINGER_MS: '25000' }).done);
        });
      }
    }
    await Promise.all(runs);
    await sleep(8_000);
    await Promise.all(runs);
    const calls = ids.map((id) => sandbox.verifyCalls(id));
    const total = calls.reduce((a, b) => a + b, 0);
    process.stdout.write(
      `\n${store}: ${COUNT} abandoned checkouts, 11 returns each on 4 processes (one killed): ${total} verify calls (${(total / COUNT).toFixed(2)} each, max ${Math.max(...calls)})\n`,
    );
    for (const c of calls) expect(c).toBeLessThanOrEqual(3);
  } finally {
    await sandbox.close();
  }
}

describe('abandoned checkouts returned to by a fleet: at most 3 verify calls each', () => {
  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis', () =>
    abandoned('redis', { STORE_URL: REDIS_URL, KEY_PREFIX: `${RUN}:` }),
  );
  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL', () =>
    abandoned('postgres', { STORE_URL: POSTGRES_URL, PG_SCHEMA: RUN }),
  );
});
