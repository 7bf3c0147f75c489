// The Nest app of the webhook-ingest benchmark, in its own process: the plugin's webhook route
// (guard, parse, claim, emit, a trivial @OnPaymentConfirmed handler) and a bare POST route
// returning 200, on the same Express adapter. Pre-issues genuine signed tokens bound to distinct
// payments in its store and hands them to the load generator.
import 'reflect-metadata';
import { Controller, HttpCode, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { pathToFileURL } from 'node:url';

const [storeKind, countArg, redisUrl, distDir] = process.argv.slice(2);
// The build under test: ../dist, or the build from before the fixes that run.mjs prepares.
const dist = distDir ? pathToFileURL(`${distDir}/`).href : new URL('../dist/', import.meta.url).href;
const { MemoryPaymentsStore, OnPaymentConfirmed, PaymentsModule } = await import(`${dist}index.js`);
const { WebhookTokenSigner } = await import(`${dist}core/webhook.token.js`);
const TOKENS = Number(countArg ?? 60_000);
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const TTL_MS = 3_600_000;

let store;
let keyPrefix;
let redis;
if (storeKind === 'redis') {
  const { RedisPaymentsStore } = await import(new URL('../dist/redis/index.js', import.meta.url).href);
  const { Redis } = await import('ioredis');
  keyPrefix = `nestjs-payments-bench:${process.pid}:${Date.now()}:`;
  redis = new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  store = new RedisPaymentsStore(redis, { keyPrefix });
} else {
  store = new MemoryPaymentsStore();
}

let handled = 0;
class Handler {
  onConfirmed() {
    handled++;
  }
}
Injectable()(Handler);
OnPaymentConfirmed()(Handler.prototype, 'onConfirmed', Object.getOwnPropertyDescriptor(Handler.prototype, 'onConfirmed'));

class BareController {
  ok() {
    return { received: true };
  }
}
Controller('bare')(BareController);
const okDescriptor = Object.getOwnPropertyDescriptor(BareController.prototype, 'ok');
Post()(BareController.prototype, 'ok', okDescriptor);
HttpCode(200)(BareController.prototype, 'ok', okDescriptor);

class BenchModule {}
Module({
  imports: [
    PaymentsModule.forRoot({
      publicKey: 'pk_bench',
      privateKey: 'sk_bench_private',
      baseUrl: 'http://127.0.0.1:9',
      webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
      store,
    }),
  ],
  controllers: [BareController],
  providers: [Handler],
})(BenchModule);

const app = await NestFactory.create(BenchModule, { logger: false });
await app.listen(0, '127.0.0.1');
const port = app.getHttpServer().address().port;

// Genuine tokens, as generatePayment would have issued them (same signer, same binding).
const signer = new WebhookTokenSigner(SECRET);
const tokens = [];
const createdAt = new Date().toISOString();
for (let i = 0; i < TOKENS; i += 1000) {
  const batch = [];
  for (let j = i; j < Math.min(TOKENS, i + 1000); j++) {
    const { token, nonce } = signer.issue();
    const paymentId = `pay_${process.pid}_${j}`;
    tokens.push([token, paymentId]);
    batch.push(store.saveBinding(nonce, { paymentId, amount: '12500', developerTrackingId: `order-${j}`, createdAt }, TTL_MS));
  }
  await Promise.all(batch);
}

// Server-side CPU per request: less sensitive than req/s to other load on the machine.
let requests = 0;
app.getHttpServer().on('request', () => requests++);

process.send({ type: 'ready', port, tokens });
process.on('message', async (message) => {
  if (message?.type === 'handled') process.send({ type: 'handled', handled });
  if (message?.type === 'mark') {
    const cpu = process.cpuUsage();
    process.send({ type: 'mark', cpuUs: cpu.user + cpu.system, requests });
  }
  if (message?.type === 'stop') {
    await app.close();
    if (redis) {
      // Leave nothing behind in the shared Redis.
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 5000);
        if (keys.length) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await redis.quit();
    }
    process.exit(0);
  }
});
