import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { PaymentsLogger } from '../../lib/core/common/payments.logger.js';
import type { OutcomeRecord, PendingPayment } from '../../lib/core/store/store.types.js';
import { DEFAULT_KEY_PREFIX, RedisPaymentsStore } from '../../lib/redis/index.js';
import { REDIS_URL, describeWithService, redisAvailable } from '../support/services.js';
import { describeStoreContract, sleep } from '../support/store-contract.js';

const available = await redisAvailable();

/** Every key this run writes starts with it, so that afterAll can delete them all. */
const RUN_PREFIX = `test:${process.pid}:${randomUUID()}:`;
const prefix = () => `${RUN_PREFIX}${randomUUID()}:`;
const LONG_MS = 60_000;

/** Records what the store logs, and keeps the test output quiet. */
function recordingLogger(): PaymentsLogger & { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  return { errors, warnings, log: () => undefined, warn: (m) => warnings.push(m), error: (m) => errors.push(m) };
}

/** A port nothing listens on: opened by us, then closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A server that accepts connections and never answers: a Redis hung or behind a black hole. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A client as a host would create it; one retry at a steady pace so that, when Redis is absent
 * (CI), tests fail fast instead of waiting on ioredis's growing reconnection delays.
 */
const hostClient = () => new Redis(REDIS_URL, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });

/** QUIT when connected (waits for pending replies); otherwise drop the socket, QUIT would queue. */
async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
  else client.disconnect();
}

/** Time a promise takes to reject, and its error. */
async function timeRejection(pending: Promise<unknown>): Promise<{ ms: number; error: Error }> {
  const started = Date.now();
  const error = await pending.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e as Error,
  );
  return { ms: Date.now() - started, error };
}

describeWithService(available, `Redis not reachable at ${REDIS_URL}`)('RedisPaymentsStore against a real Redis', () => {
  let admin: Redis;

  beforeAll(() => {
    admin = hostClient();
  });

  afterAll(async () => {
    // SCAN + DEL by prefix: the run's keys go, whatever tests failed; other data is untouched.
    const pattern = `${RUN_PREFIX.replace(/[*?[\]\\]/g, '\\$&')}*`;
    try {
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        if (keys.length > 0) await admin.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      await closeClient(admin);
    }
  });

  describeStoreContract(
    'RedisPaymentsStore (URL)',
    async () => {
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix(), logger: recordingLogger(), story: true });
      return { store, cleanup: () => store.close() };
    },
    {
      story: true,
      storyRetention: async (story) => {
        const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix(), logger: recordingLogger(), story });
        return { store, cleanup: () => store.close() };
      },
    },
  );

  describeStoreContract('RedisPaymentsStore (client of the host)', async () => {
    const client = hostClient();
    const store = new RedisPaymentsStore(client, { keyPrefix: prefix() });
    return {
      store,
      cleanup: async () => {
        await store.close();
        await closeClient(client);
      },
    };
  });

  describe('keys and values', () => {
    let store: RedisPaymentsStore;
    let keyPrefix: string;

    beforeAll(() => {
      keyPrefix = prefix();
      store = new RedisPaymentsStore(REDIS_URL, { keyPrefix, logger: recordingLogger() });
    });

    afterAll(() => store.close());

    it("now(): the Redis server's clock (TIME), in epoch ms", async () => {
      const serverMs = async () => {
        const [s, us] = await admin.time();
        return Number(s) * 1000 + Math.floor(Number(us) / 1000);
      };
      const before = await serverMs();
      const now = await store.now();
      expect(Number.isInteger(now)).toBe(true);
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThanOrEqual(await serverMs());
    });

    it('writes a binding as JSON under <prefix>binding:<tokenId> with its TTL', async () => {
      const token = randomUUID();
      const binding = { paymentId: 'pay-1', amount: '12500', createdAt: '2025-01-01T00:00:00.000Z' };
      await store.saveBinding(token, binding, 5000);
      const key = `${keyPrefix}binding:${token}`;
      expect(JSON.parse((await admin.get(key))!)).toEqual(binding);
      const pttl = await admin.pttl(key);
      expect(pttl).toBeGreaterThan(4000);
      expect(pttl).toBeLessThanOrEqual(5000);
    });

    it('writes claimed:<owner> with the lease, then done with the done TTL', async () => {
      const event = `payment.confirmed:${randomUUID()}`;
      const key = `${keyPrefix}event:${event}`;
      await store.claim(event, 'instance-a', 5000);
      expect(await admin.get(key)).toBe('claimed:instance-a');
      expect(await admin.pttl(key)).toBeGreaterThan(4000);
      await store.markDone(event, 'instance-a', 90_000);
      expect(await admin.get(key)).toBe('done');
      expect(await admin.pttl(key)).toBeGreaterThan(85_000);
      await store.release(event, 'instance-a');
      expect(await admin.get(key)).toBe('done');
    });

    it('takes a rate-limit slot as <prefix>rate:<key> with the window as PX, and frees it with DEL', async () => {
      const k = `unsigned:${randomUUID()}`;
      await expect(store.rateLimits.take(k, 5000)).resolves.toBe(true);
      const key = `${keyPrefix}rate:${k}`;
      expect(await admin.exists(key)).toBe(1);
      const pttl = await admin.pttl(key);
      expect(pttl).toBeGreaterThan(4000);
      expect(pttl).toBeLessThanOrEqual(5000);
      await store.rateLimits.free(k);
      expect(await admin.exists(key)).toBe(0);
    });

    it('rounds a fractional lease up to whole milliseconds', async () => {
      const event = randomUUID();
      await expect(store.claim(event, 'o', 1500.2)).resolves.toBe('claimed');
      expect(await admin.pttl(`${keyPrefix}event:${event}`)).toBeGreaterThan(1400);
    });

    it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY])(
      'rejects a lease or TTL of %p instead of storing it forever',
      async (ms) => {
        await expect(store.claim(randomUUID(), 'o', ms)).rejects.toThrow(RangeError);
        await expect(store.markDone(randomUUID(), 'o', ms)).rejects.toThrow(RangeError);
        await expect(
          store.saveBinding(randomUUID(), { paymentId: 'p', amount: '1', createdAt: 'x' }, ms),
        ).rejects.toThrow(RangeError);
      },
    );

    it.each([
      ['not JSON', '{"paymentId":'],
      ['null', 'null'],
      ['an array', '[]'],
      ['a number', '42'],
      ['a binding without amount', '{"paymentId":"p","createdAt":"x"}'],
      ['a binding with a numeric paymentId', '{"paymentId":5,"amount":"1","createdAt":"x"}'],
      [
        'a binding with a numeric tracking id',
        '{"paymentId":"p","amount":"1","createdAt":"x","developerTrackingId":7}',
      ],
    ])('treats a stored value that is %s as no binding', async (_what, raw) => {
      const token = randomUUID();
      await admin.set(`${keyPrefix}binding:${token}`, raw, 'PX', 5000);
      await expect(store.findBinding(token)).resolves.toBeUndefined();
    });

    it('answers busy for an event key holding a value it did not write, and leaves it alone', async () => {
      const event = randomUUID();
      await admin.set(`${keyPrefix}event:${event}`, 'something else', 'PX', 5000);
      await expect(store.claim(event, 'o', LONG_MS)).resolves.toBe('busy');
      await expect(store.markDone(event, 'o', LONG_MS)).resolves.toBe(false);
      await store.release(event, 'o');
      expect(await admin.get(`${keyPrefix}event:${event}`)).toBe('something else');
    });

    it("uses 'nestjs-payments:' as the default prefix", async () => {
      expect(DEFAULT_KEY_PREFIX).toBe('nestjs-payments:');
      const client = hostClient();
      const plain = new RedisPaymentsStore(client);
      const event = `${RUN_PREFIX}${randomUUID()}`;
      const key = `nestjs-payments:event:${event}`;
      try {
        await plain.claim(event, 'o', 5000);
        expect(await admin.get(key)).toBe('claimed:o');
      } finally {
        await plain.close();
        await closeClient(client);
        await admin.del(key);
      }
    });

    it('keeps the client out of util.inspect and JSON of the store (its options may hold a password)', async () => {
      const { inspect } = await import('node:util');
      const withPassword = new RedisPaymentsStore('redis://:s3cret-pw@127.0.0.1:1', {
        logger: recordingLogger(),
        redisOptions: { lazyConnect: true },
      });
      expect(inspect(withPassword, { depth: 5 })).not.toContain('s3cret-pw');
      expect(JSON.stringify(withPassword)).not.toContain('s3cret-pw');
      await withPassword.close();
    });
  });

  describe('ownership of the client', () => {
    it('leaves a client passed in open and usable after close()', async () => {
      const client = hostClient();
      try {
        const store = new RedisPaymentsStore(client, { keyPrefix: prefix() });
        await expect(store.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
        await store.close();
        expect(client.status).toBe('ready');
        await expect(client.ping()).resolves.toBe('PONG');
        // The host can still use a store on it, e.g. one created again after a module reload.
        await expect(new RedisPaymentsStore(client, { keyPrefix: prefix() }).claim('e', 'o', LONG_MS)).resolves.toBe(
          'claimed',
        );
      } finally {
        await closeClient(client);
      }
    });

    it("works under a host client's own ioredis keyPrefix, scripts and plain commands alike", async () => {
      const hostPrefix = `${RUN_PREFIX}host:`;
      const client = new Redis(REDIS_URL, { keyPrefix: hostPrefix, maxRetriesPerRequest: 1 });
      try {
        const store = new RedisPaymentsStore(client, { keyPrefix: 'app:' });
        await store.saveBinding('t', { paymentId: 'p', amount: '1', createdAt: 'x' }, LONG_MS);
        await expect(store.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
        expect(await admin.get(`${hostPrefix}app:event:e`)).toBe('claimed:o');
        expect(await admin.exists(`${hostPrefix}app:binding:t`)).toBe(1);
        await expect(store.findBinding('t')).resolves.toEqual({ paymentId: 'p', amount: '1', createdAt: 'x' });
        await expect(store.markDone('e', 'o', LONG_MS)).resolves.toBe(true);
      } finally {
        await closeClient(client);
      }
    });

    it.each([
      ['RESP2', { protocol: 2 as const }],
      ['RESP3 with resp3 reply mapping', { protocol: 3 as const, replyMapping: 'resp3' as const }],
      ['stringNumbers', { stringNumbers: true }],
    ])('works on a %s client', async (_name, options) => {
      const client = new Redis(REDIS_URL, { ...options, maxRetriesPerRequest: 1 });
      try {
        const store = new RedisPaymentsStore(client, { keyPrefix: prefix() });
        await expect(store.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
        await expect(store.claim('e', 'o2', LONG_MS)).resolves.toBe('busy');
        await expect(store.markDone('e', 'o2', LONG_MS)).resolves.toBe(false);
        await expect(store.markDone('e', 'o', LONG_MS)).resolves.toBe(true);
        await expect(store.claim('e', 'o2', LONG_MS)).resolves.toBe('done');
      } finally {
        await closeClient(client);
      }
    });

    it('closes the client it created; later calls reject; close() twice is fine', async () => {
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix(), logger: recordingLogger() });
      try {
        await expect(store.claim('e', 'o', LONG_MS)).resolves.toBe('claimed');
      } finally {
        await store.close();
      }
      await store.close();
      await expect(store.claim('e2', 'o', LONG_MS)).rejects.toThrow(/claim called after close\(\)/);
      await expect(store.findBinding('t')).rejects.toThrow(/after close/);
      await expect(store.rateLimits.take('k', LONG_MS)).rejects.toThrow(/rateLimits.take called after close\(\)/);
    });

    it('rejects something that is neither a URL nor a client', () => {
      expect(() => new RedisPaymentsStore({} as unknown as string)).toThrow(TypeError);
      expect(() => new RedisPaymentsStore(REDIS_URL, { operationTimeoutMs: 0 })).toThrow(RangeError);
    });
  });

  describe('several stores', () => {
    const stores: RedisPaymentsStore[] = [];
    const open = (keyPrefix: string) => {
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix, logger: recordingLogger() });
      stores.push(store);
      return store;
    };

    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s.close()));
    });

    it('with different prefixes do not see each other', async () => {
      const [a, b] = [open(prefix()), open(prefix())];
      await expect(a.claim('payment.confirmed:1', 'a', LONG_MS)).resolves.toBe('claimed');
      await expect(b.claim('payment.confirmed:1', 'b', LONG_MS)).resolves.toBe('claimed');
      await a.markDone('payment.confirmed:1', 'a', LONG_MS);
      await expect(b.claim('payment.confirmed:1', 'b2', LONG_MS)).resolves.toBe('busy');
      await a.saveBinding('token', { paymentId: 'p', amount: '1', createdAt: 'x' }, LONG_MS);
      await expect(b.findBinding('token')).resolves.toBeUndefined();
    });

    it('with the same prefix share claims, bindings and done markers', async () => {
      const shared = prefix();
      const [a, b] = [open(shared), open(shared)];
      await expect(a.claim('e', 'instance-a', LONG_MS)).resolves.toBe('claimed');
      await expect(b.claim('e', 'instance-b', LONG_MS)).resolves.toBe('busy');
      await expect(b.markDone('e', 'instance-b', LONG_MS)).resolves.toBe(false);
      await b.release('e', 'instance-b');
      await expect(a.markDone('e', 'instance-a', LONG_MS)).resolves.toBe(true);
      await expect(b.claim('e', 'instance-b', LONG_MS)).resolves.toBe('done');
      await b.saveBinding('token', { paymentId: 'p', amount: '1', createdAt: 'x' }, LONG_MS);
      await expect(a.findBinding('token')).resolves.toEqual({ paymentId: 'p', amount: '1', createdAt: 'x' });
    });

    it('with the same prefix share rate limits, one slot for both', async () => {
      const shared = prefix();
      const [a, b] = [open(shared), open(shared)];
      await expect(a.rateLimits.take('token:n', LONG_MS)).resolves.toBe(true);
      await expect(b.rateLimits.take('token:n', LONG_MS)).resolves.toBe(false);
      await b.rateLimits.free('token:n');
      const takes = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).rateLimits.take('token:n', LONG_MS)),
      );
      expect(takes.filter(Boolean)).toHaveLength(1);
    });

    it('on two connections racing 100 claims over 20 events grant exactly one claim per event', async () => {
      const shared = prefix();
      const [a, b] = [open(shared), open(shared)];
      // Both connections must be up, or the race would only be between queued commands.
      await Promise.all([a.findBinding('warm-up'), b.findBinding('warm-up')]);
      const attempts = Array.from({ length: 100 }, (_, i) => ({
        event: `e${i % 20}`,
        owner: `o${i}`,
        store: i % 2 ? a : b,
      }));
      attempts.sort(() => Math.random() - 0.5);
      const outcomes = await Promise.all(attempts.map((t) => t.store.claim(t.event, t.owner, LONG_MS)));

      const winners = new Map<string, string[]>();
      attempts.forEach((t, i) => {
        if (outcomes[i] === 'claimed') winners.set(t.event, [...(winners.get(t.event) ?? []), t.owner]);
      });
      expect(winners.size).toBe(20);
      for (const owners of winners.values()) expect(owners).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'busy')).toHaveLength(80);
      // Redis agrees with what each winner was told.
      for (const [event, [winner]] of winners) {
        expect(await admin.get(`${shared}event:${event}`)).toBe(`claimed:${winner}`);
      }
    });
  });

  describe('when Redis is unreachable', () => {
    it('rejects every operation within a few seconds when the port is closed', async () => {
      const logger = recordingLogger();
      const store = new RedisPaymentsStore(`redis://127.0.0.1:${await closedPort()}`, { logger });
      try {
        const started = Date.now();
        const results = await Promise.allSettled([
          store.claim('e', 'o', LONG_MS),
          store.markDone('e', 'o', LONG_MS),
          store.release('e', 'o'),
          store.saveBinding('t', { paymentId: 'p', amount: '1', createdAt: 'x' }, LONG_MS),
          store.findBinding('t'),
        ]);
        expect(Date.now() - started).toBeLessThan(3000);
        expect(results.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
        // Reconnection keeps failing, but the outage is logged once.
        await sleep(300);
        expect(logger.errors).toHaveLength(1);
        expect(logger.errors[0]).toMatch(/ECONNREFUSED/);
      } finally {
        const closing = Date.now();
        await store.close();
        expect(Date.now() - closing).toBeLessThan(500);
      }
    });

    it('closes at once while reconnecting, and rejects later calls at once', async () => {
      const store = new RedisPaymentsStore(`redis://127.0.0.1:${await closedPort()}`, { logger: recordingLogger() });
      await expect(store.findBinding('t')).rejects.toThrow();
      const started = Date.now();
      await store.close();
      await expect(store.claim('e', 'o', LONG_MS)).rejects.toThrow(/after close/);
      expect(Date.now() - started).toBeLessThan(200);
    });

    it('rejects within operationTimeoutMs when Redis accepts connections but never answers', async () => {
      const server = await silentServer();
      const store = new RedisPaymentsStore(`redis://127.0.0.1:${server.port}`, {
        operationTimeoutMs: 300,
        logger: recordingLogger(),
      });
      try {
        const { ms, error } = await timeRejection(store.claim('e', 'o', LONG_MS));
        expect(error.message).toMatch(/timed out/);
        expect(ms).toBeGreaterThanOrEqual(250);
        expect(ms).toBeLessThan(1500);
      } finally {
        await store.close();
        await server.close();
      }
    });

    it('bounds operations even on a host client set to queue commands forever', async () => {
      const client = new Redis(`redis://127.0.0.1:${await closedPort()}`, { maxRetriesPerRequest: null });
      client.on('error', () => undefined);
      const store = new RedisPaymentsStore(client, { operationTimeoutMs: 300 });
      try {
        const { ms, error } = await timeRejection(store.claim('e', 'o', LONG_MS));
        expect(error.message).toMatch(/claim timed out after 300 ms/);
        expect(ms).toBeLessThan(1500);
      } finally {
        await store.close();
        client.disconnect();
      }
    });

    it('recovers by itself once Redis is back', async () => {
      // A proxy we can cut and restore stands in for a Redis that goes away and comes back.
      const target = new URL(REDIS_URL);
      const upstreams = new Set<net.Socket>();
      const clients = new Set<net.Socket>();
      let accepting = true;
      const proxy = net.createServer((socket) => {
        if (!accepting) return socket.destroy();
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
        clients.add(socket);
        upstreams.add(upstream);
        socket.pipe(upstream).pipe(socket);
        const drop = () => {
          socket.destroy();
          upstream.destroy();
          clients.delete(socket);
          upstreams.delete(upstream);
        };
        socket.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const { port } = proxy.address() as net.AddressInfo;
      const logger = recordingLogger();
      const store = new RedisPaymentsStore(`redis://127.0.0.1:${port}`, {
        keyPrefix: prefix(),
        operationTimeoutMs: 500,
        logger,
        redisOptions: { retryStrategy: () => 50 },
      });
      try {
        await expect(store.claim('before', 'o', LONG_MS)).resolves.toBe('claimed');

        accepting = false;
        for (const s of [...clients, ...upstreams]) s.destroy();
        await expect(store.claim('during', 'o', LONG_MS)).rejects.toThrow();
        expect(logger.errors).toHaveLength(1);

        accepting = true;
        const deadline = Date.now() + 3000;
        let outcome: string | undefined;
        while (outcome === undefined && Date.now() < deadline) {
          outcome = await store.claim('after', 'o', LONG_MS).catch(() => undefined);
          if (outcome === undefined) await sleep(50);
        }
        expect(outcome).toBe('claimed');
        expect(logger.warnings.some((w) => /back/.test(w))).toBe(true);
      } finally {
        await store.close();
        for (const s of [...clients, ...upstreams]) s.destroy();
        await new Promise<void>((resolve) => proxy.close(() => resolve()));
      }
    });
  });
  describe('reconciliation queue and outcome records', () => {
    const stores: RedisPaymentsStore[] = [];
    const open = (keyPrefix = prefix(), options: { operationTimeoutMs?: number } = {}) => {
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix, logger: recordingLogger(), ...options });
      stores.push(store);
      return store;
    };
    const pendingEntry = (): PendingPayment => ({
      paymentId: `pay_${randomUUID()}`,
      amount: '1000',
      createdAt: '2025-01-01T00:00:00.000Z',
      checks: 1,
    });
    const outcome = (overrides: Partial<OutcomeRecord> = {}): OutcomeRecord => ({
      paymentId: `pay_${randomUUID()}`,
      outcome: 'confirmed',
      status: 'SUCCESS',
      source: 'webhook',
      handlers: 'succeeded',
      attempts: 1,
      updatedAt: '2025-01-01T00:00:00.000Z',
      ...overrides,
    });

    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s.close()));
    });

    it('keeps the queue in <prefix>pending:due (by due time) and <prefix>pending:entries, and leases by pushing the score', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      const entry = pendingEntry();
      await store.schedulePending(entry, 1000);
      expect(await admin.zscore(`${keyPrefix}pending:due`, entry.paymentId)).toBe('1000');
      expect(JSON.parse((await admin.hget(`${keyPrefix}pending:entries`, entry.paymentId))!)).toEqual(entry);
      await expect(store.takeDuePending(1500, 10, 700)).resolves.toEqual([entry]);
      expect(await admin.zscore(`${keyPrefix}pending:due`, entry.paymentId)).toBe('2200');
      await store.removePending(entry.paymentId);
      expect(await admin.exists(`${keyPrefix}pending:due`, `${keyPrefix}pending:entries`)).toBe(0);
      await expect(store.countPending()).resolves.toBe(0);
    });

    it('drops a queued id whose entry is missing instead of offering it forever', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      await admin.zadd(`${keyPrefix}pending:due`, 5, 'ghost');
      await expect(store.takeDuePending(10, 10, LONG_MS)).resolves.toEqual([]);
      expect(await admin.zscore(`${keyPrefix}pending:due`, 'ghost')).toBeNull();
    });

    it('on two connections taking the queue at once, gives each due entry to exactly one taker', async () => {
      const shared = prefix();
      const [a, b] = [open(shared), open(shared)];
      await Promise.all([a.ping(), b.ping()]);
      const entries = Array.from({ length: 40 }, pendingEntry);
      for (const [i, e] of entries.entries()) await a.schedulePending(e, 100 + (i % 7));
      const takes = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).takeDuePending(200, 4, LONG_MS)),
      );
      const ids = takes.flat().map((e) => e.paymentId);
      expect(ids).toHaveLength(40);
      expect(new Set(ids).size).toBe(40);
      await expect(b.takeDuePending(200, 100, LONG_MS)).resolves.toEqual([]);
    });

    it('gives a story and a tally bucket a TTL within the retention, so that Redis deletes them', async () => {
      const keyPrefix = prefix();
      const store = new RedisPaymentsStore(REDIS_URL, {
        keyPrefix,
        logger: recordingLogger(),
        story: { retentionSecs: 2, bucketSecs: 1 },
      });
      try {
        const bucket = Math.floor(Date.now() / 1000) * 1000;
        await store.story!.append({
          registration: 'r',
          entries: [
            {
              paymentId: 'pay-1',
              at: '2030-01-01T00:00:00.000Z',
              instance: 'h:1',
              source: 'webhook',
              kind: 'verify',
              answer: 'x',
            },
          ],
          tallies: [{ bucket, name: 'settled', by: 1 }],
        });
        const [entries, tally] = [`${keyPrefix}{story:r}:entries:pay-1`, `${keyPrefix}{story:r}:tally:${bucket}`];
        const [entriesTtl, tallyTtl] = [await admin.pttl(entries), await admin.pttl(tally)];
        expect(entriesTtl).toBeGreaterThan(0);
        expect(entriesTtl).toBeLessThanOrEqual(2000);
        // Kept the retention after the bucket ends: at most one bucket more.
        expect(tallyTtl).toBeGreaterThan(0);
        expect(tallyTtl).toBeLessThanOrEqual(bucket + 1000 + 2000 - (Date.now() - 50));
        await sleep(3200);
        expect(await admin.exists(entries, tally)).toBe(0);
      } finally {
        await store.close();
      }
    });

    it('writes a record under <prefix>outcome:<paymentId> with its TTL, indexed by update time', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      const saved = outcome({ updatedAt: '2025-03-04T05:06:07.089Z' });
      await store.saveOutcome(saved, 5000);
      const key = `${keyPrefix}outcome:${saved.paymentId}`;
      expect(JSON.parse((await admin.get(key))!)).toEqual(saved);
      expect(await admin.pttl(key)).toBeGreaterThan(4000);
      expect(Number(await admin.zscore(`${keyPrefix}outcomes:index`, saved.paymentId))).toBe(
        -Date.parse(saved.updatedAt),
      );
    });

    it('drops index members of expired records as later records are saved', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      for (let i = 0; i < 3; i++) await store.saveOutcome(outcome(), 50);
      expect(await admin.zcard(`${keyPrefix}outcomes:index`)).toBe(3);
      await sleep(150);
      const kept = outcome();
      await store.saveOutcome(kept, LONG_MS);
      expect(await admin.zrange(`${keyPrefix}outcomes:index`, '0', '-1')).toEqual([kept.paymentId]);
      expect(await admin.zrange(`${keyPrefix}outcomes:expiry`, '0', '-1')).toEqual([kept.paymentId]);
    });

    it('bounds one listOutcomes call, and still pages through every match exactly once', async () => {
      const store = open();
      // A filter without an index of its own (handlers 'none') reads the index of every record.
      // 1100 newer records that do not match, in front of 3 older ones that do.
      const noise = Array.from({ length: 1100 }, (_, i) =>
        outcome({ updatedAt: new Date(Date.UTC(2030, 0, 1) + i * 1000).toISOString() }),
      );
      for (let i = 0; i < noise.length; i += 100)
        await Promise.all(noise.slice(i, i + 100).map((r) => store.saveOutcome(r, LONG_MS)));
      const wanted = [0, 1, 2].map((i) =>
        outcome({ handlers: 'none', updatedAt: new Date(Date.UTC(2020, 0, 1) + i * 1000).toISOString() }),
      );
      for (const r of wanted) await store.saveOutcome(r, LONG_MS);
      const first = await store.listOutcomes({ handlers: 'none', limit: 10 });
      // The first call stopped at its scan budget, inside the noise: nothing yet, but a cursor.
      expect(first.items).toEqual([]);
      expect(first.nextCursor).toBeDefined();
      const seen: OutcomeRecord[] = [];
      let cursor = first.nextCursor;
      while (cursor !== undefined) {
        const page = await store.listOutcomes({ handlers: 'none', limit: 10, cursor });
        seen.push(...page.items);
        cursor = page.nextCursor;
      }
      expect(seen.map((r) => r.paymentId)).toEqual([...wanted].reverse().map((r) => r.paymentId));
    });

    it('keeps a filter index per outcome but confirmed and one of failed handlers, moving a record as it changes', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      const by = `${keyPrefix}outcomes:by:`;
      const record = outcome({ outcome: 'pending', handlers: 'none', updatedAt: '2025-03-04T05:06:07.089Z' });
      await store.saveOutcome(record, LONG_MS);
      expect(Number(await admin.zscore(`${by}outcome:pending`, record.paymentId))).toBe(-Date.parse(record.updatedAt));
      const failing = { ...record, outcome: 'confirmed' as const, handlers: 'failed' as const };
      await store.saveOutcome(failing, LONG_MS);
      expect(await admin.zscore(`${by}outcome:pending`, record.paymentId)).toBeNull();
      expect(await admin.zscore(`${by}handlers:failed`, record.paymentId)).not.toBeNull();
      expect(await admin.keys(`${by}outcome:*`)).toEqual([]);
      await store.saveOutcome({ ...failing, handlers: 'succeeded' }, LONG_MS);
      expect(await admin.zcard(`${by}handlers:failed`)).toBe(0);
      // An expired record leaves its filter index with the others.
      const gone = outcome({ outcome: 'mismatch', handlers: 'none' });
      await store.saveOutcome(gone, 50);
      expect(await admin.zcard(`${by}outcome:mismatch`)).toBe(1);
      await sleep(150);
      await store.saveOutcome(outcome(), LONG_MS);
      expect(await admin.zcard(`${by}outcome:mismatch`)).toBe(0);
    });

    it('builds the filter indexes of records written before them, a step per filtered list, then reads them', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      // 1500 records as an earlier version wrote them (record, index and expiry, no filter
      // index): the 3 oldest are mismatches, beyond one call's scan budget of the index of every record.
      const at = (i: number) => new Date(Date.UTC(2030, 0, 1) - i * 1000).toISOString();
      const records = Array.from({ length: 1500 }, (_, i) =>
        outcome(i >= 1497 ? { outcome: 'mismatch', handlers: 'none', updatedAt: at(i) } : { updatedAt: at(i) }),
      );
      const write = admin.pipeline();
      for (const r of records) {
        write.set(`${keyPrefix}outcome:${r.paymentId}`, JSON.stringify(r), 'PX', LONG_MS);
        write.zadd(`${keyPrefix}outcomes:index`, -Date.parse(r.updatedAt), r.paymentId);
        write.zadd(`${keyPrefix}outcomes:expiry`, Date.now() + LONG_MS, r.paymentId);
      }
      await write.exec();
      const mismatches = records.slice(1497).map((r) => r.paymentId);
      const listAll = async () => {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listOutcomes({ outcome: 'mismatch', limit: 10, cursor });
          seen.push(...page.items.map((r) => r.paymentId));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return seen;
      };
      // While the build goes on, the index of every record is read: every match, once.
      expect(await listAll()).toEqual(mismatches);
      expect(await admin.exists(`${keyPrefix}outcomes:by:ready`)).toBe(1);
      expect(await admin.zrange(`${keyPrefix}outcomes:by:outcome:mismatch`, '0', '-1')).toEqual(mismatches);
      // Built: one call reads the 3 matches, past the 1497 records before them.
      await expect(store.listOutcomes({ outcome: 'mismatch', limit: 10 })).resolves.toEqual({
        items: records.slice(1497),
      });
      // A filter the records' outcome has no index for still reads the index of every record.
      expect((await store.listOutcomes({ outcome: 'confirmed', limit: 5 })).items).toHaveLength(5);
    });

    it("works under a host client's own ioredis keyPrefix", async () => {
      const hostPrefix = `${RUN_PREFIX}host2:`;
      const client = new Redis(REDIS_URL, { keyPrefix: hostPrefix, maxRetriesPerRequest: 1 });
      try {
        const store = new RedisPaymentsStore(client, { keyPrefix: 'app:' });
        const entry = pendingEntry();
        await store.schedulePending(entry, 1);
        await expect(store.takeDuePending(2, 5, LONG_MS)).resolves.toEqual([entry]);
        await expect(store.findPending(entry.paymentId)).resolves.toEqual(entry);
        expect(await admin.hexists(`${hostPrefix}app:pending:entries`, entry.paymentId)).toBe(1);
        const saved = outcome();
        await store.saveOutcome(saved, LONG_MS);
        expect(await admin.exists(`${hostPrefix}app:outcome:${saved.paymentId}`)).toBe(1);
        await expect(store.getOutcome(saved.paymentId)).resolves.toEqual(saved);
        await expect(store.listOutcomes()).resolves.toEqual({ items: [saved] });
      } finally {
        await closeClient(client);
      }
    });

    it('treats queue entries and records it did not write as absent', async () => {
      const keyPrefix = prefix();
      const store = open(keyPrefix);
      await admin.hset(`${keyPrefix}pending:entries`, 'p', '{"paymentId":"p"}');
      await admin.set(`${keyPrefix}outcome:o`, 'not json', 'PX', 5000);
      await expect(store.findPending('p')).resolves.toBeUndefined();
      await expect(store.getOutcome('o')).resolves.toBeUndefined();
    });

    it('pings, and rejects ping within the operation timeout when Redis is unreachable', async () => {
      await expect(open().ping()).resolves.toBeUndefined();
      const down = new RedisPaymentsStore(`redis://127.0.0.1:${await closedPort()}`, {
        logger: recordingLogger(),
        operationTimeoutMs: 300,
      });
      try {
        await expect(down.ping()).rejects.toThrow();
      } finally {
        await down.close();
      }
    });
  });

  describe('a claim that completes after the client gave up (#13.4)', () => {
    /** A round trip on the store's own connection, tried until one comes back within its bound. */
    async function pingUntilAnswered(store: RedisPaymentsStore): Promise<void> {
      for (let i = 0; ; i++) {
        try {
          return await store.ping();
        } catch (error) {
          if (i === 50) throw error;
        }
      }
    }

    it('is freed by release() from the same owner, instead of blocking redeliveries for its lease', async () => {
      const keyPrefix = prefix();
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix, operationTimeoutMs: 50, logger: recordingLogger() });
      const [released, control] = [`payment.confirmed:${randomUUID()}`, `payment.confirmed:${randomUUID()}`];
      try {
        // The 50 ms bound is there to give up on the paused writes below; a loaded machine can pass
        // it on any call, this first round trip included.
        await pingUntilAnswered(store);
        // Redis holds every write (scripts included) until UNPAUSE; the store's clock runs on.
        await admin.call('CLIENT', 'PAUSE', '5000', 'WRITE');
        try {
          await expect(store.claim(released, 'attempt-1', LONG_MS)).rejects.toThrow(/timed out/i);
          await expect(store.claim(control, 'attempt-2', LONG_MS)).rejects.toThrow(/timed out/i);
          // What the processor does after a timed-out claim; it may time out as well, and still
          // goes out after the claim on the same connection.
          await store.release(released, 'attempt-1').catch(() => undefined);
        } finally {
          await admin.call('CLIENT', 'UNPAUSE');
        }
        // A round trip on the store's own connection: everything sent before it has run.
        await pingUntilAnswered(store);
        // The late claims did land: the one not released blocks other owners for its lease...
        expect(await admin.get(`${keyPrefix}event:${control}`)).toBe('claimed:attempt-2');
        // (the redelivery comes through a store of the default timeout: the 50 ms one above is
        // there to give up on the paused writes, and a loaded machine can pass it on any call)
        const redelivery = new RedisPaymentsStore(REDIS_URL, { keyPrefix, logger: recordingLogger() });
        try {
          await expect(redelivery.claim(control, 'redelivery', LONG_MS)).resolves.toBe('busy');
          // ...and the released one lets the redelivery in.
          expect(await admin.get(`${keyPrefix}event:${released}`)).toBeNull();
          await expect(redelivery.claim(released, 'redelivery', LONG_MS)).resolves.toBe('claimed');
        } finally {
          await redelivery.close();
        }
      } finally {
        await store.close();
      }
    });
  });
});
