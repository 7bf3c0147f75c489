import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { createPaymentsClient } from '../../lib/express/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import { generateVia, quietLogger, verifyCount } from '../support/outcome-kit.js';
import { RedisServers, redisServerInstalled, waitFor } from '../support/redis-servers.js';
import { describeWithService } from '../support/services.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { settle } from '../faults/support/guards.js';
import { bundleFixture } from '../support/bundle.js';
import { startFixtureProcess, until, type FixtureProcess } from '../support/fixture-process.js';

// crash.e2e-spec.ts's real crash on the Redis setups of production, each of the test's own: a Redis
// Cluster (3 masters + 3 replicas, ports 26040-26045) and a Sentinel-managed master (master 26050,
// replica 26051, Sentinel 26052). The app (a child process) is SIGKILLed mid-handler; a new
// process handles the service's redelivery once the lease ends; a late redelivery and a return
// visit afterwards are duplicates. The handler ran to its end exactly once.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-crash-setups', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'payments.mjs');
const FIXTURE = path.join(import.meta.dirname, 'fixtures/app.mjs');
const SECRET = 'whsec_crash_setups_0123456789abcdef012345';
const LEASE_MS = 1500;
const CLUSTER_PORTS = [26040, 26041, 26042, 26043, 26044, 26045];
const SENTINEL = { master: 26050, replica: 26051, sentinel: 26052, name: 'np-crash' };

interface Setup {
  name: string;
  /** The fixture's environment naming the Redis. */
  env: Record<string, string>;
  /** A client of the setup, for the test process. */
  client: () => Redis | Cluster;
}

const SETUPS: Setup[] = [
  {
    name: 'Redis Cluster (3 masters + 3 replicas)',
    env: { REDIS_CLUSTER: CLUSTER_PORTS.slice(0, 3).join(',') },
    client: () => new Cluster(CLUSTER_PORTS.slice(0, 3).map((port) => ({ host: '127.0.0.1', port }))),
  },
  {
    name: 'Redis Sentinel (master, replica, Sentinel)',
    env: { REDIS_SENTINEL: `${SENTINEL.sentinel}:${SENTINEL.name}` },
    client: () => new Redis({ sentinels: [{ host: '127.0.0.1', port: SENTINEL.sentinel }], name: SENTINEL.name }),
  },
];

const installed = redisServerInstalled();
const servers = new RedisServers();
const children: ChildProcess[] = [];
let fake: FakeService;
let counter = 0;

function startApp(setup: Setup, keyPrefix: string, hang: boolean): Promise<FixtureProcess> {
  return startFixtureProcess(
    FIXTURE,
    {
      ...setup.env,
      BUNDLE,
      KEY_PREFIX: keyPrefix,
      FAKE_URL: fake.url,
      SECRET,
      LEASE_MS: String(LEASE_MS),
      HANG: hang ? '1' : '0',
    },
    children,
  );
}

describeWithService(installed, 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)')(
  'a process killed mid-handler, on a Redis Cluster and through Sentinel (real child processes, SIGKILL)',
  () => {
    beforeAll(async () => {
      mkdirSync(OUT_DIR, { recursive: true });
      bundleFixture(path.join(import.meta.dirname, 'fixtures/entry.ts'), BUNDLE);
      await servers.startCluster(CLUSTER_PORTS, 3);
      await servers.start(SENTINEL.master);
      await servers.start(SENTINEL.replica, '--replicaof', '127.0.0.1', String(SENTINEL.master));
      await servers.startSentinel(SENTINEL.sentinel, SENTINEL.name, SENTINEL.master);
      await waitFor('the replica to sync', () =>
        servers.cli(SENTINEL.replica, 'info', 'replication').includes('master_link_status:up'),
      );
      fake = await FakeService.start();
    }, 90_000);

    afterEach(() => {
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    afterAll(async () => {
      await fake?.close();
      await servers.stop();
      rmSync(OUT_DIR, { recursive: true, force: true });
    });

    it.each(SETUPS)(
      '$name: killed mid-handler, redelivered to a new process, then a late redelivery and a return visit: handled once',
      async (setup) => {
        const keyPrefix = `np-crash:${process.pid}:${++counter}:`;
        const redis = setup.client();
        const client = createPaymentsClient({
          publicKey: 'pk_crash',
          privateKey: 'sk_crash_private',
          baseUrl: fake.url,
          successLink: 'https://shop.example/ok',
          failLink: 'https://shop.example/ko',
          webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET, leaseMs: LEASE_MS },
          reconciliation: { enabled: false },
          logger: quietLogger(),
          store: new RedisPaymentsStore(redis, { keyPrefix }),
        });
        const list = (name: string) => redis.lrange(`${keyPrefix}test:${name}`, 0, -1);
        try {
          const p = await generateVia(client, fake, `pay_crash_setup_${process.pid}_${counter}`, { amount: '2500' });
          fake.always(verifyPath(p.paymentId), {
            status: 200,
            body: verifyAnswer({ status: 'SUCCESS', amount: 2500 }),
          });
          const deliver = (app: FixtureProcess) =>
            fetch(`${app.url}/hook/${p.token}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ payment_id: p.paymentId }),
            }).then(
              async (r) => ({ status: r.status, body: await r.json() }),
              (e: unknown) => ({ status: 0, body: String(e) }),
            );

          const first = await startApp(setup, keyPrefix, true);
          const dying = deliver(first);
          await until(
            () => list('started'),
            (l) => l.length > 0,
          );
          expect(first.child.kill('SIGKILL')).toBe(true);
          expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
          expect((await dying).status).toBe(0);
          expect(await list('done')).toEqual([]);

          const second = await startApp(setup, keyPrefix, false);
          const final = await until(
            () => deliver(second),
            (a) => a.status !== 409,
          );
          expect(final).toEqual({ status: 200, body: { received: true } });
          // After the lease: a late redelivery and a return visit find it done.
          await settle(LEASE_MS + 300);
          expect(await deliver(second)).toEqual({ status: 200, body: { received: true, duplicate: true } });
          expect(await client.reconcilePayment(p.paymentId)).toMatchObject({ outcome: 'confirmed', handled: false });

          expect(await list('done')).toEqual([`${second.child.pid} ${p.paymentId} webhook 2500`]);
          expect((await list('started')).map((s) => s.split(' ')[0])).toEqual([
            String(first.child.pid),
            String(second.child.pid),
          ]);
          expect(await client.getOutcome(p.paymentId)).toMatchObject({
            outcome: 'confirmed',
            handlers: 'succeeded',
            source: 'webhook',
            attempts: 1,
          });
          expect(await client.countPending()).toBe(0);
          expect(verifyCount(fake, p.paymentId)).toBe(2);
          second.child.kill('SIGTERM');
          expect(await second.exited).toEqual({ code: 0, signal: null });
        } finally {
          await client.close();
          redis.disconnect();
        }
      },
      60_000,
    );
  },
);
