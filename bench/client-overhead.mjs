// The client's own cost: `generatePayment` and `verifyPayment` of the plugin against the same call
// made with raw node:http (the floor), a naive `axios.post` per call and a tuned axios instance, all
// against the same stub in another process (bench/stub-server.mjs: pre-serialised answers, near-zero
// CPU). Run by run.mjs (with --expose-gc); prints nothing, answers over IPC.
//
//   node --expose-gc client-overhead.mjs <baseUrl> <sliceMs> <rounds> [clients|telemetry]
//
// `clients` (default): the clients above, in a process with no OpenTelemetry SDK and no context
// manager (the plugin's default telemetry: `@opentelemetry/api` installed, no SDK registered), and
// the plugin with signed webhook URLs (HMAC + one memory-store write per call). `telemetry`: the
// plugin with `telemetry: false` against the plugin recording through the SDK, in a process of its
// own, since the SDK's context manager (AsyncLocalStorage) would otherwise tax every other client.
//
// With BENCH_CLIENT_STORES=redis,postgres, the plugin's generatePayment also runs on a Redis and a
// PostgreSQL store (REDIS_URL, POSTGRES_URL; loopback servers), each call a new order.
//
// With BENCH_BASELINE_DIST set to another build's dist/ directory, that build's PaymentsClient runs
// as well, in the same slices: a before/after comparison that shares the machine's load.
//
// Every variant runs in turn, for one slice each (order rotated every round), after a forced GC and
// an unmeasured fill at the slice's concurrency; CPU is process.cpuUsage() over the slice divided by
// the calls it made. Figures are medians over the rounds; the plugin's ratio and CPU over the tuned
// axios instance are medians of the per-round pairs (measured in the same round, seconds apart).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import axios from 'axios';
import { median, quantile } from './common.mjs';

const [baseUrl, sliceArg, roundsArg, modeArg] = process.argv.slice(2);
const SLICE_MS = Number(sliceArg ?? 300);
const ROUNDS = Number(roundsArg ?? 12);
const MODE = modeArg ?? 'clients';
const FILL_MS = Math.min(60, SLICE_MS / 2);
const CONCURRENCY = [1, 32];
const PUBLIC_KEY = 'pk_bench';
const PRIVATE_KEY = 'sk_bench_private_key_never_logged';
const AUTHORIZATION = `Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`;
const SUCCESS = 'https://shop.example.com/checkout/success';
const FAIL = 'https://shop.example.com/checkout/failed';
const GENERATE = '/api/v2/generate_payment';
const VERIFY = '/api/v2/verify_payment/';
const PAYMENT_ID = 'pay_bench_1';
const url = new URL(baseUrl);
const gc = globalThis.gc ?? (() => undefined);

// What every client sends for generate_payment: the wire body the plugin sends for INPUT (webhooks off).
const INPUT = { amount: '12500', developerTrackingId: 'order-42' };
// The plugin's calls each pay an order of their own, as a shop's do: with a store, a second call for
// an order whose payment is still open answers that payment without calling the service (one
// charge per order), which would measure a cache, not the client.
let orders = 0;
const order = () => ({ amount: INPUT.amount, developerTrackingId: `order-${++orders}` });
const wireBody = () => ({ amount: '12500', success_link: SUCCESS, fail_link: FAIL, developer_tracking_id: 'order-42' });
const HEADERS = { Authorization: AUTHORIZATION, Accept: 'application/json', 'Content-Type': 'application/json' };

// Every client reads the same fields out of the answer, and fails the call on anything else.
function generated(json) {
  const { payment_id: paymentId, link } = json?.result ?? {};
  if (typeof paymentId !== 'string' || typeof link !== 'string') throw new Error('unexpected answer');
  return { paymentId, link };
}
function verified(json) {
  const { status, amount } = json?.result ?? {};
  if (json?.success !== true || typeof status !== 'string' || typeof amount !== 'number')
    throw new Error('unexpected answer');
  return { paymentId: PAYMENT_ID, status, amount: String(amount) };
}

// 1. Raw node:http with a keep-alive agent: the floor.
const rawAgent = new http.Agent({ keepAlive: true });
function raw(method, path, body, read) {
  return new Promise((resolve, reject) => {
    const headers =
      body === undefined
        ? { Authorization: AUTHORIZATION, Accept: 'application/json' }
        : { ...HEADERS, 'Content-Length': Buffer.byteLength(body) };
    const req = http.request({ host: url.hostname, port: url.port, path, method, agent: rawAgent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        try {
          resolve(read(JSON.parse(text)));
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// 2. A tuned axios instance, as a merchant would write one: keep-alive agent, no redirects, a
// timeout, axios' default JSON handling.
const tunedAgent = new http.Agent({ keepAlive: true });
const tuned = axios.create({ baseURL: baseUrl, httpAgent: tunedAgent, maxRedirects: 0, timeout: 10_000 });

// 3. The pattern of most existing integrations: axios.post / axios.get with the full URL per call.
const NAIVE_HEADERS = { headers: { Authorization: AUTHORIZATION } };

const variants = [];
const add = (operation, client, call) => variants.push({ operation, client, call });
const closers = [];

async function pluginClient(dist, options) {
  const { PaymentsClient } = await import(`${dist}index.js`);
  const client = new PaymentsClient({
    publicKey: PUBLIC_KEY,
    privateKey: PRIVATE_KEY,
    baseUrl,
    successLink: SUCCESS,
    failLink: FAIL,
    ...options,
  });
  closers.push(() => client.close());
  return client;
}
const DIST = new URL('../dist/', import.meta.url).href;
const BASELINE_DIST = process.env.BENCH_BASELINE_DIST
  ? new URL(`${process.env.BENCH_BASELINE_DIST.replace(/\/?$/, '/')}`, `file://${process.cwd()}/`).href
  : undefined;
const SIGNED = {
  webhook: {
    publicUrl: 'https://shop.example.com/payments/webhook',
    secret: 'bench-secret-0123456789abcdef-0123456789',
  },
};

const STORE_NAMES = { redis: 'Redis', postgres: 'PostgreSQL' };
const STORES = (process.env.BENCH_CLIENT_STORES ?? '')
  .split(',')
  .filter((k) => k !== '')
  .map((k) => {
    if (!(k in STORE_NAMES)) throw new Error(`BENCH_CLIENT_STORES: unknown store '${k}' (redis, postgres)`);
    return k;
  });

/**
 * A Redis or PostgreSQL store of a build, under a key or table prefix of its own, and its cleanup
 * (run after the clients using it are closed).
 */
async function openStore(dist, kind) {
  const tag = `${process.pid}_${variants.length}`;
  if (kind === 'redis') {
    const { RedisPaymentsStore } = await import(`${dist}redis/index.js`);
    const { Redis } = await import('ioredis');
    const keyPrefix = `bench:client:${tag}:`;
    const store = new RedisPaymentsStore(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { keyPrefix });
    const cleanup = async () => {
      await store.close();
      const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      for (let cursor = '0'; ;) {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        if ((cursor = next) === '0') break;
      }
      await redis.quit();
    };
    return { store, cleanup };
  }
  const { PostgresPaymentsStore } = await import(`${dist}postgres/index.js`);
  const pg = (await import('pg')).default;
  const url = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const tablePrefix = `bench_client_${tag}_`;
  const store = new PostgresPaymentsStore(pool, { tablePrefix });
  const cleanup = async () => {
    const { rows } = await pool.query('SELECT tablename AS t FROM pg_tables WHERE tablename LIKE $1', [
      `${tablePrefix}%`,
    ]);
    for (const { t } of rows) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
    await pool.end();
  };
  return { store, cleanup };
}

if (MODE === 'clients') {
  add('generatePayment', 'raw', () => raw('POST', GENERATE, JSON.stringify(wireBody()), generated));
  add('generatePayment', 'naive', async () =>
    generated((await axios.post(`${baseUrl}${GENERATE}`, wireBody(), NAIVE_HEADERS)).data),
  );
  add('generatePayment', 'tuned', async () =>
    generated((await tuned.post(GENERATE, wireBody(), { headers: HEADERS })).data),
  );
  add('verifyPayment', 'raw', () => raw('GET', VERIFY + encodeURIComponent(PAYMENT_ID), undefined, verified));
  add('verifyPayment', 'naive', async () =>
    verified((await axios.get(`${baseUrl}${VERIFY}${encodeURIComponent(PAYMENT_ID)}`, NAIVE_HEADERS)).data),
  );
  add('verifyPayment', 'tuned', async () =>
    verified((await tuned.get(VERIFY + encodeURIComponent(PAYMENT_ID), { headers: HEADERS })).data),
  );
  const plugin = await pluginClient(DIST, {});
  add('generatePayment', 'plugin', () => plugin.generatePayment(order()));
  add('verifyPayment', 'plugin', () => plugin.verifyPayment(PAYMENT_ID));
  const signed = await pluginClient(DIST, SIGNED);
  add('generatePayment', 'plugin, signed webhook URL', () => signed.generatePayment(order()));
  // BENCH_CLIENT_STORES=redis,postgres: the plugin on a shared store as well (every call then
  // holds its order in that store before the service call and records it after).
  for (const kind of STORES) {
    const shared = await openStore(DIST, kind);
    const onStore = await pluginClient(DIST, { store: shared.store });
    closers.push(shared.cleanup);
    add('generatePayment', `plugin, ${STORE_NAMES[kind]} store`, () => onStore.generatePayment(order()));
    if (BASELINE_DIST) {
      const beforeShared = await openStore(BASELINE_DIST, kind);
      const beforeOnStore = await pluginClient(BASELINE_DIST, { store: beforeShared.store });
      closers.push(beforeShared.cleanup);
      add('generatePayment', `plugin, ${STORE_NAMES[kind]} store (baseline build)`, () =>
        beforeOnStore.generatePayment(order()),
      );
    }
  }
  if (BASELINE_DIST) {
    const before = await pluginClient(BASELINE_DIST, {});
    add('generatePayment', 'plugin (baseline build)', () => before.generatePayment(order()));
    add('verifyPayment', 'plugin (baseline build)', () => before.verifyPayment(PAYMENT_ID));
    const beforeSigned = await pluginClient(BASELINE_DIST, SIGNED);
    add('generatePayment', 'plugin, signed webhook URL (baseline build)', () => beforeSigned.generatePayment(order()));
  }
} else if (MODE === 'telemetry') {
  const { startTracing } = await import('./tracing.mjs');
  const sdk = startTracing({ global: false });
  closers.push(() => sdk.shutdown());
  const off = await pluginClient(DIST, { telemetry: false });
  const on = await pluginClient(DIST, {
    telemetry: { tracerProvider: sdk.tracerProvider, meterProvider: sdk.meterProvider },
  });
  add('generatePayment', 'plugin, telemetry: false', () => off.generatePayment(order()));
  add('generatePayment', 'plugin, SDK recording', () => on.generatePayment(order()));
  add('verifyPayment', 'plugin, telemetry: false', () => off.verifyPayment(PAYMENT_ID));
  add('verifyPayment', 'plugin, SDK recording', () => on.verifyPayment(PAYMENT_ID));
} else {
  throw new Error(`unknown mode ${MODE}`);
}

async function measure(call, concurrency, durationMs, keep) {
  let calls = 0;
  let errors = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + durationMs;
  const worker = async () => {
    while (performance.now() < end) {
      const start = performance.now();
      try {
        await call();
      } catch {
        errors++;
      }
      calls++;
      if (keep) keep.push(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { rps: calls / (elapsedMs / 1000), cpuUsPerCall: (cpu.user + cpu.system) / calls, calls, errors };
}

// Warm-up: JIT, sockets, module caches.
for (const v of variants) await measure(v.call, 8, Math.max(200, SLICE_MS));

const key = (v, c) => `${v.operation}|${v.client}|${c}`;
const slices = new Map();
const latencies = new Map();
for (let round = 0; round < ROUNDS; round++) {
  for (const c of CONCURRENCY) {
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(k + round) % variants.length];
      gc(); // each slice pays for its own garbage, not the previous client's
      await measure(v.call, c, FILL_MS); // fill the pipeline at this concurrency, unmeasured
      if (!latencies.has(key(v, c))) latencies.set(key(v, c), []);
      const result = await measure(v.call, c, SLICE_MS, latencies.get(key(v, c)));
      if (!slices.has(key(v, c))) slices.set(key(v, c), []);
      slices.get(key(v, c)).push(result);
    }
  }
}

const results = [];
for (const v of variants) {
  for (const c of CONCURRENCY) {
    const list = slices.get(key(v, c));
    const all = latencies.get(key(v, c)).sort((a, b) => a - b);
    results.push({
      operation: v.operation,
      client: v.client,
      concurrency: c,
      rps: median(list.map((x) => x.rps)),
      cpuUsPerCall: median(list.map((x) => x.cpuUsPerCall)),
      p50: quantile(all, 0.5),
      p99: quantile(all, 0.99),
      calls: list.reduce((s, x) => s + x.calls, 0),
      errors: list.reduce((s, x) => s + x.errors, 0),
      perRound: list.map((x) => ({ rps: x.rps, cpuUsPerCall: x.cpuUsPerCall })),
    });
  }
}

process.send({ type: 'result', mode: MODE, results, sliceMs: SLICE_MS, rounds: ROUNDS, concurrency: CONCURRENCY });
process.on('message', async (message) => {
  if (message?.type !== 'stop') return;
  for (const close of closers) await close();
  rawAgent.destroy();
  tunedAgent.destroy();
  process.exit(0);
});
