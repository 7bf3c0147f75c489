// What one paid webhook costs each store, beside the hand-written handler of its kind: the
// commands or statements sent per request and the round trips they take (counted at the driver
// in the app: bench/webhook-app.mjs), the app's CPU per request, and the database server's CPU per
// request (PostgreSQL: the backends of this database, from /proc; Redis: the server process, which
// other clients of the same server share, so only a rough figure). With BENCH_BEFORE_DIST (a copy of
// dist/ from before a change), a second app runs that build, and the two are measured in
// alternating slices, so that their figures and ratios share the machine's load.
//
//   npm run build && node bench/ingest-wire.mjs [memory,redis,pglite,postgres] [seconds] [repeats]
//   BENCH_BEFORE_DIST=bench/.work/dist-before node bench/ingest-wire.mjs postgres 3 4
//
// REDIS_URL and POSTGRES_URL as for bench/run.mjs. Every webhook is a distinct genuine payment.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { forkChild, fmt, median } from './common.mjs';

const [kindsArg = 'memory,redis,pglite,postgres', secondsArg = '3', repeatsArg = '3'] = process.argv.slice(2);
const SECONDS = Number(secondsArg);
const REPEATS = Number(repeatsArg);
const CONNECTIONS = 16;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BEFORE = process.env.BENCH_BEFORE_DIST;
// The apps count what they send at the driver (see webhook-app.mjs).
process.env.BENCH_WIRE = '1';
const TOKENS = { memory: 40_000, redis: 30_000, pglite: 8000, postgres: 15_000 };

const stub = forkChild('./stub-server.mjs');
const { port: stubPort } = await stub.next('ready');
const stubUrl = `http://127.0.0.1:${stubPort}`;
const body = (id) => JSON.stringify({ payment_id: id, status: 'completed' });

// CPU jiffies (user + system) of each process, from /proc; in µs. A process gone is left out.
const TICK_US = 1e6 / 100;
const cpuOf = (pids) => {
  const out = new Map();
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_US);
    } catch {
      // exited
    }
  }
  return out;
};
// CPU used between two readings by the processes alive at the second: a backend started meanwhile
// counts whole, one that exited meanwhile is lost (the pool keeps its backends while loaded).
const cpuBetween = (before, after) => {
  let us = 0;
  for (const [pid, end] of after) us += end - (before.get(pid) ?? 0);
  return us;
};

// The database server's processes that serve the app: PostgreSQL's backends on this database
// (the app's pool), Redis' one process.
async function serverPids(kind) {
  if (kind === 'postgres') {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    const { rows } = await client.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    await client.end();
    return rows.map((r) => r.pid);
  }
  if (kind === 'redis') {
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL);
    const info = await redis.info('server');
    await redis.quit();
    return [Number(/process_id:(\d+)/.exec(info)[1])];
  }
  return [];
}

function load(port, path, makeRequest, seconds) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [
          { method: 'POST', path, headers: { 'content-type': 'application/json' }, setupRequest: makeRequest },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

async function startApp(kind, label, dist) {
  // forkChild passes this process' environment: BENCH_DIST only while forking.
  const saved = process.env.BENCH_DIST;
  if (dist) process.env.BENCH_DIST = dist;
  else delete process.env.BENCH_DIST;
  const child = forkChild('./webhook-app.mjs', [kind, String(TOKENS[kind]), stubUrl, REDIS_URL, POSTGRES_URL, 'off'], {
    readyTimeoutMs: 180_000,
  });
  if (saved === undefined) delete process.env.BENCH_DIST;
  else process.env.BENCH_DIST = saved;
  const ready = await child.next('ready', 180_000);
  let next = 0;
  let order = 0;
  const routes = {
    webhook: {
      path: '/payments/webhook',
      makeRequest: (req) => {
        const [token, id] = ready.tokens[next++ % ready.tokens.length];
        return { ...req, path: `/payments/webhook/${token}`, body: body(id) };
      },
    },
    ...(ready.recordBaseline
      ? { record: { path: '/record-baseline', makeRequest: (req) => ({ ...req, body: body(`pay_rec_${order++}`) }) } }
      : { verify: { path: '/verify-baseline', makeRequest: (req) => ({ ...req, body: body('pay_baseline') }) } }),
  };
  return { kind, label, child, port: ready.port, routes, slices: {}, sent: () => next, tokens: ready.tokens.length };
}

const mark = async (app) => (app.child.send({ type: 'mark' }), app.child.next('mark'));

async function slice(app, route, seconds, kind) {
  const { path, makeRequest } = app.routes[route];
  const m0 = await mark(app);
  const pids = await serverPids(kind);
  const s0 = cpuOf(pids);
  const result = await load(app.port, path, makeRequest, seconds);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const m1 = await mark(app);
  const s1 = cpuOf(new Set([...pids, ...(await serverPids(kind))]));
  const requests = Math.max(1, m1.requests - m0.requests);
  const byName = {};
  for (const [name, n] of Object.entries(m1.wire.byName)) {
    const d = n - (m0.wire.byName[name] ?? 0);
    if (d) byName[name] = d / requests;
  }
  return {
    rps: result.requests.average,
    non2xx: result.non2xx + result.errors,
    appCpu: (m1.cpuUs - m0.cpuUs) / requests,
    serverCpu: kind === 'redis' || kind === 'postgres' ? cpuBetween(s0, s1) / requests : NaN,
    commands: (m1.wire.commands - m0.wire.commands) / requests,
    trips: (m1.wire.trips - m0.wire.trips) / requests,
    byName,
  };
}

for (const kind of kindsArg.split(',')) {
  const apps = [await startApp(kind, 'this build')];
  if (BEFORE) apps.push(await startApp(kind, 'before', BEFORE));
  for (const app of apps) for (const route of Object.keys(app.routes)) await slice(app, route, 1, kind); // warm-up
  for (let r = 0; r < REPEATS; r++) {
    for (const app of r % 2 ? [...apps].reverse() : apps) {
      for (const route of Object.keys(app.routes)) {
        const s = await slice(app, route, SECONDS, kind);
        (app.slices[route] ??= []).push(s);
      }
    }
  }
  console.log(`\n${kind} store (${SECONDS} s slices × ${REPEATS}, ${CONNECTIONS} connections)`);
  for (const app of apps) {
    const [own, base] = Object.keys(app.routes);
    const ratio = median(app.slices[own].map((w, k) => w.rps / app.slices[base][k].rps));
    for (const route of [own, base]) {
      const list = app.slices[route];
      const m = (key) => median(list.map((x) => x[key]));
      const names = {};
      for (const x of list) for (const [n, v] of Object.entries(x.byName)) (names[n] ??= []).push(v);
      console.log(
        `  ${app.label.padEnd(10)} ${route.padEnd(8)} ${fmt(m('rps')).padStart(6)} req/s  app ${fmt(m('appCpu')).padStart(5)} µs/req  server ${fmt(m('serverCpu')).padStart(5)} µs/req  ${fmt(m('commands'), 2)} commands, ${fmt(m('trips'), 2)} round trips/req  non-2xx ${list.reduce((a, x) => a + x.non2xx, 0)}`,
      );
      for (const [n, v] of Object.entries(names)) console.log(`      ${fmt(median(v), 2).padStart(5)}  ${n}`);
    }
    console.log(`  ${app.label}: webhook ÷ ${base} baseline ${fmt(ratio, 2)}× (paired median)`);
    if (app.sent() > app.tokens)
      console.log(`  WARNING: ${app.label} ran out of tokens (${app.sent()} > ${app.tokens})`);
  }
  for (const app of apps) await app.child.stop();
}
await stub.stop();
