import { expect, it } from '@jest/globals';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import type { PaymentConfirmedEvent } from '../../lib/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { OK, PATHS } from '../support/fake-service.js';
import { tokenOf, verifyCount } from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';
import { settle, useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// Plain Express: `await payments.close()` on shutdown must let confirmations in flight finish and
// be marked done before the store closes, and refuse (503) the ones that arrive meanwhile.

const SECRET = 'whsec_express_shutdown_0123456789abcdef01';
const fakeService = useFakeServiceWithoutUnhandledRejections();
let counter = 0;

async function startExpress(client: PaymentsClient, onPaymentConfirmed: (e: PaymentConfirmedEvent) => Promise<void>) {
  const app = express();
  app.use('/hook', createWebhookRouter({ client, onPaymentConfirmed }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` };
}

async function generate(client: PaymentsClient) {
  const paymentId = `pay_express_shutdown_${++counter}`;
  fakeService().reply(PATHS.generate, OK.generate(paymentId));
  await client.generatePayment({ amount: '100' });
  fakeService().always(verifyPath(paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 100 }) });
  return { paymentId, token: tokenOf(JSON.parse(fakeService().requests.at(-1)!.body).webhook) };
}

async function deliver(url: string, p: { paymentId: string; token: string }) {
  const res = await fetch(`${url}/${p.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payment_id: p.paymentId }),
  });
  return { status: res.status, body: await res.json() };
}

const redisUp = await redisAvailable();
describeWithService(redisUp, `no Redis at ${REDIS_URL}`)('plain Express shutdown with a Redis store', () => {
  it('close() waits for the confirmation in flight, which is marked done; one arriving meanwhile gets 503; a restarted app runs only that one', async () => {
    const keyPrefix = `nestjs-payments-express-shutdown:${process.pid}:`;
    const options = {
      publicKey: 'pk',
      privateKey: 'sk_express_shutdown',
      baseUrl: fakeService().url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET },
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    };
    const runs: string[] = [];
    const slow = async (e: PaymentConfirmedEvent) => {
      runs.push(`start ${e.paymentId}`);
      await new Promise((r) => setTimeout(r, 300));
      runs.push(`done ${e.paymentId}`);
    };
    const first = createPaymentsClient({ ...options, store: new RedisPaymentsStore(REDIS_URL, { keyPrefix }) });
    const a = await startExpress(first, slow);
    const inFlight = await generate(first);
    const late = await generate(first);

    const pending = deliver(a.url, inFlight);
    while (!runs.includes(`start ${inFlight.paymentId}`)) await settle(5);
    const closing = first.close().then(() => runs.push('closed'));
    await settle(20);
    expect(await deliver(a.url, late)).toEqual({ status: 503, body: { received: false, error: 'shutting down' } });
    expect(await pending).toEqual({ status: 200, body: { received: true } });
    await closing;
    expect(runs.indexOf(`done ${inFlight.paymentId}`)).toBeLessThan(runs.indexOf('closed'));
    a.server.closeAllConnections();
    await new Promise((r) => a.server.close(r));

    // The restarted app (its own store, same Redis): the done one runs nothing, the refused one runs once.
    const second = createPaymentsClient({ ...options, store: new RedisPaymentsStore(REDIS_URL, { keyPrefix }) });
    const b = await startExpress(second, slow);
    try {
      expect(await deliver(b.url, inFlight)).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(await deliver(b.url, late)).toEqual({ status: 200, body: { received: true } });
      expect(runs.filter((r) => r.startsWith('done'))).toEqual([
        `done ${inFlight.paymentId}`,
        `done ${late.paymentId}`,
      ]);
      // The refused delivery and the duplicate cost no verify call.
      expect([verifyCount(fakeService(), inFlight.paymentId), verifyCount(fakeService(), late.paymentId)]).toEqual([
        1, 1,
      ]);
    } finally {
      await second.close();
      b.server.closeAllConnections();
      await new Promise((r) => b.server.close(r));
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
    }
  });
});
