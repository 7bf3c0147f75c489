// `npm run bench`: builds, then runs every benchmark against loopback servers only and writes
// bench/RESULTS.md (raw figures in bench/.work/last.json). About 5 minutes on 2 cores, 10 to 20
// more for the growth part (1M payments in each store; GROWTH_SIZES makes it smaller), and about 1
// for the desk part (1M outcome records in each store; DESK_SIZE makes it smaller).
//
//   node bench/run.mjs                       full run
//   node bench/run.mjs --quick               short run (client overhead, memory-store ingest; under 90 s
//                                            with the build): prints the tables, never fails on a figure
//   node bench/run.mjs --only=memory,budget  some parts only (client, memory, redis, pglite,
//                                            postgres, inbox, budget, growth, desk): prints the figures and writes
//                                            bench/.work/partial.json, never RESULTS.md
//   npm run bench -- --only growth           the growth part after a build (--only a,b as well as --only=a,b)
//   GROWTH_SIZES=10000,100000 node bench/run.mjs --only=growth
//                                            how cost grows with the store (default sizes
//                                            10000,100000,1000000; GROWTH_STORES=memory,redis,postgres,
//                                            GROWTH_RETENTION=<payments> for the retention run, 0 skips it)
//   DESK_SIZE=10000 node bench/run.mjs --only=desk
//                                            the desk's pages over HTTP with DESK_SIZE outcomes (default
//                                            1000000) in Redis, then in PostgreSQL (DESK_STORES=redis,postgres):
//                                            overview under 300 ms, a payment's page under 100 ms (p50);
//                                            not part of --quick; DESK_REQUESTS (30), DESK_WARMUPS (3),
//                                            DESK_REDIS_URL (db 8, keys dsk:*), DESK_POSTGRES_URL (desk_bench)
//   node bench/run.mjs --report-only         rewrite RESULTS.md from the figures of the last full run
//
// What it measures, side by side in one run (ratios are only meaningful within a run on a shared
// machine): the client's overhead against naive and tuned axios, with telemetry off, with
// @opentelemetry/api but no SDK, and with the SDK on; webhook ingest with verify_payment in the
// path for the memory, Redis, PGlite and PostgreSQL stores, each against a bare route and against
// the baseline of a hand-written handler (one verify_payment through a tuned axios instance), and
// tracing on vs off (memory store, with and without HTTP server spans); the payments' stories kept
// vs not (each store, paired: the memory store keeps them by default, the others do not);
// verify calls per forged delivery; verify calls per settled payment with two instances on one
// Redis receiving webhook + return + reconciliation for the same payments; the payments desk's
// pages over HTTP with 1M outcome records in Redis and in PostgreSQL.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { fmt, forkChild, machineFacts, median } from './common.mjs';
import { benchDatabase } from './seed.mjs';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const PARTS = ['client', 'memory', 'redis', 'pglite', 'postgres', 'inbox', 'budget', 'growth', 'desk'];
// --only=a,b or --only a,b (as `npm run bench -- --only growth` passes it).
const argv = process.argv.slice(2);
const onlyAt = argv.findIndex((a) => a === '--only' || a.startsWith('--only='));
const onlyValue = onlyAt < 0 ? undefined : argv[onlyAt] === '--only' ? (argv[onlyAt + 1] ?? '') : argv[onlyAt].slice(7);
const ONLY = onlyValue === undefined ? undefined : new Set(onlyValue.split(','));
for (const part of ONLY ?? [])
  if (!PARTS.includes(part)) throw new Error(`--only: unknown part '${part}' (parts: ${PARTS.join(', ')})`);
// --quick (what CI runs after the tests, as a report): the client overhead and the memory store's
// ingest, without tracing variants, in well under 90 s; --only picks parts explicitly.
const QUICK_PARTS = new Set(['client', 'memory']);
const wanted = (part) => (ONLY ? ONLY.has(part) : !QUICK || QUICK_PARTS.has(part));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// The growth part deletes its Redis keys (prefix `grw:`, in a database index of its own) and works in
// a PostgreSQL database of its own, created for the run when missing and then dropped.
const GROWTH_REDIS_URL = process.env.GROWTH_REDIS_URL ?? 'redis://127.0.0.1:6379/7';
const GROWTH_POSTGRES_URL = process.env.GROWTH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/growth_bench';
const GROWTH_SIZES = process.env.GROWTH_SIZES ?? '10000,100000,1000000';
const GROWTH_STORES = (process.env.GROWTH_STORES ?? 'memory,redis,postgres').split(',');
const GROWTH_RETENTION = Number(process.env.GROWTH_RETENTION ?? 300_000);
// The desk part likewise: prefix `dsk:` in a database index of its own, database `desk_bench`.
const DESK_REDIS_URL = process.env.DESK_REDIS_URL ?? 'redis://127.0.0.1:6379/8';
const DESK_POSTGRES_URL = process.env.DESK_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/desk_bench';
const DESK_SIZE = Number(process.env.DESK_SIZE ?? 1_000_000);
const DESK_STORES = (process.env.DESK_STORES ?? 'redis,postgres').split(',');
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CFG = QUICK
  ? {
      clientSliceMs: 100,
      clientRounds: 3,
      ingestSecs: 1,
      ingestRepeats: 1,
      ingestConnections: 16,
      tokens: { memory: 20_000, redis: 15_000, pglite: 4000, postgres: 6000 },
      forgedSecs: 1,
      budgetPayments: 50,
    }
  : {
      clientSliceMs: 300,
      clientRounds: 12,
      ingestSecs: 2,
      ingestRepeats: 4,
      ingestConnections: 16,
      tokens: { memory: 80_000, redis: 50_000, pglite: 12_000, postgres: 20_000 },
      forgedSecs: 2,
      budgetPayments: 400,
    };

const log = (line) => process.stdout.write(`${line}\n`);
const started = performance.now();

function gitCommit() {
  try {
    const git = (...a) =>
      execFileSync('git', a, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const sha = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--', 'lib', 'bench') !== ''
      ? `${sha} + uncommitted changes in lib/ or bench/`
      : sha;
  } catch {
    return 'unknown';
  }
}

function reachable(urlText, defaultPort) {
  const url = new URL(urlText);
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(url.hostname)) return Promise.resolve(false); // loopback only
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || defaultPort) });
    const done = (ok) => (socket.destroy(), resolve(ok));
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

// ---------------------------------------------------------------- 1. client overhead
/** One client-overhead process (client-overhead.mjs) in `mode`, against its own stub process. */
async function clientRun(mode) {
  const stub = forkChild('./stub-server.mjs');
  const { port } = await stub.next('ready');
  const bench = forkChild(
    './client-overhead.mjs',
    [`http://127.0.0.1:${port}`, String(CFG.clientSliceMs), String(CFG.clientRounds), mode],
    {
      execArgv: ['--expose-gc'],
    },
  );
  const { results } = await bench.next('result', 600_000);
  await bench.stop();
  await stub.stop();
  return results.map((x) => ({ ...x, mode }));
}

async function clientOverhead() {
  log(
    `client overhead: generatePayment and verifyPayment, ${CFG.clientRounds} rounds of ${CFG.clientSliceMs} ms slices (stub in a separate process)`,
  );
  const results = await clientRun('clients');
  // The SDK's context manager would tax every client of the process it runs in: a process of its own.
  if (!QUICK) {
    log('client overhead: telemetry off against the SDK recording (a process of its own)');
    results.push(...(await clientRun('telemetry')));
  }
  log(clientTable(results));
  return results;
}

// ---------------------------------------------------------------- 2. webhook ingest
function cannon({ port, path, makeRequest, seconds, connections }) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections,
        pipelining: 1,
        duration: seconds,
        requests: [{ method: 'POST', path, setupRequest: makeRequest }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

const stubCount = async (stubUrl) => (await (await fetch(`${stubUrl}/__count`)).json()).verifies;
const body = (id) => JSON.stringify({ payment_id: id, status: 'completed' });
const bareRequest = (req) => ({ ...req, headers: { 'content-type': 'application/json' }, body: body('pay_bare') });
const baselineRequest = (req) => ({
  ...req,
  headers: { 'content-type': 'application/json' },
  body: body('pay_baseline'),
});

/**
 * Starts one webhook app per variant (same store kind), then alternates bare / webhook
 * measurements between them. Every webhook request is a distinct genuine payment, verified
 * against the stub.
 */
async function ingest(storeKind, variants, stubUrl) {
  log(`webhook ingest (${storeKind} store): ${variants.map((v) => v.label).join(', ')}`);
  const apps = [];
  for (const variant of variants) {
    const child = forkChild(
      './webhook-app.mjs',
      [
        storeKind,
        String(CFG.tokens[storeKind]),
        stubUrl,
        REDIS_URL,
        POSTGRES_URL,
        variant.tracing,
        variant.story ?? '',
      ],
      {
        readyTimeoutMs: 180_000,
      },
    );
    const { port, tokens, recordBaseline } = await child.next('ready', 180_000);
    apps.push({
      ...variant,
      child,
      port,
      tokens,
      recordBaseline,
      next: 0,
      bare: [],
      baseline: [],
      record: [],
      guarded: [],
      webhook: [],
      non2xx: 0,
      verifies: 0,
      handledInSlices: 0,
    });
  }
  const webhookRequest = (app) => (req) => {
    const [token, id] = app.tokens[app.next++ % app.tokens.length];
    return {
      ...req,
      path: `/payments/webhook/${token}`,
      headers: { 'content-type': 'application/json' },
      body: body(id),
    };
  };
  // The store-kind baseline records a distinct order per request (rows taken in turn).
  let order = 0;
  const recordRequest = (req) => ({
    ...req,
    headers: { 'content-type': 'application/json' },
    body: body(`pay_rec_${order++}`),
  });
  // The guarded baseline claims a distinct payment per request (a claim is never met twice).
  let guardedOrder = 0;
  const guardedRequest = (req) => ({
    ...req,
    headers: { 'content-type': 'application/json' },
    body: body(`pay_grd_${guardedOrder++}`),
  });
  const mark = async (app) => {
    app.child.send({ type: 'mark' });
    return app.child.next('mark');
  };
  const measured = async (app, path, makeRequest, seconds = CFG.ingestSecs) => {
    const v0 = await stubCount(stubUrl);
    const m0 = await mark(app);
    const result = await cannon({ port: app.port, path, makeRequest, seconds, connections: CFG.ingestConnections });
    await new Promise((resolve) => setTimeout(resolve, 100)); // requests cut off at the end finish their verify and handler
    const m1 = await mark(app);
    const v1 = await stubCount(stubUrl);
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx + result.errors,
      cpu: (m1.cpuUs - m0.cpuUs) / Math.max(1, m1.requests - m0.requests),
      verifies: v1 - v0,
      handled: m1.handled - m0.handled,
    };
  };
  for (const app of apps) {
    await measured(app, '/bare', bareRequest, 1); // warm-up
    await measured(app, '/verify-baseline', baselineRequest, 1);
    if (app.recordBaseline) await measured(app, '/record-baseline', recordRequest, 1);
    if (app.recordBaseline) await measured(app, '/guarded-baseline', guardedRequest, 1);
    await measured(app, '/payments/webhook', webhookRequest(app), 1);
  }
  for (let r = 0; r < CFG.ingestRepeats; r++) {
    for (const app of r % 2 ? [...apps].reverse() : apps) {
      app.bare.push(await measured(app, '/bare', bareRequest));
      app.baseline.push(await measured(app, '/verify-baseline', baselineRequest));
      if (app.recordBaseline) app.record.push(await measured(app, '/record-baseline', recordRequest));
      if (app.recordBaseline) app.guarded.push(await measured(app, '/guarded-baseline', guardedRequest));
      const w = await measured(app, '/payments/webhook', webhookRequest(app));
      app.webhook.push(w);
      app.non2xx += w.non2xx;
      app.verifies += w.verifies;
      app.handledInSlices += w.handled;
    }
  }
  const out = [];
  for (const app of apps) {
    // Forged deliveries (valid format, wrong signature): refused, and no call to the service.
    if (app.forged) {
      const forged = app.tokens
        .slice(0, 1000)
        .map(([token, id]) => [`${token.slice(0, -4)}${token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`, id]);
      let i = 0;
      const v0 = await stubCount(stubUrl);
      const result = await cannon({
        port: app.port,
        path: '/payments/webhook',
        seconds: CFG.forgedSecs,
        connections: CFG.ingestConnections,
        makeRequest: (req) => {
          const [token, id] = forged[i++ % forged.length];
          return {
            ...req,
            path: `/payments/webhook/${token}`,
            headers: { 'content-type': 'application/json' },
            body: body(id),
          };
        },
      });
      const v1 = await stubCount(stubUrl);
      app.forgedResult = {
        sent: result.requests.total,
        rps: result.requests.average,
        status401: result['4xx'],
        verifies: v1 - v0,
      };
      log(
        `  forged deliveries: ${app.forgedResult.sent} sent (${fmt(app.forgedResult.rps)} req/s), ${app.forgedResult.status401} answered 4xx, ${app.forgedResult.verifies} verify calls`,
      );
    }
    app.child.send({ type: 'handled' });
    const { handled } = await app.child.next('handled');
    await app.child.stop();
    const m = (list, key) => median(list.map((x) => x[key]));
    const summary = (list) => ({
      rps: m(list, 'rps'),
      p50: m(list, 'p50'),
      p99: m(list, 'p99'),
      cpu: m(list, 'cpu'),
      samples: list.map((x) => Math.round(x.rps)),
    });
    const x = {
      store: storeKind,
      label: app.label,
      tracing: app.tracing,
      story: app.story,
      bare: summary(app.bare),
      baseline: summary(app.baseline),
      record: app.recordBaseline ? summary(app.record) : undefined,
      guarded: app.recordBaseline ? summary(app.guarded) : undefined,
      webhook: summary(app.webhook),
      // Paired per repeat (measured one after the other), then the median.
      vsBare: median(app.webhook.map((w, k) => w.rps / app.bare[k].rps)),
      vsBaseline: median(app.webhook.map((w, k) => w.rps / app.baseline[k].rps)),
      // Against the baseline of the store's kind (verify + one write or transaction in that
      // database); the memory store's kind is the verify baseline itself.
      vsKind: app.recordBaseline
        ? median(app.webhook.map((w, k) => w.rps / app.record[k].rps))
        : median(app.webhook.map((w, k) => w.rps / app.baseline[k].rps)),
      // Against the guarded baseline (a claim before the verify call, as the store's): what the
      // store costs beyond what a handler as safe must write.
      vsGuarded: app.recordBaseline ? median(app.webhook.map((w, k) => w.rps / app.guarded[k].rps)) : undefined,
      webhookSamples: app.webhook.map((w) => w.rps),
      bareSamples: app.bare.map((w) => w.rps),
      non2xx: app.non2xx,
      handled,
      sent: app.next,
      tokens: app.tokens.length,
      verifies: app.verifies,
      handledInSlices: app.handledInSlices,
      forged: app.forgedResult,
    };
    log(
      `  ${app.label}: bare ${fmt(x.bare.rps)} req/s (${fmt(x.bare.cpu)} µs CPU/req), verify baseline ${fmt(x.baseline.rps)} req/s (${fmt(x.baseline.cpu)} µs CPU/req), ${x.record ? `verify + record ${fmt(x.record.rps)} req/s (${fmt(x.record.cpu)} µs CPU/req), ` : ''}${x.guarded ? `claim + verify + record ${fmt(x.guarded.rps)} req/s (${fmt(x.guarded.cpu)} µs CPU/req), ` : ''}webhook ${fmt(x.webhook.rps)} req/s (${fmt(x.webhook.cpu)} µs CPU/req, ${fmt(x.vsBare, 2)}x bare, ${fmt(x.vsBaseline, 2)}x baseline, ${fmt(x.vsKind, 2)}x its kind's${x.guarded ? `, ${fmt(x.vsGuarded, 2)}x guarded` : ''}), non-2xx ${x.non2xx}, handled ${handled}, verify/settled ${fmt(x.verifies / x.handledInSlices, 3)}${x.sent > x.tokens ? `, WARNING: ${x.sent - x.tokens} duplicates (tokens ran out)` : ''}`,
    );
    out.push(x);
  }
  // Paired ratios between variants (webhook route): per repeat, then the median.
  const pair = (x, y) =>
    x && y
      ? {
          rps: median(y.webhook.map((w, k) => x.webhook[k].rps / w.rps)),
          cpu: median(y.webhook.map((w, k) => x.webhook[k].cpu / w.cpu)),
        }
      : undefined;
  const plain = (tracing) => apps.find((v) => v.tracing === tracing && v.story === undefined);
  const ratio = (a, b) => pair(plain(a), plain(b));
  // Stories kept over not kept, whichever the store's default is.
  const storyApp = (mode) =>
    apps.find((v) => v.tracing === 'off' && (v.story ?? (storeKind === 'memory' ? 'on' : 'off')) === mode);
  return {
    list: out,
    ratios: {
      onVsOff: ratio('on', 'off'),
      httpOnVsHttp: ratio('http-on', 'http'),
      httpVsOff: ratio('http', 'off'),
      storyOnVsOff: storyApp('on') !== storyApp('off') ? pair(storyApp('on'), storyApp('off')) : undefined,
    },
  };
}

// ---------------------------------------------------------------- exactly-once: the inbox's cost
/**
 * bench/transactional.mjs in a child: ingest on PostgreSQL with the store's transactional mode, with
 * the inbox (`sqlInbox`, a plain store) and with neither, and the statements each sends.
 */
async function inboxCost() {
  if (!(await reachable(POSTGRES_URL, 5432))) return { skipped: `no PostgreSQL at ${POSTGRES_URL}` };
  log('exactly-once: transactional store, inbox and neither (bench/transactional.mjs)');
  const out = fileURLToPath(new URL('./.work/inbox.json', import.meta.url));
  mkdirSync(new URL('./.work/', import.meta.url), { recursive: true });
  execFileSync(process.execPath, [fileURLToPath(new URL('./transactional.mjs', import.meta.url))], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, POSTGRES_URL, BENCH_JSON_OUT: out },
  });
  return JSON.parse(readFileSync(out, 'utf8'));
}

function inboxTable(x) {
  if (x.skipped) return `Skipped: ${x.skipped}.`;
  const rows = [
    '| mode | req/s | p50 ms | p99 ms | app CPU µs/request | statements per confirmation | of them in the handler’s transaction |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of x.rows)
    rows.push(
      `| ${r.mode} | ${fmt(r.rps)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.cpu)} | ${fmt(r.statements, 2)} | ${fmt(r.inTransaction, 2)} |`,
    );
  return rows.join('\n');
}

// ---------------------------------------------------------------- 3. verify budget, two instances
async function verifyBudget(stubUrl) {
  log(
    `verify budget: ${CFG.budgetPayments} payments, two instances on one Redis, webhook (to both) + return + reconciliation`,
  );
  const child = forkChild('./verify-budget.mjs', [stubUrl, REDIS_URL, String(CFG.budgetPayments)], {
    readyTimeoutMs: 120_000,
  });
  const result = await child.next('result', 120_000);
  await child.stop();
  log(
    `  ${result.verifies} verify calls for ${result.settled} settled payments: ${fmt(result.perSettled, 3)} per payment; handler runs ${result.handlerRuns}; ${fmt(result.seconds, 1)} s`,
  );
  return result;
}

/**
 * One store's measurement by a child process of its own: skipped when the server does not answer;
 * on PostgreSQL in a database made for it (`envName` names the setting of its URL) and dropped
 * after, whatever the child did. Its `result` message without its type.
 */
async function inStoreOfItsOwn(kind, redisUrl, postgresUrl, envName, start) {
  const url = kind === 'redis' ? redisUrl : postgresUrl;
  if (kind !== 'memory' && !(await reachable(url, kind === 'redis' ? 6379 : 5432)))
    return { store: kind, skipped: `no ${kind} at ${url.replace(/\/\/[^@]*@/, '//')}` };
  const created = kind === 'postgres' && (await benchDatabase(postgresUrl, 'create', envName));
  try {
    const child = start();
    const measured = await child.next('result', 3_600_000);
    await child.stop();
    delete measured.type;
    return measured;
  } finally {
    if (created) await benchDatabase(postgresUrl, 'drop', envName);
  }
}

// ---------------------------------------------------------------- 4. growth with the store's size
/** growth.mjs for each store (its own process), against a stub of its own in --echo-tracking mode. */
async function growth() {
  log(`growth: stores filled to ${GROWTH_SIZES} payments (30% open, 70% done); ${GROWTH_STORES.join(', ')}`);
  const stub = forkChild('./stub-server.mjs', ['--echo-tracking']);
  const { port } = await stub.next('ready');
  const stubUrl = `http://127.0.0.1:${port}`;
  const stores = [];
  try {
    for (const kind of GROWTH_STORES)
      stores.push(
        await inStoreOfItsOwn(kind, GROWTH_REDIS_URL, GROWTH_POSTGRES_URL, 'GROWTH_POSTGRES_URL', () =>
          forkChild('./growth.mjs', ['measure', kind, stubUrl, GROWTH_REDIS_URL, GROWTH_POSTGRES_URL, GROWTH_SIZES], {
            execArgv: ['--expose-gc'],
            readyTimeoutMs: 3_600_000,
          }),
        ),
      );
    let retention;
    if (GROWTH_RETENTION > 0) {
      log(`growth: retention, memory store, ${GROWTH_RETENTION} payments through the engine on a test clock`);
      const child = forkChild('./growth.mjs', ['retention', stubUrl, String(GROWTH_RETENTION)], {
        execArgv: ['--expose-gc'],
        readyTimeoutMs: 3_600_000,
      });
      retention = await child.next('result', 3_600_000);
      delete retention.type;
      await child.stop();
    }
    const result = { sizes: GROWTH_SIZES, stores, retention };
    log(growthTable(result));
    return result;
  } finally {
    await stub.stop();
  }
}

const GROWTH_PATHS = [
  ['generate', 'generatePayment (a new order)'],
  ['webhook', 'paid webhook (signed token, webhook processor)'],
  ['return', 'return (`reconcilePayment`)'],
  ['pass', `reconciliation pass (20 payments due, the rest of the queue later)`],
];

/**
 * The largest size's p50 over the smallest's: the median of the per-round ratios when the sizes
 * were measured side by side in rounds, else the ratio of the p50s.
 */
function p50Ratio(a, b, key) {
  return b[key].vsSmallest ?? b[key].p50 / a[key].p50;
}

/** The smallest and the largest size measured of a store, for the ratio of the largest to the smallest. */
function growthEnds(x) {
  const rows = x.rows ?? [];
  return rows.length ? [rows[0], rows[rows.length - 1]] : [];
}

function storeSizeText(kind, s) {
  if (kind === 'memory') return `${s.entries} entries`;
  if (kind === 'redis') return `${s.keys} keys, ${fmt(s.usedMiB)} MiB`;
  return `${fmt(s.totalMiB)} MiB`;
}

function growthTable(g) {
  const out = [];
  for (const x of g.stores) {
    if (x.skipped) {
      out.push(`${x.store}: skipped: ${x.skipped}`, '');
      continue;
    }
    const sizes = x.rows.map((r) => r.size);
    const [a, b] = growthEnds(x);
    const k = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
    out.push(
      `**${x.store}** (stored payments: ${sizes.map(k).join(', ')}${x.copyCheck ? `; rows copied from template payments: ${typeof x.copyCheck === 'string' ? x.copyCheck : '**differ**'}` : ''}${x.apiCheck ? `; an open and a done payment of the fill read back through the store's API against ones the plugin wrote: ${x.apiCheck === 'same' ? 'same' : '**differ**'}` : ''})`,
      '',
      `| path | ${sizes.map((n) => `${k(n)}: p50 / p99 ms, round trips`).join(' | ')} | ${k(b.size)}/${k(a.size)}: p50, p99, round trips |`,
      `|---|${sizes.map(() => '---:').join('|')}|---:|`,
    );
    for (const [key, label] of GROWTH_PATHS) {
      const cells = x.rows.map((r) => `${fmt(r[key].p50, 2)} / ${fmt(r[key].p99, 2)}, ${r[key].trips}`);
      out.push(
        `| ${label} | ${cells.join(' | ')} | ${fmt(p50Ratio(a, b, key), 2)}×, ${fmt(b[key].p99 / a[key].p99, 2)}×, ${fmt(b[key].trips / a[key].trips, 2)}× |`,
      );
    }
    out.push(
      `| store size | ${x.rows.map((r) => storeSizeText(x.store, r.store)).join(' | ')} | |`,
      `| queue (countPending) | ${x.rows.map((r) => r.pending).join(' | ')} | |`,
      x.store === 'memory'
        ? `| heap the store's fill added, after GC, MiB | ${x.rows.map((r) => fmt(r.heapMiB)).join(' | ')} | ${fmt(b.heapMiB / a.heapMiB, 2)}× |`
        : `| the process's heap after GC (every size's client), MiB | ${fmt(a.heapMiB)} | |`,
      `| fill time, s | ${x.rows.map((r) => fmt(r.fillSecs, 1)).join(' | ')} | |`,
      ...(x.rows[0].seqScans
        ? [
            `| sequential scans of the store's tables during the measured calls (rows read) | ${x.rows
              .map((r) => {
                const all = Object.values(r.seqScans);
                return `${all.reduce((n, v) => n + v.seq, 0)} (${all.reduce((n, v) => n + v.read, 0)})`;
              })
              .join(' | ')} | |`,
          ]
        : []),
      '',
    );
  }
  const r = g.retention;
  if (r) {
    out.push(
      `**retention** (memory store, default retention, ${r.payments} payments through the engine over ${fmt(r.days)} simulated days)`,
      '',
      '| simulated day | payments so far | store entries | queue | heap after GC, MiB |',
      '|---:|---:|---:|---:|---:|',
      ...r.samples.map((s) => `| ${fmt(s.day)} | ${s.payments} | ${s.entries} | ${s.pending} | ${fmt(s.heapMiB, 1)} |`),
      '',
    );
  }
  return out.join('\n');
}

/**
 * Whether the retention run's heap and entries stay flat (within 10%): the highest heap and entry count of the run's last third over those of its middle third: the
 * store sweeps its expired entries every so many writes, so its size is a saw-tooth, flat when its
 * peaks stop rising once the retention windows are full, growing when they keep rising.
 */
function retentionFlat(r) {
  const third = (from, to) => r.samples.filter((s) => s.day > (r.days * from) / 3 && s.day <= (r.days * to) / 3);
  const [middle, last] = [third(1, 2), third(2, 3)];
  if (!middle.length || !last.length) return undefined;
  const peak = (samples, key) => Math.max(...samples.map((s) => s[key]));
  const rise = (key) => peak(last, key) / peak(middle, key);
  return { heap: rise('heapMiB'), entries: rise('entries') };
}

// ---------------------------------------------------------------- 5. the desk at 1M outcomes
/**
 * desk.mjs for each store in turn (its own process; the next store is filled only once the
 * previous one's keys or tables are gone), with DESK_SIZE outcome records.
 */
async function desk() {
  log(`desk: the desk's pages over HTTP with ${DESK_SIZE} outcome records; ${DESK_STORES.join(', ')}`);
  const stores = [];
  for (const kind of DESK_STORES)
    stores.push(
      await inStoreOfItsOwn(kind, DESK_REDIS_URL, DESK_POSTGRES_URL, 'DESK_POSTGRES_URL', () =>
        forkChild('./desk.mjs', [kind, DESK_REDIS_URL, DESK_POSTGRES_URL, String(DESK_SIZE)], {
          readyTimeoutMs: 3_600_000,
        }),
      ),
    );
  const result = { size: DESK_SIZE, stores };
  log(deskTable(result));
  return result;
}

const DESK_PAGES = [
  ['overview', 'overview (`GET /desk/`)'],
  ['payment', "a payment's page (random payments, every other one with a story)"],
  ['charts', 'charts, last 30 days'],
];

function deskTable(d) {
  const out = [];
  for (const x of d.stores) {
    if (x.skipped) {
      out.push(`${x.store}: skipped: ${x.skipped}`, '');
      continue;
    }
    out.push(
      `**${x.store}**, ${x.size} outcome records (filled in ${fmt(x.fillSecs, 1)} s; read back through the store's API against the engine's records: ${x.fillCheck === 'same' ? 'same' : '**differ**'}; ${x.stories} story entries)`,
      '',
      '| page | p50 ms | p99 ms | max ms | requests | size KiB | target (p50) | met |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const [key, label] of DESK_PAGES) {
      const p = x.pages[key];
      const target = x.targets[key];
      out.push(
        `| ${label} | ${fmt(p.p50, 1)} | ${fmt(p.p99, 1)} | ${fmt(p.max, 1)} | ${p.requests} | ${fmt(p.kiB, 1)} | ${target ? `< ${target}` : ''} | ${target ? (p.p50 < target ? 'yes' : '**no**') : ''} |`,
      );
    }
    out.push(
      '',
      ...(x.upgrade?.indexBuildMs !== undefined
        ? [
            `After an upgrade: the index by outcome (\`<prefix>outcomes_outcome_idx\`) built by the migration's statement in ${fmt(x.upgrade.indexBuildMs)} ms (writes to the outcomes table wait meanwhile).`,
            '',
          ]
        : []),
      ...(x.upgrade?.overviews
        ? [
            `After an upgrade (the filter indexes dropped, as an earlier version leaves the store), overviews one after the other: ${x.upgrade.overviews.map((t) => fmt(t)).join(', ')} ms (the first ones build the filter indexes, a step per filtered read), ${fmt(x.upgrade.seconds, 1)} s in all.`,
            '',
          ]
        : []),
      `The overview's store reads, one at a time: ${Object.entries(x.reads)
        .map(([k, v]) => `${k} ${fmt(v.ms, 1)} ms (${v.pages} page${v.pages === 1 ? '' : 's'}, ${v.records} records)`)
        .join('; ')}.`,
      '',
    );
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- report
const TRACING_OFF = 'no SDK, telemetry: false';
const TRACING_ON = 'SDK, telemetry on';
const TRACING_HTTP = 'SDK + HTTP server spans, telemetry: false';
const TRACING_HTTP_ON = 'SDK + HTTP server spans, telemetry on';
/** The rows of client-overhead.mjs, by client name. */
const CLIENTS = {
  raw: 'raw node:http, keep-alive agent (floor)',
  naive: 'axios.post / axios.get per call (naive)',
  tuned: 'axios instance, keep-alive, maxRedirects 0 (tuned)',
  plugin: 'PaymentsClient',
  'plugin, signed webhook URL': 'PaymentsClient, signed webhook URL (HMAC + memory-store write)',
  'plugin (baseline build)': 'PaymentsClient of the baseline build',
  'plugin, signed webhook URL (baseline build)': 'PaymentsClient of the baseline build, signed webhook URL',
  'plugin, Redis store': 'PaymentsClient, Redis store',
  'plugin, PostgreSQL store': 'PaymentsClient, PostgreSQL store',
  'plugin, Redis store (baseline build)': 'PaymentsClient of the baseline build, Redis store',
  'plugin, PostgreSQL store (baseline build)': 'PaymentsClient of the baseline build, PostgreSQL store',
  'plugin, telemetry: false': 'PaymentsClient, telemetry: false',
  'plugin, SDK recording': 'PaymentsClient, SDK recording (no-op exporters)',
};
const clientRow = (results, operation, client, c) =>
  results?.find((x) => x.operation === operation && x.client === client && x.concurrency === c);
// Only rows measured in the same process and rounds as the tuned axios instance are paired with it.
const pairedWithTuned = (x) =>
  (x.mode ?? (x.client.includes('telemetry') || x.client.includes('SDK') ? 'telemetry' : 'clients')) === 'clients' &&
  x.client !== 'tuned';

/**
 * A client's figures against the tuned axios instance's, paired per round (the two ran seconds
 * apart in the same round): the median throughput ratio and the median CPU per call over it.
 */
function overTuned(results, operation, client, c, baseOperation = operation) {
  const x = clientRow(results, operation, client, c);
  const base = clientRow(results, baseOperation, 'tuned', c);
  if (!x || !base) return undefined;
  const n = Math.min(x.perRound.length, base.perRound.length);
  const rounds = Array.from({ length: n }, (_, k) => k);
  return {
    ratio: median(rounds.map((k) => x.perRound[k].rps / base.perRound[k].rps)),
    cpuOver: median(rounds.map((k) => x.perRound[k].cpuUsPerCall - base.perRound[k].cpuUsPerCall)),
  };
}

function clientTable(results) {
  const rows = [
    '| operation | client | c | req/s | CPU µs/call | p50 ms | p99 ms | ÷ tuned axios (req/s) | CPU µs/call over tuned axios | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of [1, 32]) {
    for (const x of results.filter((r) => r.concurrency === c)) {
      // A signed webhook URL is compared with the tuned axios generate_payment: what it adds is the plugin's.
      const vs = pairedWithTuned(x) ? overTuned(results, x.operation, x.client, c) : undefined;
      rows.push(
        `| ${x.operation} | ${CLIENTS[x.client] ?? x.client} | ${c} | ${fmt(x.rps)} | ${fmt(x.cpuUsPerCall)} | ${fmt(x.p50, 2)} | ${fmt(x.p99, 2)} | ${vs ? fmt(vs.ratio, 2) : x.client === 'tuned' ? '1.00' : ''} | ${vs ? fmt(vs.cpuOver) : x.client === 'tuned' ? '0' : ''} | ${x.errors} |`,
      );
    }
  }
  return rows.join('\n');
}

function ingestTable(list) {
  const rows = [
    '| store | variant | route | req/s | p50 ms | p99 ms | server CPU µs/request | × bare route | × verify baseline | non-2xx | handler runs | verify calls per settled payment |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const x of list) {
    if (x.skipped) {
      rows.push(`| ${x.store} | | webhook | skipped: ${x.skipped} | | | | | | | | |`);
      continue;
    }
    rows.push(
      `| ${x.store} | ${x.label} | bare \`@Post()\` returning 200 | ${fmt(x.bare.rps)} | ${fmt(x.bare.p50, 1)} | ${fmt(x.bare.p99, 1)} | ${fmt(x.bare.cpu)} | 1.00 | | | | |`,
    );
    rows.push(
      `| ${x.store} | ${x.label} | verify baseline: one \`GET verify_payment\` (tuned axios), 200 | ${fmt(x.baseline.rps)} | ${fmt(x.baseline.p50, 1)} | ${fmt(x.baseline.p99, 1)} | ${fmt(x.baseline.cpu)} | ${fmt(x.baseline.rps / x.bare.rps, 2)} | 1.00 | | | |`,
    );
    if (x.record)
      rows.push(
        `| ${x.store} | ${x.label} | baseline of its kind: verify, then the order recorded (${x.store === 'redis' ? 'one Redis `SET NX`' : 'BEGIN, UPDATE one order row, COMMIT'}), 200 | ${fmt(x.record.rps)} | ${fmt(x.record.p50, 1)} | ${fmt(x.record.p99, 1)} | ${fmt(x.record.cpu)} | ${fmt(x.record.rps / x.bare.rps, 2)} | ${fmt(x.record.rps / x.baseline.rps, 2)} | | | |`,
      );
    if (x.guarded)
      rows.push(
        `| ${x.store} | ${x.label} | guarded baseline of its kind: the payment claimed (${x.store === 'redis' ? 'one `SET NX PX`' : 'one `INSERT … ON CONFLICT` committed'}), verify, then the order recorded as above, 200 | ${fmt(x.guarded.rps)} | ${fmt(x.guarded.p50, 1)} | ${fmt(x.guarded.p99, 1)} | ${fmt(x.guarded.cpu)} | ${fmt(x.guarded.rps / x.bare.rps, 2)} | ${fmt(x.guarded.rps / x.baseline.rps, 2)} | | | |`,
      );
    rows.push(
      `| ${x.store} | ${x.label} | \`payments/webhook/:token\` (guard, claim, verify, handler, done) | ${fmt(x.webhook.rps)} | ${fmt(x.webhook.p50, 1)} | ${fmt(x.webhook.p99, 1)} | ${fmt(x.webhook.cpu)} | ${fmt(x.vsBare, 2)} | ${fmt(x.vsBaseline, 2)} | ${x.non2xx} | ${x.handled} | ${fmt(x.verifies / x.handledInSlices, 3)} |`,
    );
  }
  return rows.join('\n');
}

/** A summary row: the figure, its target, this run's value, and whether the target is met. */
function targetRow(figure, target, value, met) {
  return `| ${figure} | ${target} | ${value} | ${met === undefined ? '' : met ? 'yes' : '**no**'} |`;
}

function summaryRows(r) {
  const store = (kind) => r.ingest.find((x) => x.store === kind && x.tracing === 'off' && !x.story && !x.skipped);
  const off = store('memory');
  const forged = off?.forged;
  const b = r.budget;
  const ratio = (x) => (x ? `${fmt(x.rps, 2)}× (server CPU per request ${fmt(x.cpu, 2)}×)` : 'not measured');
  const rows = ['| figure | target | this run | met |', '|---|---|---:|---|'];
  if (r.client) {
    const vs = (operation, client) => [1, 32].map((c) => overTuned(r.client, operation, client, c));
    const show = (list) =>
      list
        .map((v) => (v ? `${fmt(v.ratio, 2)}× / ${v.cpuOver >= 0 ? '+' : ''}${fmt(v.cpuOver)} µs` : 'not measured'))
        .join(', ');
    const met = (list, test) => (list.every(Boolean) ? list.every(test) : undefined);
    // #39: generatePayment, each call paying a new order (the one-charge desk's work included), at
    // least as fast as the tuned axios call it replaces; verifyPayment keeps #12's target.
    for (const [operation, min] of [
      ['generatePayment', 1],
      ['verifyPayment', 0.95],
    ]) {
      const list = vs(operation, 'plugin');
      rows.push(
        targetRow(
          `PaymentsClient.${operation} ÷ tuned axios, CPU over it; c=1, c=32`,
          `≥ ${min.toFixed(2)}×, ≤ +25 µs`,
          show(list),
          met(list, (v) => v.ratio >= min && v.cpuOver <= 25),
        ),
      );
    }
    const signed = vs('generatePayment', 'plugin, signed webhook URL');
    rows.push(
      targetRow(
        'generatePayment with a signed webhook URL (HMAC + memory-store write), CPU over tuned axios; c=1, c=32',
        '≤ +40 µs',
        show(signed),
        met(signed, (v) => v.cpuOver <= 40),
      ),
    );
    const telemetry = [1, 32].map((c) => {
      const on = clientRow(r.client, 'generatePayment', 'plugin, SDK recording', c);
      const off = clientRow(r.client, 'generatePayment', 'plugin, telemetry: false', c);
      return on && off ? median(on.perRound.map((x, k) => x.rps / off.perRound[k].rps)) : undefined;
    });
    if (telemetry.every((v) => v !== undefined))
      rows.push(
        targetRow(
          'generatePayment, SDK recording ÷ telemetry: false; c=1, c=32',
          '≥ 0.9×',
          telemetry.map((v) => `${fmt(v, 2)}×`).join(', '),
          telemetry.every((v) => v >= 0.9),
        ),
      );
  }
  const tx = r.inbox?.rows;
  if (tx) {
    const [, transactional, inbox] = tx;
    rows.push(
      targetRow(
        "statements the inbox adds to the handler's transaction, beside the transactional store (PostgreSQL)",
        '≤ 1',
        `${fmt(inbox.inTransaction - transactional.inTransaction, 2)} (inbox ${fmt(inbox.inTransaction, 2)}, transactional ${fmt(transactional.inTransaction, 2)}, the handler's own write included)`,
        inbox.inTransaction - transactional.inTransaction <= 1,
      ),
    );
  }
  for (const [kind, x] of Object.entries(r.storyRatios ?? {}))
    if (x)
      rows.push(
        targetRow(
          `webhook ingest (${kind} store), the payments' stories kept / not kept, paired median`,
          '≥ 0.95×',
          ratio(x),
          x.rps >= 0.95,
        ),
      );
  const m = r.memoryRatios ?? {};
  if (m.onVsOff)
    rows.push(
      targetRow(
        'webhook ingest (memory store), tracing on (SDK + plugin telemetry) / off (neither), paired median',
        '≥ 0.95×',
        ratio(m.onVsOff),
        m.onVsOff.rps >= 0.95,
      ),
    );
  if (m.httpOnVsHttp)
    rows.push(
      targetRow(
        "the plugin's share in an instrumented app: telemetry on / off, both with the SDK and HTTP server spans",
        '≥ 0.95×',
        ratio(m.httpOnVsHttp),
        m.httpOnVsHttp.rps >= 0.95,
      ),
    );
  if (m.httpVsOff)
    rows.push(
      targetRow('the SDK and HTTP server spans alone (plugin telemetry off) / neither', '', ratio(m.httpVsOff)),
    );
  // #20, raised by #39 to 0.9× on every store: each store against the baseline of its kind, what a
  // merchant would otherwise write: the verify call, then the payment recorded in the same kind of
  // database.
  const KIND = {
    memory: { name: 'memory', baseline: 'verify baseline', min: 0.9 },
    redis: { name: 'Redis', baseline: 'verify + one Redis write', min: 0.9 },
    postgres: { name: 'PostgreSQL server', baseline: 'verify + one transaction updating an order row', min: 0.9 },
    pglite: { name: 'PGlite', baseline: 'verify + one PGlite transaction updating an order row', min: 0.9 },
  };
  for (const kind of ['memory', 'redis', 'pglite', 'postgres']) {
    const x = store(kind);
    if (!x) continue;
    const { name, baseline, min } = KIND[kind];
    rows.push(
      targetRow(`webhook ingest, ${name} store ÷ ${baseline}`, `≥ ${min}×`, `${fmt(x.vsKind, 2)}×`, x.vsKind >= min),
    );
  }
  // No target: the store against a hand-written handler as safe as it is (a claim every instance
  // sees before the verify call), which tells the store's own cost from the claim's.
  for (const kind of ['redis', 'pglite', 'postgres']) {
    const x = store(kind);
    if (!x?.guarded) continue;
    rows.push(
      targetRow(
        `webhook ingest, ${KIND[kind].name} store ÷ claim, verify and record by hand (the guarded baseline)`,
        '',
        `${fmt(x.vsGuarded, 2)}×`,
      ),
    );
  }
  for (const kind of ['memory', 'redis', 'pglite', 'postgres']) {
    const x = store(kind);
    if (!x) continue;
    const target = kind === 'postgres' ? '≥ 0.6× bare' : '';
    rows.push(
      targetRow(
        `webhook ingest, ${KIND[kind].name} store: × bare route, × verify baseline`,
        target,
        `${fmt(x.vsBare, 2)}×, ${fmt(x.vsBaseline, 2)}×`,
        kind === 'postgres' ? x.vsBare >= 0.6 : undefined,
      ),
    );
  }
  if (forged)
    rows.push(
      targetRow(
        'verify calls per forged delivery',
        '0',
        `${fmt(forged.verifies / Math.max(1, forged.sent), 3)} (${forged.verifies} for ${forged.sent})`,
        forged.verifies === 0,
      ),
    );
  if (b)
    rows.push(
      targetRow(
        'verify calls per settled payment, two instances on one Redis, webhook + return + reconciliation',
        '≤ 1.1',
        b.skipped
          ? `skipped: ${b.skipped}`
          : `${fmt(b.perSettled, 3)} (${b.verifies} for ${b.settled}; handler runs ${b.handlerRuns})`,
        b.skipped ? undefined : b.perSettled <= 1.1,
      ),
    );
  for (const x of r.growth?.stores ?? []) {
    if (x.skipped || x.store === 'memory') continue;
    const [a, b] = growthEnds(x);
    if (!a || a === b) continue;
    const ratios = GROWTH_PATHS.slice(0, 3).map(([key]) => [p50Ratio(a, b, key), b[key].trips / a[key].trips]);
    rows.push(
      targetRow(
        `${x.store}: generatePayment, webhook, return at ${b.size} stored payments ÷ at ${a.size}: p50 latency, round trips`,
        '≤ 1.1×, ≤ 1.1×',
        ratios.map(([l, t]) => `${fmt(l, 2)}×, ${fmt(t, 2)}×`).join('; '),
        ratios.every(([l, t]) => l <= 1.1 && t <= 1.1),
      ),
    );
  }
  if (r.growth?.retention) {
    const flat = retentionFlat(r.growth.retention);
    if (flat)
      rows.push(
        targetRow(
          `memory store, ${r.growth.retention.payments} payments over ${fmt(r.growth.retention.days)} simulated days, default retention: highest heap and entries of the last third ÷ of the middle third`,
          '≤ 1.1×',
          `${fmt(flat.heap, 2)}×, ${fmt(flat.entries, 2)}×`,
          flat.heap <= 1.1 && flat.entries <= 1.1,
        ),
      );
  }
  for (const x of r.desk?.stores ?? []) {
    if (x.skipped) continue;
    for (const key of ['overview', 'payment'])
      rows.push(
        targetRow(
          `desk, ${x.store}, ${x.size} outcome records: ${key === 'overview' ? 'the overview' : "a payment's page"}, p50 (p99) over HTTP`,
          `< ${x.targets[key]} ms`,
          `${fmt(x.pages[key].p50, 1)} ms (${fmt(x.pages[key].p99, 1)} ms)`,
          x.pages[key].p50 < x.targets[key],
        ),
      );
  }
  const ingested = r.ingest.filter((x) => !x.skipped);
  if (ingested.length)
    rows.push(
      targetRow(
        'verify calls per settled payment, webhook ingest',
        '1',
        ingested
          .map(
            (x) => `${x.store}${x.store === 'memory' ? ` (${x.label})` : ''} ${fmt(x.verifies / x.handledInSlices, 3)}`,
          )
          .join('; '),
        ingested.every((x) => x.verifies === x.handledInSlices),
      ),
    );
  return rows.join('\n');
}

function report(r) {
  const off = r.ingest.find((x) => x.store === 'memory' && x.tracing === 'off');
  const forged = off?.forged;
  const b = r.budget;
  const notes = new URL('./notes.md', import.meta.url);
  return `# Benchmark results

Command: \`npm run bench\` (= \`npm run build && node bench/run.mjs\`)${r.quick ? ' with `--quick`: a smoke run, figures not meaningful' : ''}.
Run of ${r.date}, commit ${r.commit}, ${fmt(r.totalSeconds)} s in total.

Machine: Node ${r.facts.node}, ${r.facts.cpu}, ${r.facts.cores} cores, ${r.facts.memoryGiB} GiB, ${r.facts.os}.
Load average (1, 5, 15 min) at the start: ${r.facts.loadAtStart}; at the end: ${r.facts.loadAtEnd}. The machine is shared with
other work, which shows in the spread of the slices below: compare figures within this run, not across runs.
Everything runs on 127.0.0.1; the server under load, the stub of the service and the load generator are separate
processes sharing these ${r.facts.cores} cores.

## Summary

Each target of the issues (#12, #13, #20, #39, #40), computed from the figures below; "met" says whether this run reaches it.

${summaryRows(r)}

## Client overhead: \`generatePayment\` and \`verifyPayment\`

Each client makes the same calls (POST \`/api/v2/generate_payment\` with the same JSON body, GET
\`/api/v2/verify_payment/:id\`, same headers) to a stub of the service in a separate process
(\`bench/stub-server.mjs\`: pre-serialised answers and headers, request bodies drained unread), with 1 and with
32 calls in flight, and reads the same fields of the answer. Every client runs in the same process
(\`bench/client-overhead.mjs\`), which loads no OpenTelemetry SDK and no context manager (the plugin's default
telemetry, the API installed and no SDK registered), in turn: slices of ${r.config.clientSliceMs} ms, each after a forced GC and
an unmeasured fill at its concurrency, ${r.config.clientRounds} rounds with the order rotated every round, so that load from
outside the benchmark falls on every client alike. req/s and CPU are medians over the slices, p50/p99 over all
calls; CPU is \`process.cpuUsage()\` of the process over the slice divided by the calls it made. The ratio and
the CPU over the tuned axios instance are medians of the per-round pairs. "naive" is \`axios.post(fullUrl, body,
{ headers })\` / \`axios.get\` per call; "tuned" is one \`axios.create()\` instance with a keep-alive agent,
\`maxRedirects: 0\` and a timeout, with axios' default JSON handling; raw node:http (keep-alive agent,
\`JSON.stringify\` / \`JSON.parse\`) is the floor. The signed-webhook row is compared with the tuned
generate_payment. The telemetry rows (full run only) come from a process of their own, where the SDK
(\`bench/tracing.mjs\`: batch span processor, periodic metric reader, no-op exporters) is loaded.

${r.client ? clientTable(r.client) : 'Not measured in this run.'}
${r.baseline ? `\nThe "baseline build" rows are the PaymentsClient of ${r.baseline}, measured in the same slices as this build's (\`BENCH_BASELINE_DIST\`).\n` : ''}
## Webhook ingest, with verify_payment in the path

autocannon, ${r.config.ingestConnections} connections, ${r.config.ingestSecs} s per measurement, ${r.config.ingestRepeats} measurements per route (medians), against a Nest
app (Express adapter) in a separate process (\`bench/webhook-app.mjs\`), whose \`baseUrl\` is the stub (a separate
process answering \`GET /api/v2/verify_payment/:id\` with SUCCESS for the bound amount). Every webhook request is a
genuine confirmation of a distinct payment (a token signed with the app's secret and bound in its store, as
\`generatePayment\` does), so each one goes through the guard (token check, store lookup), the claim, one
verify_payment call to the stub, \`payment.confirmed\` to a trivial \`@OnPaymentConfirmed()\` handler, the done
marker and the outcome record. Two routes of the same app give the scale: the bare route, a \`@Post()\`
returning 200 (what Nest and Express cost), and the verify baseline, what a hand-written webhook handler must do
at least: one \`GET verify_payment\` to the same stub through a tuned axios instance (keep-alive, no redirects),
then 200, with no token, claim, handler or record. Every store's webhook route is bounded by that verify call, so
its ratio to the baseline is the plugin's own cost; the ratios are medians of per-repeat pairs (measured one
after the other). The Redis, PGlite and PostgreSQL apps have a third route, the baseline of the store's kind, what a
merchant would otherwise write: the same verify call, then the payment recorded in that database (Redis: one
\`SET order:<n> paid NX\`; PGlite and PostgreSQL: \`BEGIN\`, \`UPDATE\` of one order row, \`COMMIT\` on one
connection, a different row each request); the summary compares each store's webhook route with the baseline of
its kind (the memory store's is the verify baseline). That baseline is not as safe as the store: two deliveries of one
payment reaching two instances at once both verify and both record. A fourth route, the guarded baseline, adds what
a hand-written handler needs to be: the payment claimed where every instance sees it before the verify call (Redis:
\`SET claim:<id> <pid> PX 30000 NX\`; PGlite and PostgreSQL: one \`INSERT … ON CONFLICT DO UPDATE … WHERE\` the
claim has lapsed, committed on its own), then the verify call and the record as above; the summary gives each
store's ratio to it too, without a target. Server CPU is \`process.cpuUsage()\` of the app's process per request. "verify calls per settled
payment" is the stub's count of verify calls during the measured slices over the handler runs in them. PGlite
runs in the app's process (WASM, one connection); PostgreSQL is the server at ${r.postgresUrl.replace(/\/\/[^@]*@/, '//')} through a \`pg\`
Pool of 10. The memory-store apps differ only in tracing: no SDK and \`telemetry: false\` (an app without
OpenTelemetry); the SDK registered globally (no-op exporters, AsyncLocalStorage context manager) and the plugin's
telemetry (2 spans and 3 metric records per confirmation); and, as in an app instrumented by
\`@opentelemetry/instrumentation-http\`, a SERVER span around every request, active while the app handles it, with
the plugin's telemetry off and on. They are measured in turn, and the tracing ratios in the summary are medians
of the per-repeat ratios.

${ingestTable(r.ingest)}

${forged ? `Forged deliveries (memory store, no SDK): ${forged.sent} POSTs to \`payments/webhook/<token>\` with well-formed tokens whose signature is wrong, ${fmt(forged.rps)} req/s; ${forged.status401} answered 4xx; verify calls to the stub meanwhile: ${forged.verifies}.` : ''}

## Verify calls per settled payment: two instances, three paths

\`bench/verify-budget.mjs\`: ${
    b?.skipped
      ? `skipped: ${b.skipped}`
      : `${b.payments} payments, each bound and queued for reconciliation as \`generatePayment\` leaves them. Two \`PaymentsClient\`s (each with its own Redis connection and \`RedisPaymentsStore\`; they share only Redis, like two app processes) then get, for every payment at the same moment: the webhook delivered to both instances, the customer's return (\`reconcilePayment\`) on one of them, while both run reconciliation passes in a loop until the queue is empty.

| payments | settled | handler runs | verify calls | per settled payment | webhook answers | return results | reconciliation passes (per instance) | time |
|---:|---:|---:|---:|---:|---|---|---|---:|
| ${b.payments} | ${b.settled} | ${b.handlerRuns} | ${b.verifies} | ${fmt(b.perSettled, 3)} | ${Object.entries(
          b.answers.webhook,
        )
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')} | ${Object.entries(b.answers.return)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')} | ${b.reconciliationPasses.join(', ')} | ${fmt(b.seconds, 1)} s |`
  }

Why at most one verify per payment: every path goes through one claim per payment in the shared store
(\`outcome:<id>\`); whoever holds it verifies, the others get busy (webhook: 409 + Retry-After; return: waits for the
outcome record; reconciliation: leaves the entry for later) or done (no call). A verify can only be repeated when
the claim is released without an outcome (the service failed, or still pending).

## Exactly-once: the inbox beside the transactional store

\`bench/transactional.mjs\` (part \`inbox\`): webhook ingest on the PostgreSQL server, one order row written by the
confirmation handler, with the store's \`transactional: true\` (the handler's write and the done marker in one
transaction), with the inbox (\`sqlInbox\` on the orders' pool and a plain store: the inbox row, the handler's write
and a savepoint that proves the handler left the transaction open, then the store's bookkeeping), and with neither.
Statements are counted at the driver, per confirmation; "in the handler's transaction" are those between its
\`BEGIN\` and \`COMMIT\` (the handler's own write is one of them).

${r.inbox ? inboxTable(r.inbox) : 'Not measured in this run.'}

## How cost grows with the store

\`bench/growth.mjs\` (part \`growth\`): ${
    r.growth
      ? `each store filled to ${r.growth.sizes} payments (30% open: a binding and a queue entry as \`generatePayment\` leaves them; 70% done: binding, done marker, order settlement and outcome record as a confirmed webhook leaves them), every size's store side by side, measured in rounds (the stores in a rotated order each round, so that load from outside falls on every size alike): 300 calls of each path per size, one at a time, against the stub (\`--echo-tracking\`), and 18 reconciliation passes of 20 due payments. Round trips are store method calls, counted by a proxy around the store. The last column is the largest size over the smallest: p50 as the median of the per-round ratios, p99 and round trips over the whole run.

${growthTable(r.growth)}`
      : 'Not measured in this run.'
  }

## The desk with a large store

\`bench/desk.mjs\` (part \`desk\`): ${
    r.desk
      ? `each store filled with ${r.desk.size} outcome records (a month of a shop a year old: 70% confirmed, 27% expired, 3% failed, and per 10,000: 3 whose handlers fail, 3 overdue, 2 duplicates to refund, 1 whose refund was refused, 1 refunded, 3 mismatches; a story for 1 payment in 100, 30 days of hourly tallies), the desk mounted with \`createPaymentsDesk\` in an Express app on a loopback port, each page fetched one request at a time over one keep-alive connection after 3 unmeasured ones.

${deskTable(r.desk)}`
      : 'Not measured in this run.'
  }

## Store round trips per confirmation

Not timed here: the test suite counts them at each backend's wire (\`test/redis/round-trips.e2e-spec.ts\`), and
the table above shows what they cost under load, store by store, beside the verify baseline.
${existsSync(notes) ? `\n${readFileSync(notes, 'utf8')}` : ''}`;
}

async function main() {
  const facts = {
    ...machineFacts(),
    loadAtStart: os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
  log(
    `node ${facts.node}, ${facts.cpu}, ${facts.cores} cores${QUICK ? ' (quick run)' : ''}${ONLY ? ` (only: ${[...ONLY].join(', ')})` : ''}`,
  );
  const client = wanted('client') ? await clientOverhead() : undefined;

  const stub = forkChild('./stub-server.mjs');
  const { port } = await stub.next('ready');
  const stubUrl = `http://127.0.0.1:${port}`;
  const ingestResults = [];
  /** Ingest with the payments' stories kept ÷ without, per store (paired median). */
  const storyRatios = {};
  let memory;
  if (wanted('memory')) {
    memory = await ingest(
      'memory',
      [
        { label: TRACING_OFF, tracing: 'off', forged: true },
        ...(QUICK
          ? []
          : [
              { label: TRACING_ON, tracing: 'on' },
              { label: TRACING_HTTP, tracing: 'http' },
              { label: TRACING_HTTP_ON, tracing: 'http-on' },
              // The memory store keeps the payments' stories by default: the same app without.
              { label: `${TRACING_OFF}, story: false`, tracing: 'off', story: 'off' },
            ]),
      ],
      stubUrl,
    );
    ingestResults.push(...memory.list);
    storyRatios.memory = memory.ratios.storyOnVsOff;
  }
  // Redis and PostgreSQL keep no stories by default: the same app with them, side by side.
  const plain = [
    { label: TRACING_OFF, tracing: 'off' },
    ...(QUICK ? [] : [{ label: `${TRACING_OFF}, story: true`, tracing: 'off', story: 'on' }]),
  ];
  const ingestOf = async (kind) => {
    const result = await ingest(kind, plain, stubUrl);
    ingestResults.push(...result.list);
    storyRatios[kind] = result.ratios.storyOnVsOff;
  };
  const redisUp = await reachable(REDIS_URL, 6379);
  if (wanted('redis')) {
    if (redisUp) await ingestOf('redis');
    else ingestResults.push({ store: 'redis', skipped: `no Redis at ${REDIS_URL}` });
  }
  if (wanted('pglite')) await ingestOf('pglite');
  if (wanted('postgres')) {
    if (await reachable(POSTGRES_URL, 5432)) await ingestOf('postgres');
    else ingestResults.push({ store: 'postgres', skipped: `no PostgreSQL at ${POSTGRES_URL}` });
  }
  const inboxResult = wanted('inbox') ? await inboxCost() : undefined;
  const growthResult = wanted('growth') ? await growth() : undefined;
  const deskResult = wanted('desk') ? await desk() : undefined;
  const budget = wanted('budget')
    ? redisUp
      ? await verifyBudget(stubUrl)
      : { skipped: `no Redis at ${REDIS_URL}` }
    : undefined;
  await stub.stop();

  facts.loadAtEnd = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const totalSeconds = (performance.now() - started) / 1000;
  const result = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    facts,
    config: CFG,
    quick: QUICK,
    postgresUrl: POSTGRES_URL,
    // BENCH_BASELINE_DIST: another build's PaymentsClient measured in the same slices (before/after).
    baseline: process.env.BENCH_BASELINE_DIST
      ? (process.env.BENCH_BASELINE_LABEL ?? process.env.BENCH_BASELINE_DIST)
      : undefined,
    client,
    ingest: ingestResults,
    memoryRatios: memory?.ratios,
    storyRatios,
    budget,
    inbox: inboxResult,
    growth: growthResult,
    desk: deskResult,
    totalSeconds,
  };
  mkdirSync(new URL('./.work/', import.meta.url), { recursive: true });
  if (ONLY || QUICK) {
    // A partial or quick run never replaces RESULTS.md, which always shows one full run side by side.
    writeFileSync(new URL('./.work/partial.json', import.meta.url), JSON.stringify(result, null, 2));
    log(
      `\n${summaryRows(result)}\n\nwrote bench/.work/partial.json (${fmt(totalSeconds)} s); RESULTS.md left as it was`,
    );
    return;
  }
  writeFileSync(new URL('./.work/last.json', import.meta.url), JSON.stringify(result, null, 2));
  writeFileSync(new URL('./RESULTS.md', import.meta.url), report(result));
  log(`wrote bench/RESULTS.md (${fmt(totalSeconds)} s)`);
}

if (args.has('--report-only')) {
  writeFileSync(
    new URL('./RESULTS.md', import.meta.url),
    report(JSON.parse(readFileSync(new URL('./.work/last.json', import.meta.url), 'utf8'))),
  );
  log('rewrote bench/RESULTS.md from bench/.work/last.json');
} else {
  await main();
}
