// `npm run bench`: builds, then runs every benchmark against loopback servers only and writes
// bench/RESULTS.md (raw figures in bench/.work/last.json). About 4 minutes on 2 cores.
//
//   node bench/run.mjs                 full run
//   node bench/run.mjs --quick         short smoke run (figures not meaningful)
//   node bench/run.mjs --report-only   rewrite RESULTS.md from the figures of the last run
//
// Before/after: the plugin as it was at BENCH_BEFORE_REF (default: the commit before the
// performance fixes) is extracted with `git archive`, compiled into bench/.work/before/, and
// measured in the same run, interleaved with the current build: on a shared machine only
// figures taken side by side can be compared.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { fmt, forkChild, machineFacts, median } from './common.mjs';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const BEFORE_REF = process.env.BENCH_BEFORE_REF ?? '1f57b59dc04512e37f94a67935f3a5a115d4ce20';
const CFG = QUICK
  ? { clientSliceMs: 100, clientRounds: 2, ingestSecs: 1, ingestRepeats: 1, ingestConnections: 32, tokens: 10_000, memoryTotal: 20_000, memoryCap: 2000 }
  : { clientSliceMs: 300, clientRounds: 16, ingestSecs: 3, ingestRepeats: 4, ingestConnections: 32, tokens: 60_000, memoryTotal: 200_000, memoryCap: 20_000 };

const log = (line) => process.stdout.write(`${line}\n`);
const started = performance.now();

function git(...gitArgs) {
  return execFileSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

function gitCommit() {
  try {
    const sha = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--', 'lib') !== '' ? `${sha} + uncommitted changes in lib/` : sha;
  } catch {
    return 'unknown';
  }
}

/** Compiles lib/core + lib/nest as they were at BEFORE_REF into bench/.work/before/dist. */
function buildBefore() {
  const paths = ['lib/core', 'lib/nest', 'lib/index.ts'];
  try {
    git('cat-file', '-e', `${BEFORE_REF}^{commit}`);
    const changed = git('diff', '--name-only', BEFORE_REF, '--', ...paths);
    if (!changed) return { skipped: `lib/core and lib/nest are the same as at ${BEFORE_REF.slice(0, 7)}` };
    const dir = fileURLToPath(new URL('./.work/before/', import.meta.url));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(`${dir}src`, { recursive: true });
    const tarball = execFileSync('git', ['archive', '--format=tar', BEFORE_REF, ...paths], { cwd: ROOT, maxBuffer: 64 * 2 ** 20 });
    execFileSync('tar', ['-x', '-C', `${dir}src`], { input: tarball });
    writeFileSync(`${dir}package.json`, '{ "type": "module", "private": true }\n');
    writeFileSync(
      `${dir}src/tsconfig.json`,
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'], strict: true,
          experimentalDecorators: true, emitDecoratorMetadata: true, esModuleInterop: true, skipLibCheck: true, rootDir: 'lib', outDir: '../dist',
        },
        include: ['lib'],
      }),
    );
    execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', `${dir}src/tsconfig.json`], { stdio: 'ignore' });
    return { ref: BEFORE_REF.slice(0, 7), distDir: `${dir}dist`, index: `${dir}dist/index.js`, changed: changed.split('\n') };
  } catch (error) {
    return { skipped: `could not build ${BEFORE_REF.slice(0, 7)} from git (${error.message.split('\n')[0]})` };
  }
}

function redisReachable() {
  const url = new URL(REDIS_URL);
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(url.hostname)) return Promise.resolve(false); // loopback only
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 6379) });
    const done = (ok) => (socket.destroy(), resolve(ok));
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

// ---------------------------------------------------------------- 1. client overhead
async function clientOverhead(before) {
  log('client overhead: starting the stub in a separate process');
  const stub = forkChild('./stub-server.mjs');
  const { port } = await stub.next('ready');
  const bench = forkChild(
    './client-overhead.mjs',
    [`http://127.0.0.1:${port}`, String(CFG.clientSliceMs), String(CFG.clientRounds), ...(before.index ? [before.index] : [])],
    { execArgv: ['--expose-gc'] },
  );
  const { results } = await bench.next('result', 600_000);
  await bench.stop();
  await stub.stop();
  for (const r of results) {
    log(`  ${r.name.padEnd(52)} c=1 ${fmt(r.byConcurrency[1].rps)} req/s ${fmt(r.byConcurrency[1].cpuUsPerCall)} µs  c=32 ${fmt(r.byConcurrency[32].rps)} req/s ${fmt(r.byConcurrency[32].cpuUsPerCall)} µs`);
  }
  return results;
}

// ---------------------------------------------------------------- 2. webhook ingest
function cannon({ port, path, makeRequest, seconds, connections }) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: `http://127.0.0.1:${port}`, connections, pipelining: 1, duration: seconds, requests: [{ method: 'POST', path, setupRequest: makeRequest }] },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

/** Starts one webhook app per build, then alternates bare / webhook measurements between them. */
async function ingest(storeKind, builds) {
  log(`webhook ingest (${storeKind} store): ${builds.map((b) => b.label).join(', ')}`);
  const apps = [];
  for (const build of builds) {
    const child = forkChild('./webhook-app.mjs', [storeKind, String(CFG.tokens), REDIS_URL, ...(build.distDir ? [build.distDir] : [])], { readyTimeoutMs: 120_000 });
    const { port, tokens } = await child.next('ready', 120_000);
    apps.push({ ...build, child, port, tokens, next: 0, bare: [], webhook: [], non2xx: 0 });
  }
  const body = (id) => JSON.stringify({ payment_id: id, status: 'completed' });
  const bareRequest = (req) => ({ ...req, headers: { 'content-type': 'application/json' }, body: body('pay_bare') });
  const webhookRequest = (app) => (req) => {
    const [token, id] = app.tokens[app.next++ % app.tokens.length];
    return { ...req, path: `/payments/webhook?webhook_token=${token}`, headers: { 'content-type': 'application/json' }, body: body(id) };
  };
  const mark = async (app) => {
    app.child.send({ type: 'mark' });
    return app.child.next('mark');
  };
  const measured = async (app, path, makeRequest, seconds = CFG.ingestSecs) => {
    const m0 = await mark(app);
    const result = await cannon({ port: app.port, path, makeRequest, seconds, connections: CFG.ingestConnections });
    const m1 = await mark(app);
    return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors, cpu: (m1.cpuUs - m0.cpuUs) / Math.max(1, m1.requests - m0.requests) };
  };
  for (const app of apps) {
    await measured(app, '/bare', bareRequest, 1); // warm-up
    await measured(app, '/payments/webhook', webhookRequest(app), 1);
  }
  for (let r = 0; r < CFG.ingestRepeats; r++) {
    for (const app of r % 2 ? [...apps].reverse() : apps) {
      app.bare.push(await measured(app, '/bare', bareRequest));
      const w = await measured(app, '/payments/webhook', webhookRequest(app));
      app.webhook.push(w);
      app.non2xx += w.non2xx;
    }
  }
  const out = [];
  for (const app of apps) {
    app.child.send({ type: 'handled' });
    const { handled } = await app.child.next('handled');
    await app.child.stop();
    const m = (list, key) => median(list.map((x) => x[key]));
    const summary = (list) => ({ rps: m(list, 'rps'), p50: m(list, 'p50'), p99: m(list, 'p99'), cpu: m(list, 'cpu'), samples: list.map((x) => Math.round(x.rps)) });
    const x = { store: storeKind, label: app.label, bare: summary(app.bare), webhook: summary(app.webhook), non2xx: app.non2xx, handled, sent: app.next, tokens: app.tokens.length };
    log(`  ${app.label}: bare ${fmt(x.bare.rps)} req/s (${fmt(x.bare.cpu)} µs CPU/req), webhook ${fmt(x.webhook.rps)} req/s (${fmt(x.webhook.cpu)} µs CPU/req, ${fmt(x.webhook.rps / x.bare.rps, 2)}x), non-2xx ${x.non2xx}, handled ${handled}`);
    out.push(x);
  }
  return out;
}

// ---------------------------------------------------------------- 3. memory
async function memory(cap) {
  log(`memory: ${CFG.memoryTotal} confirmations, store cap ${cap}`);
  const child = forkChild('./memory.mjs', [String(CFG.memoryTotal), String(cap)], { execArgv: ['--expose-gc'] });
  const result = await child.next('result', 600_000);
  await child.stop();
  log(`  RSS ${result.points.map((p) => fmt(p.rssMiB, 1)).join(' -> ')} MiB`);
  return result;
}

// ---------------------------------------------------------------- report
const NAIVE = 'axios.post per call (naive)';
const TUNED = 'axios instance, keep-alive, maxRedirects 0 (tuned)';
const RAW = 'raw node:http, keep-alive agent (floor)';
const NEST = 'PaymentsService (Nest)';
const CORE = 'PaymentsClient (core)';
const SIGNED = 'PaymentsService (Nest), signed webhook URL';

function clientTable(results) {
  const by = (name) => results.find((r) => r.name === name);
  const rows = [
    '| client | conc. | req/s | × naive axios | × tuned axios | p50 ms | p99 ms | client CPU µs/call | req/s of the slices: min, q1, q3, max |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const c of [1, 32]) {
    for (const r of results) {
      const x = r.byConcurrency[c];
      rows.push(
        `| ${r.name} | ${c} | ${fmt(x.rps)} | ${fmt(x.rps / by(NAIVE).byConcurrency[c].rps, 2)} | ${fmt(x.rps / by(TUNED).byConcurrency[c].rps, 2)} | ${fmt(x.p50, 2)} | ${fmt(x.p99, 2)} | ${fmt(x.cpuUsPerCall)} | ${x.samples.join(', ')} |`,
      );
    }
  }
  return rows.join('\n');
}

function addedCpu(results) {
  const cpu = (name, c) => results.find((r) => r.name === name)?.byConcurrency[c].cpuUsPerCall;
  return [1, 32]
    .map((c) => {
      const nest = cpu(NEST, c);
      return `- concurrency ${c}: PaymentsService uses ${fmt(nest)} µs of client CPU per call, ${fmt(nest - cpu(TUNED, c))} µs more than the tuned axios instance (validation, wire and error mapping, the per-attempt deadline) and ${fmt(nest - cpu(RAW, c))} µs more than raw node:http (most of it axios); a signed webhook URL (HMAC + store write) comes to ${fmt(cpu(SIGNED, c))} µs per call.`;
    })
    .join('\n');
}

function ingestTable(list) {
  const rows = [
    '| build | route | store | req/s | p50 ms | p99 ms | server CPU µs/request | × bare route (req/s) | non-2xx | handler runs |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const x of list) {
    if (x.skipped) {
      rows.push(`| | webhook | ${x.store} | skipped: ${x.skipped} | | | | | | |`);
      continue;
    }
    rows.push(`| ${x.label} | bare \`@Post()\` returning 200 | (same app) | ${fmt(x.bare.rps)} | ${fmt(x.bare.p50, 1)} | ${fmt(x.bare.p99, 1)} | ${fmt(x.bare.cpu)} | 1.00 | | |`);
    rows.push(`| ${x.label} | \`payments/webhook\` (guard, parse, claim, emit, handler) | ${x.store} | ${fmt(x.webhook.rps)} | ${fmt(x.webhook.p50, 1)} | ${fmt(x.webhook.p99, 1)} | ${fmt(x.webhook.cpu)} | ${fmt(x.webhook.rps / x.bare.rps, 2)} | ${x.non2xx} | ${x.handled} |`);
  }
  return rows.join('\n');
}

function memoryTable(list) {
  const rows = [
    '| store cap (bindings + delivery records) | confirmations | RSS MiB after gc, at 0 / 12.5 / 25 / 50 / 75 / 100 % | heap used MiB | RSS growth over the second half | store entries at the end | time |',
    '|---|---:|---|---|---:|---:|---:|',
  ];
  for (const m of list) {
    const mid = m.points.find((p) => p.done === Math.round(m.total / 2));
    const end = m.points.at(-1);
    rows.push(
      `| ${m.cap} | ${m.total} | ${m.points.map((p) => fmt(p.rssMiB)).join(' / ')} | ${m.points.map((p) => fmt(p.heapUsedMiB)).join(' / ')} | ${fmt(end.rssMiB - mid.rssMiB, 1)} MiB | ${end.storeSize} | ${fmt(m.seconds, 1)} s |`,
    );
  }
  return rows.join('\n');
}

function beforeAfter(r) {
  if (!r.before?.ref) return `_No before/after in this run: ${r.before?.skipped ?? 'not attempted'}._`;
  const cl = (name, c) => r.client.find((x) => x.name === name)?.byConcurrency[c];
  const rows = ['| figure | before the fixes | after | change |', '|---|---:|---:|---:|'];
  const add = (label, b, a, decimals = 0) => rows.push(`| ${label} | ${fmt(b, decimals)} | ${fmt(a, decimals)} | ${Number.isFinite(a / b) ? `${a >= b ? '+' : ''}${fmt((a / b - 1) * 100, 0)} %` : '—'} |`);
  for (const [label, after, before] of [['PaymentsClient (core)', CORE, `${CORE}, before the fixes`], ['PaymentsService (Nest)', NEST, `${NEST}, before the fixes`]]) {
    for (const c of [1, 32]) {
      add(`${label}, c=${c}: req/s`, cl(before, c)?.rps, cl(after, c)?.rps);
      add(`${label}, c=${c}: × tuned axios`, cl(before, c)?.rps / cl(TUNED, c).rps, cl(after, c)?.rps / cl(TUNED, c).rps, 2);
      add(`${label}, c=${c}: client CPU µs/call`, cl(before, c)?.cpuUsPerCall, cl(after, c)?.cpuUsPerCall);
    }
  }
  const ia = r.ingest.find((x) => x.store === 'memory' && x.label === 'after');
  const ib = r.ingest.find((x) => x.store === 'memory' && x.label === 'before the fixes');
  if (ia && ib) {
    add('webhook ingest (memory store): req/s', ib.webhook.rps, ia.webhook.rps);
    add('webhook ingest (memory store): × its bare route', ib.webhook.rps / ib.bare.rps, ia.webhook.rps / ia.bare.rps, 2);
    add('webhook ingest (memory store): server CPU µs/request', ib.webhook.cpu, ia.webhook.cpu);
  }
  return `"Before" is lib/core and lib/nest as at commit ${r.before.ref} (the files changed since: ${r.before.changed.map((f) => `\`${f}\``).join(', ')}),
extracted with \`git archive\` and compiled by this run; it was measured in the same run as "after", in the same
interleaved slices (client) and alternating with it (ingest), so both saw the same machine.

${rows.join('\n')}`;
}

function report(r) {
  const cl = (name, c) => r.client.find((x) => x.name === name).byConcurrency[c];
  const mem = r.ingest.find((x) => x.store === 'memory' && x.label === 'after');
  const notes = new URL('./notes.md', import.meta.url);
  return `# Benchmark results

Command: \`npm run bench\` (= \`npm run build && node bench/run.mjs\`)${r.quick ? ' with `--quick`: a smoke run, figures not meaningful' : ''}.
Run of ${r.date}, commit ${r.commit}, ${fmt(r.totalSeconds)} s in total.

Machine: Node ${r.facts.node}, ${r.facts.cpu}, ${r.facts.cores} cores, ${r.facts.memoryGiB} GiB, ${r.facts.os}.
Load average (1, 5, 15 min) at the start: ${r.facts.loadAtStart}; at the end: ${r.facts.loadAtEnd}. The machine is shared with
other work, which shows in the spread of the slices below: compare figures within this run, not across runs.
Everything runs on 127.0.0.1; the server under load and the load generator are separate processes sharing these
${r.facts.cores} cores.

## Client overhead: \`generatePayment\`

Each client sends the same request (POST \`/api/v2/generate_payment\`, same JSON body and headers) to a stub of the
service in a separate process (\`bench/stub-server.mjs\`, forked), with 1 and with 32 calls in flight. The clients
take turns in slices of ${r.config.clientSliceMs} ms (${r.config.clientRounds} rounds per concurrency, order rotated every round), so that load from
outside the benchmark falls on all of them alike; req/s and CPU are medians over the slices, p50/p99 over all calls.
Client CPU is \`process.cpuUsage()\` of the client process divided by the calls made. "naive" is
\`axios.post(fullUrl, body, { headers })\` per call (default axios: follows redirects, Node's global agent, which
keeps connections alive since Node 19). "tuned" is one \`axios.create()\` instance with a keep-alive agent and
\`maxRedirects: 0\`, the same settings the plugin's transport uses.

${clientTable(r.client)}

Targets: PaymentsService ≥ 1.0× naive axios: c=1 ${fmt(cl(NEST, 1).rps / cl(NAIVE, 1).rps, 2)}×, c=32 ${fmt(cl(NEST, 32).rps / cl(NAIVE, 32).rps, 2)}×;
≥ 0.9× the tuned axios instance: c=1 ${fmt(cl(NEST, 1).rps / cl(TUNED, 1).rps, 2)}×, c=32 ${fmt(cl(NEST, 32).rps / cl(TUNED, 32).rps, 2)}×.

The plugin's own CPU per call:
${addedCpu(r.client)}

## Webhook ingest

autocannon, ${r.config.ingestConnections} connections, ${r.config.ingestSecs} s per measurement, ${r.config.ingestRepeats} measurements per route (medians), against a Nest
app (Express adapter) in a separate process (\`bench/webhook-app.mjs\`). Every webhook request is a genuine
confirmation of a distinct payment (a token signed with the app's secret and bound in its store, as
\`generatePayment\` does), so each one goes through the guard (token check, body parse, store lookup), the claim,
\`payment.confirmed\` to a trivial \`@OnPaymentConfirmed()\` handler, and the done marker. The bare route is a
\`@Post()\` in the same app returning 200, sent the same body. Server CPU is \`process.cpuUsage()\` of the app's
process per request: steadier than req/s when other load comes and goes.

${ingestTable(r.ingest)}

Target: ≥ 0.7× the bare route with the memory store: ${mem ? `${fmt(mem.webhook.rps / mem.bare.rps, 2)}×` : 'not measured'} (server CPU ${mem ? `${fmt(mem.webhook.cpu / mem.bare.cpu, 2)}×` : '—'} the bare route's).

## Memory

\`client.webhooks.handle()\` driven in-process (\`bench/memory.mjs\`, run with \`--expose-gc\`) with distinct genuine
confirmations, each with its binding saved first; RSS and heap measured after \`global.gc()\`.

${memoryTable(r.memory)}

Target: growth bounded by the store's cap, not by the number of confirmations.

## Before / after the fixes

${beforeAfter(r)}
${existsSync(notes) ? `\n${readFileSync(notes, 'utf8')}` : ''}`;
}

async function main() {
  const facts = { ...machineFacts(), loadAtStart: os.loadavg().map((l) => l.toFixed(2)).join(' ') };
  log(`node ${facts.node}, ${facts.cpu}, ${facts.cores} cores${QUICK ? ' (quick run)' : ''}`);
  const before = buildBefore();
  log(before.ref ? `before the fixes: built ${before.ref} into bench/.work/before` : `no before/after: ${before.skipped}`);
  const client = await clientOverhead(before);
  const builds = [{ label: 'after' }, ...(before.ref ? [{ label: 'before the fixes', distDir: before.distDir }] : [])];
  const ingestResults = [...(await ingest('memory', builds))];
  if (await redisReachable()) ingestResults.push(...(await ingest('redis', [{ label: 'after' }])));
  else ingestResults.push({ store: 'redis', skipped: `no Redis at ${REDIS_URL}` });
  const memoryResults = [await memory(CFG.memoryCap), await memory('default')];
  facts.loadAtEnd = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  const totalSeconds = (performance.now() - started) / 1000;
  const result = { date: new Date().toISOString(), commit: gitCommit(), facts, config: CFG, quick: QUICK, before, client, ingest: ingestResults, memory: memoryResults, totalSeconds };
  mkdirSync(new URL('./.work/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./.work/last.json', import.meta.url), JSON.stringify(result, null, 2));
  writeFileSync(new URL('./RESULTS.md', import.meta.url), report(result));
  log(`wrote bench/RESULTS.md (${fmt(totalSeconds)} s)`);
}

if (args.has('--report-only')) {
  writeFileSync(new URL('./RESULTS.md', import.meta.url), report(JSON.parse(readFileSync(new URL('./.work/last.json', import.meta.url), 'utf8'))));
  log('rewrote bench/RESULTS.md from bench/.work/last.json');
} else {
  await main();
}
