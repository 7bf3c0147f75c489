// The CPU the plugin's telemetry hooks add, in-process and without HTTP (so without the noise of
// sockets on a shared machine): one webhook confirmation (delivery span, settle, a verify call,
// the handlers) and one call to the service, each around work that creates about as many promises
// as an axios call does, with the SDK recording (tracing.mjs: batch span processor and periodic
// metric reader, no-op exporters) against the same hooks with telemetry off. Medians of 5 rounds.
//
//   npm run build && node bench/telemetry-hooks.mjs
import { startTracing } from './tracing.mjs';

const { PaymentsTelemetry } = await import('../dist/core/telemetry/telemetry.otel.js');
const sdk = startTracing({ global: true });
const on = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 30_000 }, { baseUrl: 'http://127.0.0.1:1' });
const off = PaymentsTelemetry.off;
await on.ready(); // each instance looks for @opentelemetry/api itself

async function work(promises) {
  for (let i = 0; i < promises; i++) await Promise.resolve(i);
}

async function confirmation(telemetry) {
  const trace = telemetry.webhook('/payments/webhook/:token');
  await trace.within(() => work(10)); // authentication: token, store lookup
  const result = await trace.within(() =>
    telemetry.settle('pay_1', 'webhook', async (settle) => {
      await work(5); // claim
      await telemetry.call('verifyPayment', 'GET', '/api/v2/verify_payment/{payment_id}', async (stats) => {
        await work(40);
        stats.attempts = 1;
        stats.status = 200;
      });
      await settle.handlers('payment.confirmed', () => work(3));
      await work(5); // done, record
      return { kind: 'handled', outcome: 'confirmed' };
    }),
  );
  trace.end(200, result.kind, 'pay_1');
}

async function call(telemetry) {
  await telemetry.call('generatePayment', 'POST', '/api/v2/generate_payment', async (stats) => {
    await work(40);
    stats.attempts = 1;
    stats.status = 200;
  });
}

async function cpuPer(fn, telemetry, n) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(telemetry);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const fn of [confirmation, call]) {
  await cpuPer(fn, on, 3000); // warm-up
  await cpuPer(fn, off, 3000);
}
const added = { confirmation: [], call: [] };
for (let round = 0; round < 5; round++) {
  for (const fn of [confirmation, call])
    added[fn.name].push((await cpuPer(fn, on, 5000)) - (await cpuPer(fn, off, 5000)));
}
console.log(
  `telemetry hooks with the SDK recording: +${median(added.confirmation).toFixed(1)} µs CPU per webhook confirmation, +${median(added.call).toFixed(1)} µs per call to the service`,
);
await sdk.shutdown();
