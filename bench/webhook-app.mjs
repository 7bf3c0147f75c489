// The Nest app of the webhook-ingest benchmark, in its own process: the plugin's webhook route
// (guard, parse, claim, verify_payment to the stub, a trivial @OnPaymentConfirmed handler, done
// marker) and a bare POST route returning 200, on the same Express adapter. Pre-issues genuine
// signed tokens bound to distinct payments in its store (as generatePayment does) and hands them
// to the load generator.
//
//   node webhook-app.mjs <memory|redis|pglite|postgres> <tokens> <stubUrl> <redisUrl> <postgresUrl> <off|sdk|on>
//
// The last argument: `off`, no SDK and `telemetry: false` (an app without OpenTelemetry); `sdk`,
// the OpenTelemetry SDK with no-op exporters (tracing.mjs) registered globally before the app
// starts, and a SERVER span around every request in its context (what
// @opentelemetry/instrumentation-http does in an instrumented app), but the plugin's
// `telemetry: false`; `on`, the same and the plugin's telemetry.
import 'reflect-metadata';
import { Controller, HttpCode, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

const [storeKind, countArg, stubUrl, redisUrl, postgresUrl, tracingArg] = process.argv.slice(2);
const TRACING = tracingArg === 'on';
const sdk = tracingArg === 'on' || tracingArg === 'sdk' ? (await import('./tracing.mjs')).startTracing({ global: true }) : undefined;
const dist = new URL('../dist/', import.meta.url).href;
const { MemoryPaymentsStore, OnPaymentConfirmed, PaymentsModule } = await import(`${dist}index.js`);
const { WebhookTokenSigner } = await import(`${dist}core/webhook.token.js`);
const TOKENS = Number(countArg ?? 10_000);
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const TTL_MS = 3_600_000;
const PREFIX = `bench_${process.pid}_`;

let store;
let cleanup = async () => {};
if (storeKind === 'redis') {
  const { RedisPaymentsStore } = await import(`${dist}redis/index.js`);
  const { Redis } = await import('ioredis');
  const keyPrefix = `nestjs-payments-bench:${process.pid}:${Date.now()}:`;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  store = new RedisPaymentsStore(redis, { keyPrefix });
  cleanup = async () => {
    // Leave nothing behind in the shared Redis.
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 5000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await redis.quit();
  };
} else if (storeKind === 'pglite' || storeKind === 'postgres') {
  const { PostgresPaymentsStore } = await import(`${dist}postgres/index.js`);
  let db;
  if (storeKind === 'pglite') {
    const { PGlite } = await import('@electric-sql/pglite');
    db = new PGlite();
    cleanup = () => db.close();
  } else {
    const pg = await import('pg');
    db = new (pg.default ?? pg).Pool({ connectionString: postgresUrl, max: 10 });
    cleanup = async () => {
      // Own tables only (the prefix has this process' id), then the pool.
      const { rows } = await db.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1`, [`${PREFIX}%`]);
      for (const { tablename } of rows) await db.query(`DROP TABLE IF EXISTS "${tablename}" CASCADE`);
      await db.end();
    };
  }
  store = new PostgresPaymentsStore(db, { tablePrefix: PREFIX });
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
      baseUrl: stubUrl,
      webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
      reconciliation: { enabled: false },
      telemetry: TRACING ? undefined : false,
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
for (let i = 0; i < TOKENS; i += 500) {
  const batch = [];
  for (let j = i; j < Math.min(TOKENS, i + 500); j++) {
    const { token, claims } = signer.issue('12500', undefined, TTL_MS);
    const paymentId = `pay_${process.pid}_${j}`;
    tokens.push([token, paymentId]);
    batch.push(store.saveBinding(claims.nonce, { paymentId, amount: '12500', createdAt }, TTL_MS));
  }
  await Promise.all(batch);
}

if (sdk) {
  // A SERVER span per request, active while the app handles it (as instrumentation-http would).
  const { context, trace, SpanKind } = await import('@opentelemetry/api');
  const tracer = trace.getTracer('bench-http');
  const server = app.getHttpServer();
  const listeners = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    const span = tracer.startSpan(`${req.method}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } });
    res.once('finish', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      span.end();
    });
    context.with(trace.setSpan(context.active(), span), () => {
      for (const listener of listeners) listener.call(server, req, res);
    });
  });
}

// Server-side CPU per request: less sensitive than req/s to other load on the machine.
let requests = 0;
app.getHttpServer().on('request', () => requests++);

process.send({ type: 'ready', port, tokens });
process.on('message', async (message) => {
  if (message?.type === 'handled') process.send({ type: 'handled', handled });
  if (message?.type === 'mark') {
    const cpu = process.cpuUsage();
    process.send({ type: 'mark', cpuUs: cpu.user + cpu.system, requests, handled });
  }
  if (message?.type === 'stop') {
    await app.close();
    await cleanup();
    await sdk?.shutdown();
    process.exit(0);
  }
});
