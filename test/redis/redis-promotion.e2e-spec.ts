import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { RedisPaymentsStore, type RedisPaymentsStoreOptions } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { RedisServers, redisServerInstalled, waitFor } from '../support/redis-servers.js';
import { describeWithService } from '../support/services.js';
import { StallingProxy } from '../support/stalling-proxy.js';

// A Redis master (26100) and its replica (26101) of the test's own, the replica linked through a
// proxy (26102) that can stall the link (the replica neither gets nor acknowledges what the master
// sends). The store writes the moment that matters on the master while the link is stalled, the
// master is SIGKILLed with it in flight, the replica promoted by hand (REPLICAOF NO ONE), and a
// second app instance carries on against it (the promoted master is given a replica of its own,
// 26103). With `replicas: { wait: 1 }` the store reports nothing done that the replica has not
// acknowledged, so the promotion loses no order's settlement and no done marker: each order is
// confirmed once, each handler runs once.

const MASTER = 26100;
const REPLICA = 26101;
const LINK = 26102;
const NEXT_REPLICA = 26103;
const installed = redisServerInstalled();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Closes the app instances, then the Redis servers, then the proxy, each step whatever the one
 * before did: a proxy left listening would take the next test's fixed port.
 */
async function tearDown(instances: Instance[], servers: RedisServers, link: StallingProxy | undefined): Promise<void> {
  try {
    for (const i of instances) await i.close();
  } finally {
    try {
      await servers.stop();
    } finally {
      await link?.close();
    }
  }
}

interface Seen {
  confirmed: PaymentConfirmedEvent[];
  duplicate: PaymentDuplicateEvent[];
}

interface Instance {
  client: PaymentsClient;
  close(): Promise<void>;
}

// An app instance whose store talks to the Redis on `port` (no webhook: payments are settled by
// return, `reconcilePayment`, so that the test decides when each attempt runs).
function instance(
  sandbox: PaymentsSandbox,
  port: number | (() => Cluster),
  keyPrefix: string,
  options: RedisPaymentsStoreOptions,
  seen: Seen,
): Instance {
  const redis =
    typeof port === 'number' ? new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, connectTimeout: 1000 }) : port();
  redis.on('error', () => undefined);
  const store = new RedisPaymentsStore(redis, { keyPrefix, logger: quietLogger(), ...options });
  const client = createPaymentsClient({
    ...sandbox.options(),
    store,
    logger: quietLogger(),
    reconciliation: { enabled: false },
  });
  // The router registers the handlers; no webhook reaches it.
  createWebhookRouter({
    client,
    onPaymentConfirmed: (e) => void seen.confirmed.push(e),
    onPaymentDuplicate: (e) => void seen.duplicate.push(e),
  });
  return {
    client,
    close: async () => {
      await client.close();
      redis.disconnect();
    },
  };
}

// A return, as the shopper's browser makes it again after an error page.
async function settleByReturn(client: PaymentsClient, paymentId: string): Promise<unknown> {
  let last: unknown;
  for (let i = 0; i < 50; i++) {
    try {
      const result = await client.reconcilePayment(paymentId);
      if ((result as { outcome?: string }).outcome !== undefined) return result;
      last = result;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`${paymentId} was never settled: ${String(last)}`);
}

describeWithService(installed, 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)')(
  'RedisPaymentsStore across a promotion (a master, a stalled replica, the master killed, the replica promoted)',
  () => {
    let sandbox: PaymentsSandbox;
    let servers: RedisServers;
    let link: StallingProxy;
    let instances: Instance[];

    beforeAll(async () => {
      sandbox = await PaymentsSandbox.start();
    });
    afterAll(() => sandbox.close());

    beforeEach(async () => {
      instances = [];
      servers = new RedisServers();
      await servers.start(MASTER);
      link = await StallingProxy.start(LINK, MASTER);
      await servers.start(REPLICA, '--replicaof', '127.0.0.1', String(LINK));
      await waitFor('the replica to sync', () =>
        servers.cli(REPLICA, 'info', 'replication').includes('master_link_status:up'),
      );
    }, 30_000);

    afterEach(() => tearDown(instances, servers, link));

    const replicated = () =>
      waitFor('the replica to have every write', () => {
        const master = servers.cli(MASTER, 'info', 'replication');
        const offset = /master_repl_offset:(\d+)/.exec(master)?.[1];
        return offset !== undefined && new RegExp(`slave0:.*offset=${offset},`).test(master);
      });

    const promote = async () => {
      servers.kill(MASTER);
      link.cut();
      servers.cli(REPLICA, 'replicaof', 'no', 'one');
      await waitFor('the replica to be the master', () =>
        servers.cli(REPLICA, 'info', 'replication').includes('role:master'),
      );
      // The promoted master gets a replica of its own, which the store's writes wait for in turn.
      await servers.start(NEXT_REPLICA, '--replicaof', '127.0.0.1', String(REPLICA));
      await waitFor('the new replica to sync', () =>
        servers.cli(NEXT_REPLICA, 'info', 'replication').includes('master_link_status:up'),
      );
    };

    it('warns once, after its first operation, when the master has replicas that nothing waits for, or fewer than it waits for', async () => {
      const cases: Array<[RedisPaymentsStoreOptions, RegExp | undefined]> = [
        [{}, /has 1 replica\(s\) and the store does not wait for them/],
        [{ replicas: { wait: 1 } }, undefined],
        [{ replicas: { wait: 0 } }, undefined],
        [{ replicas: { wait: 2 } }, /has 1 connected replica\(s\), fewer than replicas\.wait \(2\)/],
      ];
      for (const [options, expected] of cases) {
        const lines: string[] = [];
        const redis = new Redis(MASTER, '127.0.0.1');
        try {
          const store = new RedisPaymentsStore(redis, { logger: quietLogger(lines), ...options });
          await store.ping();
          // The check's INFO went out right after the first reply, on the same connection: it is
          // answered before these.
          await store.ping();
          await store.ping();
          expect(lines).toHaveLength(expected ? 1 : 0);
          if (expected) expect(lines[0]).toMatch(expected);
        } finally {
          redis.disconnect();
        }
      }
    });

    const settledOnTheMasterOnly = [
      { label: 'an order settled', duplicateFirst: false },
      // The second payment, on the master, finds the first one's settlement, which the replica lacks.
      { label: 'an order settled, then its other payment judged a duplicate,', duplicateFirst: true },
    ];
    for (const { label, duplicateFirst } of settledOnTheMasterOnly)
      it(`${label} while the replica stalled, the master killed, the replica promoted: the order is confirmed once, its other payment a duplicate once`, async () => {
        const seen: Seen = { confirmed: [], duplicate: [] };
        const keyPrefix = `np-promotion:${randomUUID()}:`;
        const options: RedisPaymentsStoreOptions = { replicas: { wait: 1, timeoutMs: 300 } };
        const A = instance(sandbox, MASTER, keyPrefix, options, seen);
        instances.push(A);
        const order = `order-${randomUUID()}`;
        const p1 = await A.client.generatePayment(
          { amount: '12500', developerTrackingId: order },
          { idempotencyKey: `${order}/1` },
        );
        const p2 = await A.client.generatePayment(
          { amount: '12500', developerTrackingId: order },
          { idempotencyKey: `${order}/2` },
        );
        expect(p2.paymentId).not.toBe(p1.paymentId);
        await sandbox.completePayment(p1.paymentId);
        await sandbox.completePayment(p2.paymentId);
        await replicated();

        link.stall();
        // The first payment's return on the master: whatever it answers, the replica has none of it.
        await A.client.reconcilePayment(p1.paymentId).catch((error: unknown) => error);
        if (duplicateFirst) {
          // Through another instance, on a connection of its own, which wrote nothing yet.
          const A2 = instance(sandbox, MASTER, keyPrefix, options, seen);
          instances.push(A2);
          await A2.client.reconcilePayment(p2.paymentId).catch((error: unknown) => error);
        }
        await promote();

        const B = instance(sandbox, REPLICA, keyPrefix, options, seen);
        instances.push(B);
        await settleByReturn(B.client, p2.paymentId);
        await settleByReturn(B.client, p1.paymentId);

        expect(seen.confirmed.map((e) => e.developerTrackingId)).toEqual([order]);
        const paid = seen.confirmed[0].paymentId;
        expect(seen.duplicate.map((e) => [e.paymentId, e.settledBy.paymentId])).toEqual([
          [paid === p1.paymentId ? p2.paymentId : p1.paymentId, paid],
        ]);
      }, 60_000);

    it('a confirmation answered while the replica stalled, the master killed at once, the replica promoted: its handlers ran once', async () => {
      const seen: Seen = { confirmed: [], duplicate: [] };
      const keyPrefix = `np-promotion:${randomUUID()}:`;
      const options: RedisPaymentsStoreOptions = { operationTimeoutMs: 10_000, replicas: { wait: 1, timeoutMs: 8000 } };
      const A = instance(sandbox, MASTER, keyPrefix, options, seen);
      instances.push(A);
      const p = await A.client.generatePayment({ amount: '4200' });
      await sandbox.completePayment(p.paymentId);
      await replicated();

      link.stall();
      let answered = false;
      const first = A.client.reconcilePayment(p.paymentId).finally(() => (answered = true));
      await Promise.race([first.catch(() => undefined), sleep(3000)]);
      // Answered while the replica acknowledged nothing: the master dies before it could pass it on.
      if (answered) {
        servers.kill(MASTER);
        link.cut();
      } else link.flow();
      await first.catch(() => undefined);
      await promote();

      const B = instance(sandbox, REPLICA, keyPrefix, options, seen);
      instances.push(B);
      await settleByReturn(B.client, p.paymentId);

      expect(seen.confirmed.map((e) => e.paymentId)).toEqual([p.paymentId]);
    }, 60_000);
  },
);

// The same on a Redis Cluster of one master (26110, announcing the proxy 26112 to the cluster, so
// that its replica 26111 replicates through it; clients go through it too, and are not held back)
// and its replica, promoted by hand (CLUSTER FAILOVER TAKEOVER) once the master is dead; 26113
// becomes the new master's replica. The store's cluster layout: the order's settlement and the
// payment's done marker live in slots of their own, and each WAIT goes to the master of its slot.
const C_MASTER = 26110;
const C_REPLICA = 26111;
const C_LINK = 26112;
const C_NEXT = 26113;
const clusterNode = (port: number) => [
  '--cluster-enabled',
  'yes',
  '--cluster-port',
  String(port + 100),
  '--cluster-config-file',
  `nodes-${port}.conf`,
  '--cluster-node-timeout',
  '1500',
];

describeWithService(installed, 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)')(
  'RedisPaymentsStore on a Redis Cluster across a promotion (the replica link stalled, the master killed, the replica taking over)',
  () => {
    let sandbox: PaymentsSandbox;
    let servers: RedisServers;
    let link: StallingProxy;
    const instances: Instance[] = [];
    const clusterOn = (port: number) => () =>
      new Cluster([{ host: '127.0.0.1', port }], {
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
        slotsRefreshTimeout: 1000,
        redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 1000 },
      });
    const replicate = async (replica: number, master: number, masterBus: number) => {
      const id = servers.cli(master, 'cluster', 'myid').trim();
      servers.cli(replica, 'cluster', 'meet', '127.0.0.1', String(master), String(masterBus));
      await waitFor('the nodes to meet', () => servers.cli(replica, 'cluster', 'nodes').includes(id));
      await waitFor('the replica to be attached', () =>
        servers.cli(replica, 'cluster', 'replicate', id).includes('OK'),
      );
      await waitFor('the replica to sync', () =>
        servers.cli(replica, 'info', 'replication').includes('master_link_status:up'),
      );
    };

    beforeAll(async () => {
      sandbox = await PaymentsSandbox.start();
      servers = new RedisServers();
      link = await StallingProxy.start(C_LINK, C_MASTER, true);
      await servers.start(
        C_MASTER,
        ...clusterNode(C_MASTER),
        '--cluster-announce-port',
        String(C_LINK),
        '--cluster-announce-bus-port',
        String(C_MASTER + 100),
      );
      await servers.start(C_REPLICA, ...clusterNode(C_REPLICA));
      servers.cli(C_MASTER, 'cluster', 'addslotsrange', '0', '16383');
      await replicate(C_REPLICA, C_MASTER, C_MASTER + 100);
      await waitFor('the cluster to be ok', () =>
        [C_MASTER, C_REPLICA].every((p) => servers.cli(p, 'cluster', 'info').includes('cluster_state:ok')),
      );
    }, 60_000);

    afterAll(async () => {
      try {
        await tearDown(instances, servers, link);
      } finally {
        await sandbox.close();
      }
    });

    it('an order settled while the replica stalled, the master killed, the replica taking over: the order is confirmed once', async () => {
      const seen: Seen = { confirmed: [], duplicate: [] };
      const keyPrefix = `np-promotion:${randomUUID()}:`;
      const options: RedisPaymentsStoreOptions = { replicas: { wait: 1, timeoutMs: 300 } };
      const A = instance(sandbox, clusterOn(C_MASTER), keyPrefix, options, seen);
      instances.push(A);
      const order = `order-${randomUUID()}`;
      const p1 = await A.client.generatePayment(
        { amount: '12500', developerTrackingId: order },
        { idempotencyKey: `${order}/1` },
      );
      const p2 = await A.client.generatePayment(
        { amount: '12500', developerTrackingId: order },
        { idempotencyKey: `${order}/2` },
      );
      await sandbox.completePayment(p1.paymentId);
      await sandbox.completePayment(p2.paymentId);
      await waitFor('the replica to have every write', () => {
        const master = servers.cli(C_MASTER, 'info', 'replication');
        const offset = /master_repl_offset:(\d+)/.exec(master)?.[1];
        return offset !== undefined && new RegExp(`slave0:.*offset=${offset},`).test(master);
      });

      link.stall();
      await A.client.reconcilePayment(p1.paymentId).catch((error: unknown) => error);
      servers.kill(C_MASTER);
      link.cut();
      servers.cli(C_REPLICA, 'cluster', 'failover', 'takeover');
      await waitFor('the replica to be the master', () =>
        servers.cli(C_REPLICA, 'info', 'replication').includes('role:master'),
      );
      await servers.start(C_NEXT, ...clusterNode(C_NEXT));
      await replicate(C_NEXT, C_REPLICA, C_REPLICA + 100);

      const B = instance(sandbox, clusterOn(C_REPLICA), keyPrefix, options, seen);
      instances.push(B);
      await settleByReturn(B.client, p2.paymentId);
      await settleByReturn(B.client, p1.paymentId);

      expect(seen.confirmed.map((e) => e.developerTrackingId)).toEqual([order]);
      const paid = seen.confirmed[0].paymentId;
      expect(seen.duplicate.map((e) => [e.paymentId, e.settledBy.paymentId])).toEqual([
        [paid === p1.paymentId ? p2.paymentId : p1.paymentId, paid],
      ]);
    }, 90_000);
  },
);
