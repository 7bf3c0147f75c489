import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import { RedisServers, redisServerInstalled, waitFor } from '../support/redis-servers.js';
import { itRunsHandlersOnce, runThroughFault, startInstance, type RunCounts } from '../support/redis-scenarios.js';
import { describeWithService } from '../support/services.js';
import { describeStoreContract } from '../support/store-contract.js';

// A Redis Cluster of the test's own: 3 masters and 3 replicas on ports 26000-26005, made with
// `redis-cli --cluster create`. The store given an ioredis Cluster keeps every script in one slot
// (CROSSSLOT refused them before), spreads payments over the masters, and runs handlers once,
// through duplicate deliveries and a master SIGKILLed mid-run.

const PORTS = [26000, 26001, 26002, 26003, 26004, 26005];
const installed = redisServerInstalled();
const servers = new RedisServers();
const fakeRef: { fake?: FakeService } = {};
const prefix = () => `np-cluster:${randomUUID()}:`;
// Failover: commands to a dead master's slots are retried while the cluster elects its replica.
const clusterClient = () =>
  new Cluster(
    PORTS.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })),
    {
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      slotsRefreshTimeout: 1000,
      redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 1000 },
    },
  );

describeWithService(installed, 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)')(
  'RedisPaymentsStore on a Redis Cluster (3 masters + 3 replicas of its own)',
  () => {
    beforeAll(async () => {
      await servers.startCluster(PORTS, 3);
      fakeRef.fake = await FakeService.start();
    }, 90_000);

    afterAll(async () => {
      await fakeRef.fake?.close();
      await servers.stop();
    });

    describeStoreContract(
      'RedisPaymentsStore (ioredis Cluster)',
      async () => {
        const cluster = clusterClient();
        const store = new RedisPaymentsStore(cluster, { keyPrefix: prefix(), story: true });
        return { store, cleanup: async () => cluster.disconnect() };
      },
      { story: true },
    );

    // Each order settlement and done marker followed by WAIT in one pipeline, which must reach the
    // master of the key's slot (on another node, the script would answer MOVED).
    describeStoreContract('RedisPaymentsStore (ioredis Cluster, replicas: { wait: 1 })', async () => {
      const cluster = clusterClient();
      const store = new RedisPaymentsStore(cluster, { keyPrefix: prefix(), replicas: { wait: 1 } });
      return { store, cleanup: async () => cluster.disconnect() };
    });

    describe('keys', () => {
      it('puts the claims of 60 payments on all three masters, and the queue and records in one slot', async () => {
        const cluster = clusterClient();
        const keyPrefix = prefix();
        const store = new RedisPaymentsStore(cluster, { keyPrefix });
        try {
          for (let i = 0; i < 60; i++) {
            const paymentId = `pay_${i}`;
            expect(await store.claim(`outcome:${paymentId}`, 'owner', 60_000)).toBe('claimed');
            await store.schedulePending(
              { paymentId, amount: '1', createdAt: new Date().toISOString(), checks: 0 },
              Date.now(),
            );
            await store.saveOutcome(
              {
                paymentId,
                outcome: 'confirmed',
                status: 'SUCCESS',
                source: 'webhook',
                handlers: 'succeeded',
                attempts: 1,
                updatedAt: new Date().toISOString(),
              },
              60_000,
            );
          }
          const perMaster = await Promise.all(
            cluster.nodes('master').map(async (node) => ({
              events: (await node.keys(`${keyPrefix}event:*`)).length,
              shared: (await node.keys(`${keyPrefix}{shared}:*`)).length,
            })),
          );
          expect(perMaster.map((m) => m.events).every((n) => n > 0)).toBe(true);
          expect(perMaster.reduce((n, m) => n + m.events, 0)).toBe(60);
          // 60 records, the due set, the entries hash, the order index, the expiry index and the
          // filter indexes' ready mark (confirmed records are in no filter index).
          expect(perMaster.map((m) => m.shared).sort((x, y) => x - y)).toEqual([0, 0, 65]);
          expect(await store.listOutcomes({ limit: 100 })).toMatchObject({
            items: expect.arrayContaining([expect.objectContaining({ paymentId: 'pay_7' })]),
          });
          expect((await store.listOutcomes({ limit: 100 })).items).toHaveLength(60);
        } finally {
          cluster.disconnect();
        }
      });

      it('now(): the clock of the cluster, in epoch ms', async () => {
        const cluster = clusterClient();
        const admin = new Redis(PORTS[0], '127.0.0.1');
        try {
          const ms = async () => {
            const [s, us] = await admin.time();
            return Number(s) * 1000 + Math.floor(Number(us) / 1000);
          };
          const before = await ms();
          const now = await new RedisPaymentsStore(cluster).now();
          const after = await ms();
          expect(Number.isInteger(now)).toBe(true);
          expect(now).toBeGreaterThanOrEqual(before);
          expect(now).toBeLessThanOrEqual(after);
        } finally {
          cluster.disconnect();
          admin.disconnect();
        }
      });
    });

    const pair = async (runs: RunCounts) => {
      const keyPrefix = prefix();
      return [
        await startInstance(fakeRef.fake!, clusterClient(), keyPrefix, runs),
        await startInstance(fakeRef.fake!, clusterClient(), keyPrefix, runs),
      ] as [Awaited<ReturnType<typeof startInstance>>, Awaited<ReturnType<typeof startInstance>>];
    };

    describe('handlers once', () => {
      itRunsHandlersOnce('Redis Cluster', () => fakeRef.fake!, pair);

      // Last: it leaves the cluster with a master down.
      it('a master SIGKILLed mid-run (its replica promoted): 30 payments, each handler once, none lost', async () => {
        const runs: RunCounts = new Map();
        const instances = await pair(runs);
        try {
          // The master of the shared slot (queue and records): the harder case, where an attempt's
          // done marker lands and its record must wait for the replica's promotion.
          const victim = servers.masterOf(PORTS[0], 'np-cluster:{shared}:pending:due');
          const refused = await runThroughFault(fakeRef.fake!, instances, runs, () => servers.kill(victim));
          // Deliveries refused during the outage were refused for it (503) or for a lease (409), never
          // otherwise; claims live on the other masters, so most went through, and a replica took over.
          expect(refused.filter((status) => status !== 503 && status !== 409)).toEqual([]);
          const alive = PORTS.find((p) => p !== victim)!;
          await waitFor('the cluster to be ok', () =>
            servers.cli(alive, 'cluster', 'info').includes('cluster_state:ok'),
          );
          expect(servers.clusterMasters(alive)).toHaveLength(3);
          expect(servers.clusterMasters(alive)).not.toContain(victim);
        } finally {
          for (const i of instances) await i.close();
        }
      }, 120_000);
    });
  },
);
