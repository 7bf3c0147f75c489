// Where a plugin call's CPU goes: runs `generatePayment` (plain or with a signed webhook URL) or
// `verifyPayment` against the stub (forked, so its CPU is not in the profile) with a V8 CPU profile
// of this process only, then prints the top self-time functions and the share of each area.
//
//   npm run build && node bench/profile-client.mjs [generate|verify|signed] [calls] [concurrency]
//
// The profile itself is left in bench/.work/profiles/ (open it in Chrome DevTools).
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { forkChild } from './common.mjs';

const [what = 'generate', callsArg = '20000', concArg = '8'] = process.argv.slice(2);
const CALLS = Number(callsArg);
const CONCURRENCY = Number(concArg);
const stub = forkChild('./stub-server.mjs');
const { port } = await stub.next('ready');
const baseUrl = `http://127.0.0.1:${port}`;
const { PaymentsClient } = await import('../dist/index.js');
const client = new PaymentsClient({
  publicKey: 'pk_bench',
  privateKey: 'sk_bench_private_key_never_logged',
  baseUrl,
  successLink: 'https://shop.example.com/checkout/success',
  failLink: 'https://shop.example.com/checkout/failed',
  ...(what === 'signed'
    ? {
        webhook: {
          publicUrl: 'https://shop.example.com/payments/webhook',
          secret: 'bench-secret-0123456789abcdef-0123456789',
        },
      }
    : {}),
});
// Each call pays an order of its own (a second call for an open order answers it from the store).
let orders = 0;
const call =
  what === 'verify'
    ? () => client.verifyPayment('pay_bench_1')
    : () => client.generatePayment({ amount: '12500', developerTrackingId: `order-${++orders}` });

async function run(n) {
  let left = n;
  const worker = async () => {
    while (left-- > 0) await call();
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

await run(3000); // warm-up
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const cpu0 = process.cpuUsage();
await run(CALLS);
const cpu = process.cpuUsage(cpu0);
const { profile } = await session.post('Profiler.stop');
await client.close();
await stub.stop();

const dir = new URL('./.work/profiles/', import.meta.url);
mkdirSync(dir, { recursive: true });
const file = new URL(`${what}-c${CONCURRENCY}.cpuprofile`, dir);
writeFileSync(file, JSON.stringify(profile));

const self = new Map();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const byFunction = new Map();
const byArea = new Map();
let busy = 0;
const area = (url, name) => {
  if (name === '(garbage collector)') return 'garbage collector';
  if (name === '(program)') return '(program)';
  if (url.includes('/node_modules/axios/')) return 'axios';
  if (url.includes('/dist/core/telemetry/')) return 'plugin: telemetry';
  if (url.includes('/dist/core/store/') || url.includes('lru-cache')) return 'store (memory, lru-cache)';
  if (url.includes('/dist/')) return 'plugin';
  if (url.includes('class-validator') || url.includes('validator/')) return 'class-validator';
  if (url.startsWith('node:') || url === '') return 'node core / native';
  return 'other';
};
for (const node of profile.nodes) {
  const us = self.get(node.id) ?? 0;
  const { functionName, url, lineNumber } = node.callFrame;
  if (functionName === '(idle)' || us === 0) continue;
  busy += us;
  const where = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`;
  byFunction.set(where, (byFunction.get(where) ?? 0) + us);
  const a = area(url, functionName);
  byArea.set(a, (byArea.get(a) ?? 0) + us);
}
const pct = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
console.log(
  `${what}, ${CALLS} calls at c=${CONCURRENCY}: ${((cpu.user + cpu.system) / CALLS).toFixed(1)} µs CPU per call (process), profile ${file.pathname}`,
);
console.log('\nby area (self time):');
for (const [a, us] of [...byArea].sort((x, y) => y[1] - x[1])) console.log(`  ${pct(us)}  ${a}`);
console.log('\ntop functions (self time):');
for (const [f, us] of [...byFunction].sort((x, y) => y[1] - x[1]).slice(0, 30)) console.log(`  ${pct(us)}  ${f}`);
