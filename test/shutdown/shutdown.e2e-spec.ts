import { describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, type PaymentConfirmedEvent } from '../../lib/index.js';
import { MemoryPaymentsStore, type PaymentsStore } from '../../lib/store/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { OK, PATHS } from '../support/fake-service.js';
import { tokenOf, verifyCount } from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';
import { settle, useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// Graceful shutdown: app.close() while confirmations are in flight lets them finish (200, handler
// done, marked done); deliveries arriving during shutdown get 503 and are redelivered; a new app
// sharing the store then runs each confirmation exactly once. Nothing half-done is marked done.
// Every delivery is only a hint: the service (the fake) verifies each payment as SUCCESS.

const SECRET = 'whsec_shutdown_0123456789abcdef0123456789';
const HANDLER_MS = 400;

/** Records every start and end of the handler; slow; fails for chosen payments. */
@Injectable()
class SlowHandler {
  static readonly journal: string[] = [];
  static readonly failFor = new Set<string>();
  static readonly started = new Set<string>();

  @OnPaymentConfirmed()
  async onConfirmed(event: PaymentConfirmedEvent) {
    SlowHandler.started.add(event.paymentId);
    SlowHandler.journal.push(`start ${event.paymentId}`);
    await new Promise((r) => setTimeout(r, HANDLER_MS));
    if (SlowHandler.failFor.has(event.paymentId)) {
      SlowHandler.journal.push(`fail ${event.paymentId}`);
      throw new Error('the database went away during shutdown');
    }
    SlowHandler.journal.push(`done ${event.paymentId}`);
  }
}

const fakeService = useFakeServiceWithoutUnhandledRejections();
let counter = 0;

interface Running {
  app: INestApplication;
  url: string;
}

async function start(adapter: 'express' | 'fastify', store: PaymentsStore): Promise<Running> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PaymentsModule.forRoot({
        publicKey: 'pk',
        privateKey: 'sk_shutdown_private',
        baseUrl: fakeService().url,
        successLink: 'https://shop.example/ok',
        failLink: 'https://shop.example/ko',
        webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
        store,
        logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      }),
    ],
    providers: [SlowHandler],
  }).compile();
  const app =
    adapter === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}

async function generate(running: Running, tag: string) {
  const paymentId = `pay_${tag}_${++counter}`;
  fakeService().reply(PATHS.generate, OK.generate(paymentId));
  await running.app.get(PaymentsService).generatePayment({ amount: '1000' });
  const token = tokenOf(JSON.parse(fakeService().requests.at(-1)!.body).webhook);
  fakeService().always(verifyPath(paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 1000 }) });
  return { paymentId, token };
}

async function deliver(running: Running, p: { paymentId: string; token: string }) {
  const res = await fetch(`${running.url}/payments/webhook/${p.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ payment_id: p.paymentId, status: 'completed' }),
  });
  return {
    status: res.status,
    body: await res.json().catch(() => undefined),
    retryAfter: res.headers.get('retry-after'),
  };
}

async function until(predicate: () => boolean, timeoutMs = 3000) {
  const end = Date.now() + timeoutMs;
  while (!predicate() && Date.now() < end) await settle(5);
  expect(predicate()).toBe(true);
}

const runsOf = (paymentId: string) =>
  SlowHandler.journal.filter((l) => l === `done ${paymentId}` || l === `fail ${paymentId}`).length;

function scenarios(
  adapter: 'express' | 'fastify',
  makeStores: () => Promise<{ first: PaymentsStore; second: PaymentsStore; cleanup(): Promise<void> }>,
) {
  it('in-flight confirmations finish before close() resolves; one arriving meanwhile gets 503; a new app runs that one once and the others never again', async () => {
    SlowHandler.journal.length = 0;
    SlowHandler.started.clear();
    SlowHandler.failFor.clear();
    const stores = await makeStores();
    const first = await start(adapter, stores.first);
    let second: Running | undefined;
    try {
      const inFlight = await generate(first, 'inflight');
      const failing = await generate(first, 'failing');
      const late = await generate(first, 'late');
      SlowHandler.failFor.add(failing.paymentId);

      const d1 = deliver(first, inFlight);
      const d2 = deliver(first, failing);
      await until(() => SlowHandler.started.has(inFlight.paymentId) && SlowHandler.started.has(failing.paymentId));

      let closed = false;
      const closing = first.app.close().then(() => {
        closed = true;
        SlowHandler.journal.push('closed');
      });
      await settle(20);
      // A confirmation arriving while the app drains: refused with 503, to be delivered again.
      const d3 = await deliver(first, late);
      expect(d3).toEqual({ status: 503, body: { received: false, error: 'shutting down' }, retryAfter: '5' });
      expect(closed).toBe(false);

      // The ones in flight finish normally: the client gets its answer, the handler its end.
      expect(await d1).toEqual({ status: 200, body: { received: true }, retryAfter: null });
      expect(await d2).toMatchObject({ status: 500 });
      await closing;
      expect(SlowHandler.journal.indexOf(`done ${inFlight.paymentId}`)).toBeLessThan(
        SlowHandler.journal.indexOf('closed'),
      );
      expect(SlowHandler.journal.indexOf(`fail ${failing.paymentId}`)).toBeLessThan(
        SlowHandler.journal.indexOf('closed'),
      );
      expect(SlowHandler.started.has(late.paymentId)).toBe(false);

      // The service delivers again, now to a new app sharing the store.
      SlowHandler.failFor.delete(failing.paymentId);
      second = await start(adapter, stores.second);
      expect(await deliver(second, inFlight)).toEqual({
        status: 200,
        body: { received: true, duplicate: true },
        retryAfter: null,
      });
      expect(await deliver(second, failing)).toEqual({ status: 200, body: { received: true }, retryAfter: null });
      expect(await deliver(second, late)).toEqual({ status: 200, body: { received: true }, retryAfter: null });
      for (const p of [inFlight, failing, late]) {
        expect(await deliver(second, p)).toMatchObject({ status: 200, body: { received: true, duplicate: true } });
      }
      // Each confirmation's handler completed exactly once; the failed attempt was not marked done.
      expect([
        runsOf(inFlight.paymentId),
        SlowHandler.journal.filter((l) => l === `done ${failing.paymentId}`).length,
        runsOf(late.paymentId),
      ]).toEqual([1, 1, 1]);
      expect(SlowHandler.journal.filter((l) => l === `fail ${failing.paymentId}`)).toHaveLength(1);
      // Verify calls: one per attempt that ran handlers; the refused (503) and duplicate deliveries cost none.
      expect([
        verifyCount(fakeService(), inFlight.paymentId),
        verifyCount(fakeService(), failing.paymentId),
        verifyCount(fakeService(), late.paymentId),
      ]).toEqual([1, 2, 1]);
    } finally {
      await second?.app.close();
      if (!second) await first.app.close().catch(() => undefined);
      await stores.cleanup();
    }
  });

  it('close() with nothing in flight is prompt, and deliveries after it find no server (so they are retried)', async () => {
    const stores = await makeStores();
    const running = await start(adapter, stores.first);
    const p = await generate(running, 'after');
    const started = Date.now();
    await running.app.close();
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(deliver(running, p)).rejects.toThrow();
    await stores.cleanup();
  });
}

describe.each(['express', 'fastify'] as const)(
  'graceful shutdown on the %s adapter, memory store shared by both apps',
  (adapter) => {
    scenarios(adapter, async () => {
      const store = new MemoryPaymentsStore();
      return { first: store, second: store, cleanup: async () => undefined };
    });
  },
);

const redisUp = await redisAvailable();
describeWithService(redisUp, `no Redis at ${REDIS_URL}`)(
  'graceful shutdown with Redis: each app its own store and connection, one Redis',
  () => {
    const prefixes: string[] = [];
    scenarios('express', async () => {
      const keyPrefix = `nestjs-payments-shutdown-test:${process.pid}:${++counter}:`;
      prefixes.push(keyPrefix);
      const first = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
      const second = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
      return {
        first,
        second,
        cleanup: async () => {
          // Also when a test failed before an app took the store over: no connection outlives the test.
          await Promise.all([first.close(), second.close()]);
          const redis = new Redis(REDIS_URL);
          const keys = await redis.keys(`${keyPrefix}*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        },
      };
    });
  },
);

describe('one store instance shared by two running apps', () => {
  it('closing one app leaves the other working with the same store', async () => {
    const store = new MemoryPaymentsStore();
    const a = await start('express', store);
    const b = await start('express', store);
    try {
      const p = await generate(a, 'shared');
      await a.app.close();
      expect(await deliver(b, p)).toEqual({ status: 200, body: { received: true }, retryAfter: null });
    } finally {
      await b.app.close();
    }
  });

  const redisOrSkip = redisUp || process.env.CI ? it : it.skip;
  redisOrSkip('the same holds for one RedisPaymentsStore instance shared by two apps', async () => {
    const keyPrefix = `nestjs-payments-shutdown-test:${process.pid}:shared:`;
    const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
    const a = await start('express', store);
    const b = await start('express', store);
    try {
      const p = await generate(a, 'shared-redis');
      await a.app.close();
      expect(await deliver(b, p)).toEqual({ status: 200, body: { received: true }, retryAfter: null });
    } finally {
      await b.app.close();
      await store.close();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
    }
  });
});
