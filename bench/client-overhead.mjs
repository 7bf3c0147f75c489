// Client overhead of generatePayment: the plugin against raw node:http (the floor), a tuned
// axios instance and a naive axios.post per call, all against the same stub in another process.
// Run by run.mjs (with --expose-gc); prints nothing, answers over IPC.
import 'reflect-metadata';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import axios from 'axios';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PaymentsClient, PaymentsModule, PaymentsService } from '../dist/index.js';
import { median, quantile } from './common.mjs';
import { startTracing } from './tracing.mjs';

const [baseUrl, sliceArg, roundsArg] = process.argv.slice(2);
// Short slices, interleaved round-robin between the clients (order rotated every round), many
// rounds: load from outside the benchmark then falls on every client alike.
const SLICE_MS = Number(sliceArg ?? 300);
const ROUNDS = Number(roundsArg ?? 16);
const CONCURRENCY = [1, 32];
const PUBLIC_KEY = 'pk_bench';
const PRIVATE_KEY = 'sk_bench_private_key_never_logged';
const AUTHORIZATION = `Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`;
const SUCCESS = 'https://shop.example.com/checkout/success';
const FAIL = 'https://shop.example.com/checkout/failed';
const PATH = '/api/v2/generate_payment';
const url = new URL(baseUrl);

// What every variant sends: the wire body the plugin sends for this input (webhooks off).
const INPUT = { amount: '12500', developerTrackingId: 'order-42' };
const wireBody = () => JSON.stringify({ amount: '12500', success_link: SUCCESS, fail_link: FAIL, developer_tracking_id: 'order-42' });
const HEADERS = { Authorization: AUTHORIZATION, Accept: 'application/json', 'Content-Type': 'application/json' };

function check(paymentId, link) {
  if (typeof paymentId !== 'string' || typeof link !== 'string') throw new Error('unexpected answer');
  return { paymentId, link };
}

// 1. Raw node:http with a keep-alive agent: the floor.
const rawAgent = new http.Agent({ keepAlive: true });
function rawCall() {
  return new Promise((resolve, reject) => {
    const body = wireBody();
    const req = http.request(
      { host: url.hostname, port: url.port, path: PATH, method: 'POST', agent: rawAgent, headers: { ...HEADERS, 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          try {
            const json = JSON.parse(text);
            resolve(check(json.result.payment_id, json.result.link));
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// 2. A tuned axios instance: keep-alive agent, no redirects.
const tunedAgent = new http.Agent({ keepAlive: true });
const tuned = axios.create({ baseURL: baseUrl, httpAgent: tunedAgent, maxRedirects: 0, timeout: 10_000 });
async function tunedCall() {
  const { data } = await tuned.post(PATH, wireBody(), { headers: HEADERS });
  return check(data.result.payment_id, data.result.link);
}

// 3. The pattern of most existing integrations: axios.post with the full URL per call.
async function naiveCall() {
  const { data } = await axios.post(`${baseUrl}${PATH}`, JSON.parse(wireBody()), { headers: { Authorization: AUTHORIZATION } });
  return check(data.result.payment_id, data.result.link);
}

// 4. The plugin's framework-free client: telemetry off (what an app without @opentelemetry/api
// gets), the default with the API installed but no SDK registered, and tracing + metrics on
// through the SDK (no-op exporters; providers passed to this client only, so the other variants
// record nothing).
const options = { publicKey: PUBLIC_KEY, privateKey: PRIVATE_KEY, baseUrl, successLink: SUCCESS, failLink: FAIL };
const core = new PaymentsClient(options);
const coreOff = new PaymentsClient({ ...options, telemetry: false });
const sdk = startTracing({ global: false });
const coreOn = new PaymentsClient({ ...options, telemetry: { tracerProvider: sdk.tracerProvider, meterProvider: sdk.meterProvider } });

// 5./6. Through Nest: PaymentsService, without and with signed webhook URLs (HMAC + store write).
async function nestService(extra, lib = { PaymentsModule, PaymentsService }) {
  class BenchModule {}
  Module({ imports: [lib.PaymentsModule.forRoot({ ...options, ...extra })] })(BenchModule);
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  return { app, service: app.get(lib.PaymentsService) };
}
const plain = await nestService({});
const signed = await nestService({ webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: 'bench-secret-0123456789abcdef-0123456789' } });

const VARIANTS = [
  ['raw node:http, keep-alive agent (floor)', rawCall],
  ['axios instance, keep-alive, maxRedirects 0 (tuned)', tunedCall],
  ['axios.post per call (naive)', naiveCall],
  ['PaymentsClient (core), telemetry: false', () => coreOff.generatePayment(INPUT)],
  ['PaymentsClient (core)', () => core.generatePayment(INPUT)],
  ['PaymentsClient (core), tracing + metrics (SDK, no-op exporters)', () => coreOn.generatePayment(INPUT)],
  ['PaymentsService (Nest)', () => plain.service.generatePayment(INPUT)],
  ['PaymentsService (Nest), signed webhook URL', () => signed.service.generatePayment(INPUT)],
];

async function measure(call, concurrency, durationMs, keep) {
  const latencies = [];
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
      latencies.push(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (keep) for (const l of latencies) keep.push(l);
  const n = latencies.length;
  return {
    rps: n / (elapsedMs / 1000),
    cpuUsPerCall: (cpu.user + cpu.system) / n,
    calls: n,
    errors,
  };
}

// Warm-up: JIT, sockets, module caches.
for (const [, call] of VARIANTS) await measure(call, 8, 400);

const slices = {};
const latencies = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const concurrency of CONCURRENCY) {
    for (let k = 0; k < VARIANTS.length; k++) {
      const [name, call] = VARIANTS[(k + round) % VARIANTS.length];
      await measure(call, concurrency, 60); // fill the pipeline at this concurrency, unmeasured
      const result = await measure(call, concurrency, SLICE_MS, (latencies[`${name}|${concurrency}`] ??= []));
      ((slices[name] ??= {})[concurrency] ??= []).push(result);
    }
  }
}

const spread = (values) => {
  const v = [...values].sort((a, b) => a - b);
  return [quantile(v, 0), quantile(v, 0.25), quantile(v, 0.75), v.at(-1)].map((x) => Math.round(x));
};
const results = VARIANTS.map(([name]) => ({
  name,
  byConcurrency: Object.fromEntries(
    CONCURRENCY.map((c) => {
      const list = slices[name][c];
      const all = latencies[`${name}|${c}`].sort((a, b) => a - b);
      return [
        c,
        {
          rps: median(list.map((x) => x.rps)),
          p50: quantile(all, 0.5),
          p99: quantile(all, 0.99),
          cpuUsPerCall: median(list.map((x) => x.cpuUsPerCall)),
          errors: list.reduce((s, x) => s + x.errors, 0),
          calls: list.reduce((s, x) => s + x.calls, 0),
          samples: spread(list.map((x) => x.rps)),
        },
      ];
    }),
  ),
}));

process.send({ type: 'result', results, sliceMs: SLICE_MS, rounds: ROUNDS, concurrency: CONCURRENCY });
process.on('message', async (message) => {
  if (message?.type !== 'stop') return;
  await plain.app.close();
  await signed.app.close();
  await core.close();
  await coreOff.close();
  await coreOn.close();
  await sdk.shutdown();
  rawAgent.destroy();
  tunedAgent.destroy();
  process.exit(0);
});
