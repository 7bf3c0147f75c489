// The Nest app of the webhook-ingest benchmark, in its own process: the plugin's webhook route
// (guard, parse, claim, verify_payment to the stub, a trivial @OnPaymentConfirmed handler, done
// marker), a bare POST route returning 200, and the baseline of a hand-written webhook handler
// (one GET verify_payment to the same stub through a tuned axios instance, then 200), on the same
// Express adapter. Pre-issues genuine signed tokens bound to distinct payments in its store (as
// generatePayment does) and hands them to the load generator.
//
//   node webhook-app.mjs <memory|redis|pglite|postgres> <tokens> <stubUrl> <redisUrl> <postgresUrl> <off|on|http|http-on> [story]
//
// The last argument, tracing: `off`, no SDK and `telemetry: false` (an app without
// OpenTelemetry); `on`, the OpenTelemetry SDK with no-op exporters (tracing.mjs) registered
// globally before the app starts, and the plugin's telemetry; `http`, the SDK and a SERVER span
// around every request, active while the app handles it (what @opentelemetry/instrumentation-http
// does in an instrumented app), but the plugin's `telemetry: false`; `http-on`, the same and the
// plugin's telemetry. The optional last one, `on` or `off`, sets the store's `story` option (the
// payments' stories and tallies the desk shows) over BENCH_STORY.
import 'reflect-metadata';
import http from 'node:http';
import axios from 'axios';
import { Body, Controller, HttpCode, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

const [storeKind, countArg, stubUrl, redisUrl, postgresUrl, tracingArg, storyArg] = process.argv.slice(2);
const TRACING = tracingArg === 'on' || tracingArg === 'http-on';
const HTTP_SPANS = tracingArg === 'http' || tracingArg === 'http-on';
const sdk = tracingArg !== 'off' ? (await import('./tracing.mjs')).startTracing({ global: true }) : undefined;
// BENCH_DIST: another build to load (a copy of dist/ from before a change, measured beside this one).
const dist = process.env.BENCH_DIST
  ? new URL(`${process.env.BENCH_DIST.replace(/\/?$/, '/')}`, `file://${process.cwd()}/`).href
  : new URL('../dist/', import.meta.url).href;
const { OnPaymentConfirmed, PaymentsModule } = await import(`${dist}index.js`);
const { MemoryPaymentsStore } = await import(`${dist}store/index.js`);
const { WebhookTokenSigner } = await import(`${dist}core/webhook/webhook.token.js`);
const TOKENS = Number(countArg ?? 10_000);
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const TTL_MS = 3_600_000;
const PREFIX = `bench_${process.pid}_`;
const PUBLIC_KEY = 'pk_bench';
const PRIVATE_KEY = 'sk_bench_private';

// The stores as configured by default (the memory store keeps the payments' stories, Redis and
// PostgreSQL do not); BENCH_STORY=off / on: none keeps them / all do, to compare ingest with and without.
const storyMode = storyArg || process.env.BENCH_STORY;
const STORY = storyMode === 'off' ? { story: false } : storyMode === 'on' ? { story: true } : {};
// With BENCH_WIRE=1 (bench/ingest-wire.mjs), what goes to the database, counted at the driver
// (mark messages carry it): commands or statements, and the round trips they take (Redis: writes
// to the socket; pg: queries; PGlite: calls into the database). Off by default: the counting
// costs CPU that bench/run.mjs would measure.
const WIRE = process.env.BENCH_WIRE === '1';
const wire = { commands: 0, trips: 0, byName: {} };
const tally = (name) => {
  wire.commands++;
  wire.byName[name] = (wire.byName[name] ?? 0) + 1;
};
const statementName = (text) =>
  String(text)
    .replace(/\s+/g, ' ')
    .replace(/"bench_[0-9]+_/g, '"')
    .slice(0, 60);
function countRedis(redis) {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    tally(command.name === 'evalsha' ? `evalsha ${String(command.args[0]).slice(0, 8)}` : command.name);
    return send(command, stream);
  };
  redis.once('connect', () => {
    const write = redis.stream.write.bind(redis.stream);
    redis.stream.write = (...args) => (wire.trips++, write(...args));
  });
}
function countPg(Client) {
  const query = Client.prototype.query;
  Client.prototype.query = function (config, ...rest) {
    wire.trips++;
    tally(statementName(typeof config === 'string' ? config : config?.text));
    return query.call(this, config, ...rest);
  };
}
function countPglite(db) {
  // On a prototype of its own, not the instance: the store sends to an instance with a query()
  // of its own as to a transaction's (postgres.wire.ts), which would change what is measured.
  const own = Object.create(Object.getPrototypeOf(db));
  const { execProtocol, query, transaction } = Object.getPrototypeOf(db);
  own.execProtocol = function (message, ...rest) {
    wire.trips++;
    tally('execProtocol');
    return execProtocol.call(this, message, ...rest);
  };
  own.query = function (text, ...rest) {
    wire.trips++;
    tally(statementName(text));
    return query.call(this, text, ...rest);
  };
  // BEGIN and COMMIT are PGlite's own calls; the statements inside go through the transaction's query().
  own.transaction = function (callback, ...rest) {
    wire.trips += 2;
    tally('BEGIN');
    tally('COMMIT');
    return transaction.call(
      this,
      (tx) =>
        callback(
          new Proxy(tx, {
            get: (target, key) =>
              key === 'query'
                ? (text, ...args) => (wire.trips++, tally(statementName(text)), target.query(text, ...args))
                : Reflect.get(target, key),
          }),
        ),
      ...rest,
    );
  };
  Object.setPrototypeOf(db, own);
}
let store;
let cleanup = async () => {};
// The baseline of the store's kind: what a hand-written handler does after its verify call to
// record the payment in the same kind of database (see `recordPaid` below). Orders are rows
// `ord_<n>`, n < ORDERS, updated in turn, so that no two requests in flight wait for one row.
const ORDERS = 20_000;
let recordPaid;
// The guarded baseline of the store's kind: what a hand-written handler must add to be as safe as
// the store against a redelivery racing the first delivery on another instance (the webhook's
// promise of one handler run per payment): a claim on the payment, written where every instance
// sees it before the verify call (see `claimPayment` below), then `recordPaid` as above.
let claimPayment;
if (storeKind === 'redis') {
  const { RedisPaymentsStore } = await import(`${dist}redis/index.js`);
  const { Redis } = await import('ioredis');
  const keyPrefix = `nestjs-payments-bench:${process.pid}:${Date.now()}:`;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  if (WIRE) countRedis(redis);
  store = new RedisPaymentsStore(redis, { keyPrefix, ...STORY });
  // One write: the order marked paid, unless it already was (a repeated webhook).
  recordPaid = (orderId) => redis.set(`${keyPrefix}order:${orderId}`, 'paid', 'NX');
  // One write: the payment claimed for 30 s unless another instance holds it.
  claimPayment = async (paymentId) =>
    (await redis.set(`${keyPrefix}claim:${paymentId}`, String(process.pid), 'PX', 30_000, 'NX')) === 'OK';
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
    if (WIRE) countPglite(db);
    cleanup = () => db.close();
  } else {
    const pg = await import('pg');
    if (WIRE) countPg((pg.default ?? pg).Client);
    db = new (pg.default ?? pg).Pool({ connectionString: postgresUrl, max: 10 });
    cleanup = async () => {
      // Own tables only (the prefix has this process' id), then the pool.
      const { rows } = await db.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1`, [`${PREFIX}%`]);
      for (const { tablename } of rows) await db.query(`DROP TABLE IF EXISTS "${tablename}" CASCADE`);
      await db.end();
    };
  }
  store = new PostgresPaymentsStore(db, { tablePrefix: PREFIX, ...STORY });
  // Not `${PREFIX}orders`: that is the store's own order ledger (same prefix).
  const orders = `"${PREFIX}shop_orders"`;
  await db.query(`CREATE TABLE ${orders} (id text PRIMARY KEY, status text NOT NULL, paid_at timestamptz)`);
  await db.query(
    `INSERT INTO ${orders} (id, status) SELECT 'ord_' || n, 'unpaid' FROM generate_series(0, ${ORDERS - 1}) AS n`,
  );
  const claims = `"${PREFIX}shop_claims"`;
  await db.query(`CREATE TABLE ${claims} (payment_id text PRIMARY KEY, until timestamptz NOT NULL)`);
  // One statement in a transaction of its own (committed before the verify call, as the claim must
  // be): the payment claimed for 30 s unless a live claim holds it.
  const CLAIM =
    `INSERT INTO ${claims} (payment_id, until) VALUES ($1, now() + interval '30 seconds') ` +
    `ON CONFLICT (payment_id) DO UPDATE SET until = excluded.until WHERE ${claims}.until < now() RETURNING 1`;
  claimPayment = async (paymentId) => (await db.query(CLAIM, [paymentId])).rows.length === 1;
  // One transaction on one connection, as an order service writes it: the order marked paid.
  const UPDATE = `UPDATE ${orders} SET status = 'paid', paid_at = now() WHERE id = $1`;
  recordPaid =
    storeKind === 'pglite'
      ? (orderId) => db.transaction((tx) => tx.query(UPDATE, [orderId]))
      : async (orderId) => {
          const client = await db.connect();
          try {
            await client.query('BEGIN');
            await client.query(UPDATE, [orderId]);
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          } finally {
            client.release();
          }
        };
} else {
  store = new MemoryPaymentsStore(STORY);
}

let handled = 0;
class Handler {
  onConfirmed() {
    handled++;
  }
}
Injectable()(Handler);
OnPaymentConfirmed()(
  Handler.prototype,
  'onConfirmed',
  Object.getOwnPropertyDescriptor(Handler.prototype, 'onConfirmed'),
);

class BareController {
  ok() {
    return { received: true };
  }
}
Controller('bare')(BareController);
const okDescriptor = Object.getOwnPropertyDescriptor(BareController.prototype, 'ok');
Post()(BareController.prototype, 'ok', okDescriptor);
HttpCode(200)(BareController.prototype, 'ok', okDescriptor);

// The least a hand-written webhook handler must do: ask the service about the payment (one GET
// verify_payment, tuned axios: keep-alive, no redirects) and answer. No token, no claim, no
// handler, no record: the floor any store's row is compared with, beside the bare route.
const verifier = axios.create({
  baseURL: stubUrl,
  httpAgent: new http.Agent({ keepAlive: true }),
  maxRedirects: 0,
  timeout: 10_000,
  headers: { Authorization: `Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`, Accept: 'application/json' },
});
class VerifyBaselineController {
  async verify(body) {
    const { data } = await verifier.get(`/api/v2/verify_payment/${encodeURIComponent(String(body?.payment_id))}`);
    if (data?.success !== true || data.result?.status !== 'SUCCESS') throw new Error('unexpected verify answer');
    return { received: true };
  }
}
Controller('verify-baseline')(VerifyBaselineController);
const verifyDescriptor = Object.getOwnPropertyDescriptor(VerifyBaselineController.prototype, 'verify');
Post()(VerifyBaselineController.prototype, 'verify', verifyDescriptor);
HttpCode(200)(VerifyBaselineController.prototype, 'verify', verifyDescriptor);
Body()(VerifyBaselineController.prototype, 'verify', 0);

// The baseline of the store's kind (Redis, PGlite, PostgreSQL): the verify call, then the order
// recorded as paid in that database (one write, or one transaction).
class RecordBaselineController {
  async record(body) {
    const id = String(body?.payment_id);
    const { data } = await verifier.get(`/api/v2/verify_payment/${encodeURIComponent(id)}`);
    if (data?.success !== true || data.result?.status !== 'SUCCESS') throw new Error('unexpected verify answer');
    await recordPaid(`ord_${Number(id.slice(id.lastIndexOf('_') + 1)) % ORDERS}`);
    return { received: true };
  }
}
Controller('record-baseline')(RecordBaselineController);
const recordDescriptor = Object.getOwnPropertyDescriptor(RecordBaselineController.prototype, 'record');
Post()(RecordBaselineController.prototype, 'record', recordDescriptor);
HttpCode(200)(RecordBaselineController.prototype, 'record', recordDescriptor);
Body()(RecordBaselineController.prototype, 'record', 0);

// The guarded baseline (Redis, PGlite, PostgreSQL): the payment claimed, the verify call, then the
// order recorded as the baseline of the store's kind records it. A claim held elsewhere answers
// 200 without a verify call, as the store's webhook route answers a delivery already in hand.
class GuardedBaselineController {
  async guarded(body) {
    const id = String(body?.payment_id);
    if (!(await claimPayment(id))) return { received: true };
    const { data } = await verifier.get(`/api/v2/verify_payment/${encodeURIComponent(id)}`);
    if (data?.success !== true || data.result?.status !== 'SUCCESS') throw new Error('unexpected verify answer');
    await recordPaid(`ord_${Number(id.slice(id.lastIndexOf('_') + 1)) % ORDERS}`);
    return { received: true };
  }
}
Controller('guarded-baseline')(GuardedBaselineController);
const guardedDescriptor = Object.getOwnPropertyDescriptor(GuardedBaselineController.prototype, 'guarded');
Post()(GuardedBaselineController.prototype, 'guarded', guardedDescriptor);
HttpCode(200)(GuardedBaselineController.prototype, 'guarded', guardedDescriptor);
Body()(GuardedBaselineController.prototype, 'guarded', 0);

class BenchModule {}
Module({
  imports: [
    PaymentsModule.forRoot({
      publicKey: PUBLIC_KEY,
      privateKey: PRIVATE_KEY,
      baseUrl: stubUrl,
      webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
      reconciliation: { enabled: false },
      telemetry: TRACING ? undefined : false,
      store,
    }),
  ],
  controllers: recordPaid
    ? [BareController, VerifyBaselineController, RecordBaselineController, GuardedBaselineController]
    : [BareController, VerifyBaselineController],
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

if (HTTP_SPANS) {
  // A SERVER span per request, active while the app handles it (as instrumentation-http would).
  const { context, trace, SpanKind } = await import('@opentelemetry/api');
  const tracer = trace.getTracer('bench-http');
  const server = app.getHttpServer();
  const listeners = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    const span = tracer.startSpan(`${req.method}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': req.method },
    });
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

let profiler;
process.send({ type: 'ready', port, tokens, recordBaseline: recordPaid !== undefined });
process.on('message', async (message) => {
  if (message?.type === 'handled') process.send({ type: 'handled', handled });
  if (message?.type === 'mark') {
    const cpu = process.cpuUsage();
    process.send({ type: 'mark', cpuUs: cpu.user + cpu.system, requests, handled, wire: structuredClone(wire) });
  }
  // A CPU profile of what happens between two messages (bench/profile-app.mjs), start-up left out.
  if (message?.type === 'profile-start') {
    const { Session } = await import('node:inspector/promises');
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
    process.send({ type: 'profile-started' });
  }
  if (message?.type === 'profile-stop' && profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    profiler.disconnect();
    profiler = undefined;
    process.send({ type: 'profile', profile });
  }
  if (message?.type === 'stop') {
    await app.close();
    await cleanup();
    await sdk?.shutdown();
    process.exit(0);
  }
});
