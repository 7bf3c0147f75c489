import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { bundleFixture } from '../support/bundle.js';
import { POSTGRES_URL, REDIS_URL, itWithService, postgresAvailable, redisAvailable } from '../support/services.js';

// The verify calls strangers' invented ids cost are the fleet's budget, held in the store: real
// processes (four instances at once, then a fifth started after them, as after a restart) flooding
// their return pages with 2,000 ids in all cost at most 10 verify calls, on Redis and on PostgreSQL.

jest.setTimeout(120_000);
const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-stranger-fleet', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/stranger.mjs');
const RUN = `strangers_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);

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

/** One instance, as a process of its own: asks `count` invented ids, then exits. */
function instance(env: Record<string, string>, prefix: string, count: number): Promise<string> {
  const child = spawn(process.execPath, [FIXTURE], {
    env: { ...process.env, ...env, BUNDLE, PREFIX: prefix, COUNT: String(count) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`instance exited ${code}: ${output}`)),
    ),
  );
}

async function flood(store: 'redis' | 'postgres', env: Record<string, string>): Promise<void> {
  const sandbox = await PaymentsSandbox.start();
  try {
    const options = { ...env, STORE: store, SANDBOX_OPTIONS: JSON.stringify(sandbox.options()) };
    const outputs = await Promise.all([0, 1, 2, 3].map((i) => instance(options, `pay_${store}_fleet_${i}`, 400)));
    outputs.push(await instance(options, `pay_${store}_restarted`, 400));
    expect(outputs.map((o) => o.trim())).toEqual(Array.from({ length: 5 }, () => 'ASKED 400'));
    const verifies = sandbox.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/')).length;
    process.stdout.write(`\n${store}: 2,000 invented ids across 5 processes cost ${verifies} verify calls\n`);
    expect(verifies).toBeLessThanOrEqual(10);
  } finally {
    await sandbox.close();
  }
}

describe('strangers cannot spend the verify budget of a fleet: 4 processes and a restarted fifth, 2,000 invented ids', () => {
  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis: at most 10 verify calls', () =>
    flood('redis', { STORE_URL: REDIS_URL, KEY_PREFIX: `${RUN}:` }),
  );
  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL: at most 10 verify calls', () =>
    flood('postgres', { STORE_URL: POSTGRES_URL, PG_SCHEMA: RUN }),
  );
});
