// The CPU one paid webhook costs the plugin in-process, without HTTP: signed paid webhooks (each a
// distinct payment with its binding in the store, as generatePayment leaves it) through the core's
// webhook processor (`client.webhooks.handle()`, what the Express router calls with the parsed
// request; the Nest guard and controller call its two halves) on the memory store with its default
// options (stories kept), handlers registered by `createWebhookRouter`, telemetry off. The verify
// call goes through the plugin's transport to a seam adapter that answers the stub's body
// (bench/stub-server.mjs) on the next turn of the event loop. Beside it, a hand-written handler of
// the same kind: the same HMAC check of the token, the same verify answer through the same adapter,
// parsed and checked, and a Map set. Rounds alternate between the two; CPU µs per webhook
// (`process.cpuUsage()`, the process's threads, the garbage collector's included), min of rounds.
//
//   npm run build && node bench/ingest-cpu.mjs [webhooks per round = 5000] [rounds = 5] [in flight = 16]
//   BENCH_DIST=/tmp/base-cpu/dist node bench/ingest-cpu.mjs     (another build's dist/)
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/ingest-cpu.mjs 5000 3   (where the CPU goes)
//
// BENCH_ONLY=plugin or baseline runs one side only, BENCH_ONLY=setup only makes the webhooks: under
// `perf stat -e instructions:u` or callgrind, two runs of different sizes of one side, less the
// same of setup, give instructions per webhook by their difference.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const [perRoundArg = '5000', roundsArg = '5', inFlightArg = '16'] = process.argv.slice(2);
const PER_ROUND = Number(perRoundArg);
const ROUNDS = Number(roundsArg);
const IN_FLIGHT = Number(inFlightArg);
const ONLY = process.env.BENCH_ONLY;
const dist = process.env.BENCH_DIST
  ? pathToFileURL(`${process.env.BENCH_DIST.replace(/\/?$/, '/')}`).href
  : new URL('../dist/', import.meta.url).href;

const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const TTL_MS = 3_600_000;
const VERIFIED =
  '{"success":true,"result":{"type":"card","amount":12500,"status":"SUCCESS","details":{"order_number":"1","pan":"450921**1119","payment_system":"VISA","currency":"788","destinations":[]}},"status_code":200,"name":"developers","code":0,"version":"2.0.0"}';

// The service, answering every verify_payment SUCCESS for 12500 millimes on the next turn of the
// event loop (as an answer from a socket arrives), to the plugin and to the hand-written handler alike.
let verifies = 0;
const adapter = (config) =>
  new Promise((resolve) => {
    verifies++;
    setImmediate(resolve, { data: VERIFIED, status: 200, statusText: 'OK', headers: {}, config, request: {} });
  });

let handled = 0;
// A client of a build over its own memory store (BENCH_STORY=off: a store that keeps no stories,
// to see what they cost), its handlers registered by the Express router.
async function pluginOf(base) {
  const { PaymentsClient } = await import(`${base}core/client/payments.client.js`);
  const { MemoryPaymentsStore } = await import(`${base}core/store/memory.store.js`);
  const { createWebhookRouter } = await import(`${base}express/index.js`);
  const store = new MemoryPaymentsStore(process.env.BENCH_STORY === 'off' ? { story: false } : {});
  const client = new PaymentsClient(
    {
      publicKey: 'pk_bench',
      privateKey: 'sk_bench_private',
      baseUrl: 'http://127.0.0.1:1',
      webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
      reconciliation: { enabled: false },
      telemetry: false,
      store,
    },
    { adapter },
  );
  createWebhookRouter({
    client,
    onPaymentConfirmed: () => {
      handled++;
    },
  });
  return { client, store, handle: (request) => client.webhooks.handle(request) };
}
const { WebhookTokenSigner } = await import(`${dist}core/webhook/webhook.token.js`);
const current = await pluginOf(dist);
// BENCH_BEFORE_DIST: another build's dist/ (in a folder whose node_modules resolve), measured in
// the same process, its rounds alternating with this build's.
const before = process.env.BENCH_BEFORE_DIST
  ? await pluginOf(pathToFileURL(`${process.env.BENCH_BEFORE_DIST.replace(/\/?$/, '/')}`).href)
  : undefined;
const { store } = current;

// Genuine tokens bound to distinct payments, as generatePayment leaves them; made before a round's
// measurement starts.
const signer = new WebhookTokenSigner(SECRET);
let paymentNo = 0;
async function webhooks(n, into = store) {
  const createdAt = new Date().toISOString();
  const out = [];
  for (let i = 0; i < n; i++) {
    const { token, claims } = signer.issue('12500', undefined, TTL_MS);
    const paymentId = `pay_bench_${paymentNo++}`;
    await into.saveBinding(claims.nonce, { paymentId, amount: '12500', createdAt }, TTL_MS);
    const body = { payment_id: paymentId, status: 'completed' };
    out.push({ query: {}, body, contentLength: String(JSON.stringify(body).length), pathToken: token });
  }
  return out;
}

// The hand-written handler: the token's HMAC (the same format and key), the verify answer parsed
// and checked, the payment recorded in a Map (a repeated one is not handled again).
const KEY = createSecretKey(Buffer.from(SECRET, 'utf8'));
const DOMAIN = 'nestjs-payments:webhook:v2:';
const paid = new Map();
async function handWritten(request) {
  const token = request.pathToken;
  const dot = token.lastIndexOf('.');
  const mac = createHmac('sha256', KEY)
    .update(DOMAIN + token.slice(0, dot))
    .digest()
    .subarray(0, 16)
    .toString('base64url');
  const given = Buffer.from(token.slice(dot + 1), 'utf8');
  const expected = Buffer.from(mac, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { status: 401 };
  const id = request.body.payment_id;
  const { data } = await adapter({ method: 'GET', url: `/api/v2/verify_payment/${encodeURIComponent(id)}` });
  const json = JSON.parse(data);
  if (json.success !== true || json.result?.status !== 'SUCCESS') throw new Error('unexpected verify answer');
  if (!paid.has(id)) {
    paid.set(id, true);
    handled++;
  }
  return { status: 200, body: { received: true } };
}

// CPU µs per webhook of one round: every request through `handle`, IN_FLIGHT at a time; the
// story's batched write that follows (25 ms later at most) is inside the measurement.
async function round(handle, requests) {
  let next = 0;
  const before = handled;
  const start = process.cpuUsage();
  const worker = async () => {
    while (next < requests.length) {
      const answer = await handle(requests[next++]);
      if (answer.status !== 200) throw new Error(`answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await new Promise((resolve) => setTimeout(resolve, 40));
  const used = process.cpuUsage(start);
  if (handled - before !== requests.length) throw new Error(`${handled - before} of ${requests.length} handled`);
  return (used.user + used.system) / requests.length;
}

const sides = [
  ['plugin', current.handle, current.store],
  ...(before ? [['before', before.handle, before.store]] : []),
  ['baseline', handWritten],
  ['setup', undefined],
].filter(([name]) => (ONLY === undefined ? name !== 'setup' : ONLY === name));
const results = Object.fromEntries(sides.map(([name]) => [name, []]));
// A first round of each, not counted: the code is optimised by then.
for (let r = -1; r < ROUNDS; r++) {
  for (const [name, handle, into] of sides) {
    const requests = await webhooks(PER_ROUND, into);
    const cpu = handle ? await round(handle, requests) : 0;
    if (r >= 0) results[name].push(cpu);
  }
}
await current.client.close();
await before?.client.close();

const min = (values) => Math.min(...values);
const fmt = (values) => `min ${min(values).toFixed(1)} µs (rounds: ${values.map((v) => v.toFixed(1)).join(', ')})`;
console.log(
  `ingest CPU per paid webhook, in-process, memory store, ${PER_ROUND} webhooks x ${ROUNDS} rounds, ${IN_FLIGHT} in flight (${dist})`,
);
for (const [name] of sides) console.log(`  ${name.padEnd(9)} ${fmt(results[name])}`);
if (results.plugin && results.baseline) {
  const [p, b] = [min(results.plugin), min(results.baseline)];
  console.log(`  plugin - baseline: ${(p - b).toFixed(1)} µs; baseline ÷ plugin: ${(b / p).toFixed(2)}×`);
}
if (results.before && results.plugin)
  console.log(`  this build ÷ before: ${(min(results.plugin) / min(results.before)).toFixed(3)}`);
console.log(`  verify calls: ${verifies}`);
