// Where the webhook route's CPU goes: starts the ingest benchmark's app (webhook-app.mjs) on one
// store with a stub of its own (forked, so their CPU is not in the profile), loads the route with
// autocannon for a few seconds under a V8 CPU profile of the app only, then prints the top
// self-time functions and the share of each area.
//
//   npm run build && node bench/profile-app.mjs [memory|redis|pglite|postgres] [seconds] [route]
//
// route: `webhook` (default), `record` (the store kind's baseline) or `verify` (the verify baseline).
// The profile itself is left in bench/.work/profiles/ (open it in Chrome DevTools).
import { mkdirSync, writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { forkChild } from './common.mjs';

const [kind = 'memory', secondsArg = '5', route = 'webhook'] = process.argv.slice(2);
const SECONDS = Number(secondsArg);
const TOKENS = { memory: 40_000, redis: 30_000, pglite: 8000, postgres: 12_000 }[kind];
const stub = forkChild('./stub-server.mjs');
const { port: stubPort } = await stub.next('ready');
const stubUrl = `http://127.0.0.1:${stubPort}`;
const app = forkChild(
  './webhook-app.mjs',
  [
    kind,
    String(TOKENS),
    stubUrl,
    process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    'off',
  ],
  { readyTimeoutMs: 180_000 },
);
const { port, tokens } = await app.next('ready', 180_000);
const body = (id) => JSON.stringify({ payment_id: id, status: 'completed' });
let next = 0;
let order = 0;
const makeRequest = (req) => {
  if (route === 'webhook') {
    const [token, id] = tokens[next++ % tokens.length];
    return { ...req, path: `/payments/webhook/${token}`, body: body(id) };
  }
  return { ...req, body: body(`pay_rec_${order++}`) };
};
const path = route === 'webhook' ? '/payments/webhook' : route === 'record' ? '/record-baseline' : '/verify-baseline';
const load = (seconds) =>
  new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: 16,
        duration: seconds,
        requests: [
          { method: 'POST', path, headers: { 'content-type': 'application/json' }, setupRequest: makeRequest },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });

await load(1); // warm-up
const m0 = (app.send({ type: 'mark' }), await app.next('mark'));
app.send({ type: 'profile-start' });
await app.next('profile-started');
const result = await load(SECONDS);
app.send({ type: 'profile-stop' });
const { profile } = await app.next('profile', 60_000);
const m1 = (app.send({ type: 'mark' }), await app.next('mark'));
await app.stop();
await stub.stop();

const dir = new URL('./.work/profiles/', import.meta.url);
mkdirSync(dir, { recursive: true });
const file = new URL(`app-${kind}-${route}.cpuprofile`, dir);
writeFileSync(file, JSON.stringify(profile));

const self = new Map();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const byFunction = new Map();
const byArea = new Map();
let busy = 0;
const area = (url, name) => {
  if (name === '(garbage collector)') return 'garbage collector';
  if (name === '(program)') return '(program)';
  const m = /\/node_modules\/(@[^/]+\/[^/]+|[^/]+)\//.exec(url);
  if (m) return m[1];
  const d = /\/dist\/(.+)\/[^/]+$/.exec(url);
  if (d) return `plugin: ${d[1]}`;
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
const requests = m1.requests - m0.requests;
const pct = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
console.log(
  `${kind} ${route}: ${Math.round(result.requests.average)} req/s, ${result.non2xx} non-2xx, ${((m1.cpuUs - m0.cpuUs) / requests).toFixed(1)} µs CPU per request (app process), profile ${file.pathname}`,
);
console.log('\nby area (self time):');
for (const [a, us] of [...byArea].sort((x, y) => y[1] - x[1]).slice(0, 20)) console.log(`  ${pct(us)}  ${a}`);
console.log('\ntop functions (self time):');
for (const [f, us] of [...byFunction].sort((x, y) => y[1] - x[1]).slice(0, 30)) console.log(`  ${pct(us)}  ${f}`);
