import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { createPaymentsClient } from '../../lib/express/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { POSTGRES_URL, REDIS_URL, itWithService, postgresAvailable, redisAvailable } from '../support/services.js';
import { bundleFixture } from '../support/bundle.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

// Issue 19 item 7: `kill -9` during the sweep itself. A child process (an app instance) runs a
// reconciliation pass over six paid payments, with verify slowed down; it is SIGKILLed while the
// third payment's verify is in flight (two handled, one claimed, three taken but not started).
// The next sweep, by another instance, finishes the work: each handler ran exactly once overall.

jest.setTimeout(120_000);
const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-sweep-crash', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/sweeper.mjs');
const VERIFY_ALL = '/api/v2/verify_payment/*';
const LEASE_MS = 1500;
const PAYMENTS = 6;
const KILL_AT_VERIFY = 3;
const RUN = `sweepcrash_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;

const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
const children: ChildProcess[] = [];
const figures: string[] = [];

beforeAll(() => {
  mkdirSync(OUT_DIR, { recursive: true });
  bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE);
}, 60_000);

afterAll(async () => {
  // Only the processes this suite started, by their handle.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
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
  if (figures.length > 0) process.stdout.write(`\nkill -9 during the sweep, figures:\n${figures.join('\n')}\n`);
});

interface StoreUnderTest {
  label: string;
  env: Record<string, string>;
  open(): PaymentsStore;
}

async function sweepCrash(target: StoreUnderTest): Promise<void> {
  const sandbox = await PaymentsSandbox.start();
  const journal = path.join(OUT_DIR, `${target.label}.journal`);
  const store = target.open();
  const handled: string[] = [];
  const client = createPaymentsClient({
    ...sandbox.options(),
    maxRetries: 0,
    store,
    webhook: { leaseMs: LEASE_MS },
    reconciliation: { enabled: false },
    logger: quietLogger(),
  });
  client.setHandlers(
    outcomeHandlers(async (name, event) => {
      if (name === 'payment.confirmed') handled.push(event.paymentId);
    }),
  );
  try {
    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const { paymentId } = await client.generatePayment({ amount: String(2000 + i) });
      await sandbox.completePayment(paymentId);
      ids.push(paymentId);
    }
    const verifies = () => sandbox.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/'));
    sandbox.fault(VERIFY_ALL, { delayMs: 400 });
    const now = Date.now() + 24 * 3_600_000;

    const child = spawn(process.execPath, [FIXTURE], {
      env: {
        ...process.env,
        ...target.env,
        BUNDLE,
        JOURNAL: journal,
        SANDBOX_OPTIONS: JSON.stringify(sandbox.options()),
        NOW: String(now),
        LEASE_MS: String(LEASE_MS),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    // Killed as soon as the third verify reaches the service (it is answered 400 ms later).
    const end = Date.now() + 30_000;
    while (verifies().length < KILL_AT_VERIFY) {
      if (Date.now() > end || child.exitCode !== null)
        throw new Error(`the sweep did not reach verify #${KILL_AT_VERIFY}: ${output}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(child.kill('SIGKILL')).toBe(true);
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(output).not.toContain('SWEPT');
    const killedPid = String(child.pid);
    const ranBefore = existsSync(journal) ? readFileSync(journal, 'utf8').trim().split('\n').filter(Boolean) : [];
    const verified = verifies().map((r) => r.path.split('/').at(-1)!);
    expect(verified).toHaveLength(KILL_AT_VERIFY);
    // The sweep's first two payments were handled; the third was cut off in its verify.
    expect(ranBefore).toEqual(verified.slice(0, -1).map((id) => `${killedPid} ${id}`));
    const inFlight = verified.at(-1)!;

    // The next sweep, by another instance: the killed pass's entries come back after their lease,
    // the in-flight payment's claim after its own (real time); then everything is settled.
    sandbox.fault(VERIFY_ALL, null);
    const passes: Array<{ checked: number; settled: number }> = [];
    let at = now;
    const started = Date.now();
    while (handled.length < PAYMENTS - ranBefore.length && Date.now() - started < 4 * LEASE_MS + 10_000) {
      passes.push(await client.runReconciliation((at += 60_000)));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect([...handled].sort()).toEqual(ids.filter((id) => !verified.slice(0, -1).includes(id)).sort());
    expect(await store.countPending()).toBe(0);
    for (const id of ids)
      expect(await client.getOutcome(id)).toMatchObject({ outcome: 'confirmed', handlers: 'succeeded', attempts: 1 });
    // No handler twice: the journal of the killed instance and the handlers of the next one are disjoint.
    expect(ranBefore.map((line) => line.split(' ')[1]).filter((id) => handled.includes(id))).toEqual([]);
    // One verify each, and one more for the payment whose verify the kill cut off.
    expect(ids.map((id) => sandbox.verifyCalls(id))).toEqual(ids.map((id) => (id === inFlight ? 2 : 1)));
    figures.push(
      `${target.label}: killed during verify #${KILL_AT_VERIFY} of ${PAYMENTS} (${ranBefore.length} handled before the kill); ` +
        `the next sweep settled the ${handled.length} others in ${passes.length} pass(es) (${passes.map((p) => `${p.checked}/${p.settled}`).join(', ')} checked/settled) ` +
        `over ${((Date.now() - started) / 1000).toFixed(1)} s; every handler once; verify calls ${ids.map((id) => sandbox.verifyCalls(id)).join('/')}`,
    );
  } finally {
    await client.close();
    await sandbox.close();
  }
}

describe('kill -9 during a reconciliation sweep (a real child process): the next sweep finishes the work', () => {
  itWithService(redisUp, `Redis not reachable at ${REDIS_URL}`)('Redis store', async () => {
    const keyPrefix = `${RUN}:`;
    await sweepCrash({
      label: 'redis',
      env: { STORE: 'redis', STORE_URL: REDIS_URL, KEY_PREFIX: keyPrefix },
      open: () => new RedisPaymentsStore(REDIS_URL, { keyPrefix }),
    });
  });

  itWithService(postgresUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('PostgreSQL store', async () => {
    await sweepCrash({
      label: 'postgres',
      env: { STORE: 'postgres', STORE_URL: POSTGRES_URL, PG_SCHEMA: RUN },
      open: () => new PostgresPaymentsStore(POSTGRES_URL, { schema: RUN }),
    });
  });
});
