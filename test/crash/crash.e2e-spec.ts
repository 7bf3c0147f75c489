import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createPaymentsClient } from '../../lib/express/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import { generateVia, quietLogger, verifyCount } from '../support/outcome-kit.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';
import { bundleFixture } from '../support/bundle.js';
import { startFixtureProcess, until, type FixtureProcess } from '../support/fixture-process.js';

// A real crash: the app (a child process, plain Express + RedisPaymentsStore) is SIGKILLed while
// a confirmation handler runs. A new process on the same Redis finishes the outcome exactly once,
// through the service's redelivery of the webhook, or through reconciliation, once the dead
// process's claim (its lease) has expired. Nothing is marked done by the killed attempt.
//
// The fixture imports the package from a bundle esbuild makes at test start (from lib/, so the
// test needs no `npm run build` and leaves the shared dist/ alone). It is written under
// node_modules/.cache so that the bundle's bare imports (express, ioredis, axios...) resolve.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-crash-test', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/app.mjs');
const SECRET = 'whsec_crash_0123456789abcdef0123456789ab';
const LEASE_MS = 1500;

const redisUp = await redisAvailable();
const rejections = collectUnhandledRejections();
let fake: FakeService;
let redis: Redis;
const children: ChildProcess[] = [];
let counter = 0;

/** Starts the fixture app; resolves once it listens. */
function startApp(keyPrefix: string, hang: boolean): Promise<FixtureProcess> {
  return startFixtureProcess(
    FIXTURE,
    {
      BUNDLE,
      REDIS_URL,
      KEY_PREFIX: keyPrefix,
      FAKE_URL: fake.url,
      SECRET,
      LEASE_MS: String(LEASE_MS),
      HANG: hang ? '1' : '0',
    },
    children,
  );
}

const list = (keyPrefix: string, name: string) => redis.lrange(`${keyPrefix}test:${name}`, 0, -1);

/** Generates a payment from the test process on the same store and secret (as an earlier app instance would have). */
async function generate(keyPrefix: string, amount: number) {
  const client = createPaymentsClient({
    publicKey: 'pk_crash',
    privateKey: 'sk_crash_private',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    sessionTimeoutSecs: 60,
    webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET },
    reconciliation: { enabled: false },
    logger: quietLogger(),
    store: new RedisPaymentsStore(REDIS_URL, { keyPrefix }),
  });
  try {
    const p = await generateVia(client, fake, `pay_crash_${process.pid}_${++counter}`, {
      amount: String(amount),
      developerTrackingId: `order-crash-${counter}`,
    });
    fake.always(verifyPath(p.paymentId), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount, trackingId: `order-crash-${counter}` }),
    });
    return p;
  } finally {
    await client.close();
  }
}

async function outcomeOf(keyPrefix: string, paymentId: string) {
  const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
  try {
    return { record: await store.getOutcome(paymentId), pending: await store.findPending(paymentId) };
  } finally {
    await store.close();
  }
}

async function killMidHandler(app: FixtureProcess, keyPrefix: string, paymentId: string) {
  const started = await until(
    () => list(keyPrefix, 'started'),
    (l) => l.some((e) => e.includes(paymentId)),
  );
  expect(started).toEqual([`${app.child.pid} ${paymentId} ${started[0]?.split(' ')[2]}`]);
  expect(app.child.kill('SIGKILL')).toBe(true);
  expect(await app.exited).toEqual({ code: null, signal: 'SIGKILL' });
  expect(await list(keyPrefix, 'done')).toEqual([]);
}

describeWithService(redisUp, `no Redis at ${REDIS_URL}`)(
  'a process killed mid-handler (real child processes, SIGKILL, Redis store)',
  () => {
    const prefixes: string[] = [];
    const prefix = () => {
      const p = `nestjs-payments-crash:${process.pid}:${++counter}:`;
      prefixes.push(p);
      return p;
    };

    beforeAll(async () => {
      mkdirSync(OUT_DIR, { recursive: true });
      bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE);
      fake = await FakeService.start();
      redis = new Redis(REDIS_URL);
    }, 60_000);

    afterEach(async () => {
      // Only the processes this suite started, by their handle.
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    afterAll(async () => {
      for (const p of prefixes) {
        const keys = await redis.keys(`${p}*`);
        if (keys.length) await redis.del(...keys);
      }
      await redis?.quit();
      await fake?.close();
      rmSync(OUT_DIR, { recursive: true, force: true });
      await settle();
      rejections.stop();
      expect(rejections.seen).toEqual([]);
    });

    it('the webhook: killed mid-handler, then the service redelivers to a new process: handled exactly once', async () => {
      const keyPrefix = prefix();
      const p = await generate(keyPrefix, 2500);
      const first = await startApp(keyPrefix, true);
      const deliver = (app: FixtureProcess) =>
        fetch(`${app.url}/hook/${p.token}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ payment_id: p.paymentId }),
        }).then(
          async (r) => ({ status: r.status, body: await r.json() }),
          (e: unknown) => ({ status: 0, body: String(e) }),
        );
      const dying = deliver(first);
      await killMidHandler(first, keyPrefix, p.paymentId);
      expect((await dying).status).toBe(0); // the service saw the connection die: it will redeliver

      const second = await startApp(keyPrefix, false);
      // Redeliveries while the dead process's lease runs get 409 + Retry-After; then one runs it.
      const answers: number[] = [];
      const final = await until(
        async () => {
          const a = await deliver(second);
          answers.push(a.status);
          return a;
        },
        (a) => a.status !== 409,
      );
      expect(final).toEqual({ status: 200, body: { received: true } });
      expect(new Set(answers.slice(0, -1))).toEqual(new Set(answers.length > 1 ? [409] : []));
      expect(await deliver(second)).toEqual({ status: 200, body: { received: true, duplicate: true } });

      expect(await list(keyPrefix, 'done')).toEqual([`${second.child.pid} ${p.paymentId} webhook 2500`]);
      expect((await list(keyPrefix, 'started')).map((s) => s.split(' ')[0])).toEqual([
        String(first.child.pid),
        String(second.child.pid),
      ]);
      const { record, pending } = await outcomeOf(keyPrefix, p.paymentId);
      expect(record).toMatchObject({ outcome: 'confirmed', handlers: 'succeeded', source: 'webhook', attempts: 1 });
      expect(pending).toBeUndefined();
      // One verify by the killed attempt, one by the attempt that ran; busy and duplicate deliveries cost none.
      expect(verifyCount(fake, p.paymentId)).toBe(2);
    });

    it('reconciliation: killed mid-handler during a pass, then a new process reconciles after the lease: handled exactly once', async () => {
      const keyPrefix = prefix();
      const p = await generate(keyPrefix, 3100);
      const first = await startApp(keyPrefix, true);
      const far = Date.now() + 3_600_000;
      const dying = fetch(`${first.url}/admin/reconcile?now=${far}`, { method: 'POST' }).then(
        () => 'answered',
        () => 'died',
      );
      await killMidHandler(first, keyPrefix, p.paymentId);
      expect(await dying).toBe('died');

      const second = await startApp(keyPrefix, false);
      // Each pass looks further ahead (the killed pass leased the queue entry); the outcome's claim
      // frees itself once its lease (LEASE_MS of real time) has passed.
      let k = 1;
      const runs: Array<{ checked: number; settled: number }> = [];
      const last = await until(
        async () => {
          const run = (await (
            await fetch(`${second.url}/admin/reconcile?now=${far + ++k * 3_600_000}`, { method: 'POST' })
          ).json()) as {
            checked: number;
            settled: number;
          };
          runs.push(run);
          return run;
        },
        (r) => r.settled > 0,
      );
      expect(last).toEqual({ checked: 1, settled: 1 });
      // Passes before it found the payment busy (not checked, no verify call).
      expect(runs.slice(0, -1).every((r) => r.checked === 0 && r.settled === 0)).toBe(true);
      const after = await (
        await fetch(`${second.url}/admin/reconcile?now=${far + 1000 * 3_600_000}`, { method: 'POST' })
      ).json();
      expect(after).toEqual({ checked: 0, settled: 0 });

      expect(await list(keyPrefix, 'done')).toEqual([`${second.child.pid} ${p.paymentId} reconciliation 3100`]);
      const { record, pending } = await outcomeOf(keyPrefix, p.paymentId);
      expect(record).toMatchObject({
        outcome: 'confirmed',
        handlers: 'succeeded',
        source: 'reconciliation',
        attempts: 1,
      });
      expect(pending).toBeUndefined();
      expect(verifyCount(fake, p.paymentId)).toBe(2);

      // The webhook arriving late, at the new process: a duplicate, no verify call.
      const late = await fetch(`${second.url}/hook/${p.token}?payment_id=${p.paymentId}`);
      expect([late.status, await late.json()]).toEqual([200, { received: true, duplicate: true }]);
      expect(verifyCount(fake, p.paymentId)).toBe(2);
      second.child.kill('SIGTERM');
      expect(await second.exited).toEqual({ code: 0, signal: null });
    });
  },
);
