// The plugin's own per-call work, outside HTTP, timed in a loop (µs per call): the figures the code
// comments of lib/core/api/ cite for each trick. With BENCH_BASELINE_DIST set to another build's
// dist/ directory, that build's version of the same steps is timed beside it (before/after).
//
//   npm run build && node bench/plugin-work.mjs
//   BENCH_BASELINE_DIST=bench/.work/dist-before node bench/plugin-work.mjs
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import axios, { AxiosHeaders } from 'axios';

const NEW = new URL('../dist/core/', import.meta.url).href;
const OLD = process.env.BENCH_BASELINE_DIST
  ? `${pathToFileURL(process.env.BENCH_BASELINE_DIST).href.replace(/\/?$/, '/')}core/`
  : undefined;
const load = (base, file) => import(`${base}${file}`);

function time(name, fn, n = 100_000) {
  for (let i = 0; i < n / 10; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(`${name.padEnd(66)} ${(((performance.now() - t0) * 1000) / n).toFixed(3)} µs`);
}

const fields = await load(NEW, 'api/payment.fields.js');
const redactor = await load(NEW, 'api/secret.redactor.js');
const wire = await load(NEW, 'api/wire.mapper.js');
const rules = await load(NEW, 'api/payment.rules.js');
const otel = await load(NEW, 'telemetry/telemetry.otel.js');
const settings = await load(NEW, 'telemetry/telemetry.settings.js');

const defaults = {
  successLink: 'https://shop.example.com/checkout/success',
  failLink: 'https://shop.example.com/checkout/failed',
};
const input = { amount: '12500', developerTrackingId: 'order-42' };
const VERIFIED =
  '{"success":true,"result":{"type":"card","amount":12500,"status":"SUCCESS","details":{"order_number":"1","pan":"450921**1119","payment_system":"VISA","currency":"788","destinations":[]}},"status_code":200,"name":"developers","code":0,"version":"2.0.0"}';
const GENERATED =
  '{"result":{"success":true,"payment_id":"pay_x_1","link":"https://checkout.example/shop/pay_x_1","developer_tracking_id":"order-42"},"name":"Payment Service","code":0,"version":"v2"}';
const secrets = {
  privateKey: 'sk_bench_private_key_never_logged',
  publicKey: 'pk_bench',
  webhookSecret: 'bench-secret-0123456789abcdef-0123456789',
};

time('generatePayment input: check + wire body (defaults read in place)', () => {
  fields.checkPaymentInput(input, defaults);
  fields.toPaymentWire(input, 'pre_authorization', defaults);
});
const current = new redactor.SecretRedactor(secrets);
for (const [name, raw] of [
  ['verify', VERIFIED],
  ['generate', GENERATED],
]) {
  time(`${name} answer: parse + secret scan (answer())`, () => current.answer(raw, wire.parseJson));
  time(`${name} answer: parse only`, () => wire.parseJson(raw));
}
time("the answer's link checked (httpUrl: class-validator's isURL)", () =>
  rules.httpUrl('https://checkout.example/shop/pay_abc_12'),
);
time("the answer's link checked (isHttpLink: the common shape first)", () =>
  wire.isHttpLink('https://checkout.example/shop/pay_abc_12'),
);
time('a deadline per attempt: AbortController + setTimeout + clearTimeout', () => {
  const deadline = new AbortController();
  clearTimeout(setTimeout(() => deadline.abort(), 10_000));
});
const telemetry = new otel.PaymentsTelemetry(settings.telemetrySettings(undefined), {});
await telemetry.ready();
time('telemetry.active, @opentelemetry/api installed, no SDK', () => telemetry.active);
const config = { transitional: axios.defaults.transitional };
const body = {
  amount: '12500',
  success_link: defaults.successLink,
  fail_link: defaults.failLink,
  developer_tracking_id: 'order-42',
};
time("axios' default transformRequest on the generate body", () =>
  axios.defaults.transformRequest[0].call(config, body, new AxiosHeaders({ 'Content-Type': 'application/json' })),
);
time('JSON.stringify of the same body (what the plugin does)', () => JSON.stringify(body));
time("axios' default transformResponse on the verify answer", () =>
  axios.defaults.transformResponse[0].call(config, VERIFIED),
);

if (OLD) {
  console.log(`\nbaseline build (${process.env.BENCH_BASELINE_DIST}):`);
  const oldFields = await load(OLD, 'api/payment.fields.js');
  const oldRedactor = await load(OLD, 'api/secret.redactor.js');
  const withoutUnset = (i) => Object.fromEntries(Object.entries(i).filter(([, v]) => v !== undefined && v !== null));
  time('generatePayment input: merge + check + wire body (defaults checked again)', () => {
    const merged = { ...defaults, ...withoutUnset(input) };
    oldFields.checkPaymentInput(merged);
    oldFields.toPaymentWire(merged, 'pre_authorization');
  });
  const before = new oldRedactor.SecretRedactor(secrets.privateKey);
  const answer = (raw) => {
    const text = before.text(raw);
    const parsed = wire.parseJson(raw);
    if (parsed === undefined) return { body: text };
    const { value, changed } = before.json(parsed);
    return { body: changed ? JSON.stringify(value) : text, json: value };
  };
  time('verify answer: text pass + parse + walk and copy of the tree', () => answer(VERIFIED));
  time('generate answer: text pass + parse + walk and copy of the tree', () => answer(GENERATED));
}

// Everything but HTTP: the operations with a transport that answers at once (the answer parsed and
// scanned as the real transport does), memory store, no telemetry; async, so timed per batch.
async function timeAsync(name, fn, n = 50_000) {
  for (let i = 0; i < n / 10; i++) await fn();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn();
  const cpu = process.cpuUsage(cpu0);
  console.log(`${name.padEnd(66)} ${((cpu.user + cpu.system) / n).toFixed(3)} µs CPU`);
}
async function operations(base, label) {
  const { PaymentsApi } = await load(base, 'client/payments.api.js');
  const { resolvePaymentsOptions } = await load(base, 'client/payments.resolver.js');
  const { SharedClock, SYSTEM_CLOCK } = await load(base, 'time/index.js');
  const { MemoryPaymentsStore } = await load(base, 'store/memory.store.js');
  const { WebhookTokenSigner } = await load(base, 'webhook/webhook.token.js');
  const { NO_TELEMETRY } = await load(base, 'telemetry/telemetry.hooks.js');
  const { ServiceCalls } = await load(base, 'api/service.calls.js');
  const scan = new redactor.SecretRedactor(secrets);
  let n = 0;
  const transport = {
    send: async (request) => {
      const raw = request.method === 'GET' ? VERIFIED : GENERATED.replaceAll('pay_x_1', `pay_x_${++n}`);
      return { status: 200, ...scan.answer(raw, wire.parseJson) };
    },
  };
  const events = { emit: async () => undefined };
  for (const signed of [false, true]) {
    const options = resolvePaymentsOptions({
      publicKey: secrets.publicKey,
      privateKey: secrets.privateKey,
      baseUrl: 'http://127.0.0.1:1',
      ...defaults,
      ...(signed
        ? { webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: secrets.webhookSecret } }
        : {}),
    });
    const signer = signed ? new WebhookTokenSigner(secrets.webhookSecret) : undefined;
    const store = new MemoryPaymentsStore();
    const clock = new SharedClock(SYSTEM_CLOCK, () => store.now());
    const calls = new ServiceCalls(transport, NO_TELEMETRY);
    const api = new PaymentsApi(options, transport, calls, store, signer, events, NO_TELEMETRY, clock);
    // A new order per call, as a shop's: a repeated order would answer its open payment (one
    // charge per order) and time a lookup, not a payment's creation.
    let orders = 0;
    await timeAsync(`${label}: generatePayment without HTTP${signed ? ', signed webhook URL' : ''}`, () =>
      api.generatePayment({ ...input, developerTrackingId: `order-${++orders}` }),
    );
    if (!signed) await timeAsync(`${label}: verifyPayment without HTTP`, () => api.verifyPayment('pay_bench_1'));
  }
}
console.log('');
await operations(NEW, 'this build');
if (OLD) await operations(OLD, 'baseline build');
