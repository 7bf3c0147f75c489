import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import { RedisServers, redisServerInstalled, waitFor } from '../support/redis-servers.js';
import {
  itRunsHandlersOnce,
  runThroughFault,
  startInstance,
  type Instance,
  type RunCounts,
} from '../support/redis-scenarios.js';
import { describeWithService } from '../support/services.js';
import { describeStoreContract } from '../support/store-contract.js';

// Redis Sentinel of the test's own: a master (26020), its replica (26021) and a Sentinel (26022)
// that fails over one second after the master stops answering. The store is given an ioredis
// client that finds the master through the Sentinel; when the master is SIGKILLed mid-run,
// deliveries answer 503 until the replica is promoted, and every handler still runs once.

const MASTER = 26020;
const REPLICA = 26021;
const SENTINEL = 26022;
const NAME = 'np-master';
const installed = redisServerInstalled();
const servers = new RedisServers();
const fakeRef: { fake?: FakeService } = {};
const prefix = () => `np-sentinel:${randomUUID()}:`;
const sentinelClient = () =>
  new Redis({
    sentinels: [{ host: '127.0.0.1', port: SENTINEL }],
    name: NAME,
    maxRetriesPerRequest: 1,
    connectTimeout: 1000,
  });

describeWithService(installed, 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)')(
  'RedisPaymentsStore through Redis Sentinel (a master, a replica and a Sentinel of its own)',
  () => {
    beforeAll(async () => {
      await servers.start(MASTER);
      await servers.start(REPLICA, '--replicaof', '127.0.0.1', String(MASTER));
      await servers.startSentinel(SENTINEL, NAME, MASTER);
      // The Sentinel learns of the replica from the master's INFO (every 10 s at first).
      await waitFor(
        'the Sentinel to know the replica',
        () => /\b26021\b/.test(servers.cli(SENTINEL, 'sentinel', 'replicas', NAME)),
        30_000,
      );
      await waitFor('the replica to sync', () =>
        servers.cli(REPLICA, 'info', 'replication').includes('master_link_status:up'),
      );
      fakeRef.fake = await FakeService.start();
    }, 60_000);

    afterAll(async () => {
      await fakeRef.fake?.close();
      await servers.stop();
    });

    describeStoreContract('RedisPaymentsStore (ioredis client through Sentinel)', async () => {
      const client = sentinelClient();
      const store = new RedisPaymentsStore(client, { keyPrefix: prefix() });
      return { store, cleanup: async () => client.disconnect() };
    });

    it('now(): the master clock, in epoch ms', async () => {
      const client = sentinelClient();
      const admin = new Redis(MASTER, '127.0.0.1');
      try {
        const ms = async () => {
          const [s, us] = await admin.time();
          return Number(s) * 1000 + Math.floor(Number(us) / 1000);
        };
        const before = await ms();
        const now = await new RedisPaymentsStore(client).now();
        expect(now).toBeGreaterThanOrEqual(before);
        expect(now).toBeLessThanOrEqual(await ms());
      } finally {
        client.disconnect();
        admin.disconnect();
      }
    });

    const pair = async (runs: RunCounts): Promise<[Instance, Instance]> => {
      const keyPrefix = prefix();
      return [
        await startInstance(fakeRef.fake!, sentinelClient(), keyPrefix, runs),
        await startInstance(fakeRef.fake!, sentinelClient(), keyPrefix, runs),
      ];
    };

    describe('handlers once', () => {
      itRunsHandlersOnce('Redis Sentinel', () => fakeRef.fake!, pair);

      // Last: it leaves the replica as the master.
      it('the master SIGKILLed mid-run (the Sentinel promotes the replica): 30 payments, each handler once, none lost', async () => {
        const runs: RunCounts = new Map();
        const instances = await pair(runs);
        try {
          const refused = await runThroughFault(fakeRef.fake!, instances, runs, () => servers.kill(MASTER));
          // The deliveries met the outage (503 while no master answered), and the replica took over.
          expect(refused).toContain(503);
          expect(new Set(refused)).toEqual(new Set([503, ...(refused.includes(409) ? [409] : [])]));
          expect(servers.cli(SENTINEL, 'sentinel', 'get-master-addr-by-name', NAME)).toContain(String(REPLICA));
          expect(servers.cli(REPLICA, 'info', 'replication')).toContain('role:master');
        } finally {
          for (const i of instances) await i.close();
        }
      }, 120_000);
    });
  },
);
