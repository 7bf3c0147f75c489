// The payments desk against a large store (issue 40): with DESK_SIZE outcome records (default
// 1,000,000) in Redis or PostgreSQL, how long the desk's overview, a payment's page and the charts
// take over HTTP. Run by run.mjs (part `desk`), one process per store, one store at a time.
//
//   node desk.mjs <redis|postgres> <redisUrl> <postgresUrl> <size>
//
// The fill, as a shop a year old keeps it (its records live 30 days: the store holds the newest
// month, 2.5 s apart, newest first): 70% confirmed, 27% abandoned (expired), 3% failed, and per
// 10,000 payments 3 whose handlers fail, 3 overdue (pending past the fast checks), 2 duplicates to
// refund, 1 whose refund was refused, 1 refunded, 3 mismatches (300, 300, 200, 100, 100 and 300 at
// 1M), spread over the month. 1 payment in 100 has a story (created, verified, webhook answered,
// handlers ran), and the charts have 30 days of hourly tallies. Redis is filled through the store's
// own saveOutcome (thousands in flight on one connection, which ioredis pipelines); PostgreSQL by
// copying, in SQL, the row the store wrote for a template payment of each kind (ids and times
// substituted; seed.mjs). Both are read back through the store's API against the records the
// engine would write (`fillCheck`). Stories and tallies go through the store's story log.
//
// Then the desk is mounted as a merchant mounts it (`createPaymentsDesk` in an Express app, behind
// an `authorize` that lets the bench in) on a loopback port, and each page is fetched one request
// at a time over one keep-alive connection: DESK_WARMUPS (3) unmeasured, then DESK_REQUESTS (30)
// measured. Payment pages are of payments drawn at random, every other one with a story. Last, the
// overview's store reads are timed one by one (the scans of each list, and the latest records), to
// show which one costs what.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { quantile } from './common.mjs';
import { deleteRedisKeys, dropTables, fillByMethods, ISO, templateSubstitution } from './seed.mjs';

const dist = new URL('../dist/', import.meta.url).href;
const { PaymentsClient } = await import(`${dist}index.js`);
const { createPaymentsDesk } = await import(`${dist}desk/index.js`);
const express = (await import('express')).default;

const DAY = 24 * 3600 * 1000;
const RECORD_TTL = 30 * DAY; // outcomeRecordTtlSecs
const SPACING_MS = 2500; // between two records of the fill: 1M records span the month the store keeps
const WARMUPS = Number(process.env.DESK_WARMUPS ?? 3);
const REQUESTS = Number(process.env.DESK_REQUESTS ?? 30);
/** The targets of issue 40, in ms (p50 over the requests). */
export const TARGETS = { overview: 300, payment: 100 };
const FILL_NOW = Date.now();

// ---------------------------------------------------------------- the fill
const fillId = (n) => `pay_dsk_${n}__dsk-o-${n}`;
const fillTracking = (n) => `dsk-o-${n}`;
const updatedAt = (n) => FILL_NOW - 1000 - n * SPACING_MS;
const iso = (ms) => new Date(ms).toISOString();

/**
 * The kinds of record of the fill, the first whose test holds: `sql` is the same test on the
 * column `n` (the PostgreSQL copy picks the rows of a kind by it).
 */
const KINDS = [
  { name: 'handlers failing', test: (n) => n % 10_000 < 3, sql: 'n % 10000 < 3' },
  { name: 'overdue', test: (n) => n % 10_000 < 6, sql: 'n % 10000 < 6' },
  { name: 'duplicate to refund', test: (n) => n % 10_000 < 8, sql: 'n % 10000 < 8' },
  { name: 'duplicate, refund refused', test: (n) => n % 10_000 < 9, sql: 'n % 10000 < 9' },
  { name: 'duplicate, refunded', test: (n) => n % 10_000 < 10, sql: 'n % 10000 < 10' },
  { name: 'mismatch', test: (n) => n % 10_000 < 13, sql: 'n % 10000 < 13' },
  { name: 'expired', test: (n) => n % 100 < 27, sql: 'n % 100 < 27' },
  { name: 'failed', test: (n) => n % 100 < 30, sql: 'n % 100 < 30' },
  { name: 'confirmed', test: () => true, sql: 'true' },
];
const kindOf = (n) => KINDS.findIndex((k) => k.test(n));
/** Payments with a story: 7, 107, 207, ... */
const STORY_EVERY = 100;
const STORY_FIRST = 7;

/** The outcome record the engine leaves for payment n of the fill (see the header), of its kind and time. */
function recordOf(n, kind = KINDS[kindOf(n)].name, at = updatedAt(n)) {
  const base = {
    paymentId: fillId(n),
    outcome: 'confirmed',
    status: 'SUCCESS',
    source: 'webhook',
    handlers: 'succeeded',
    attempts: 1,
    amount: '12500',
    developerTrackingId: fillTracking(n),
    updatedAt: iso(at),
  };
  switch (kind) {
    case 'handlers failing':
      return {
        ...base,
        source: 'reconciliation',
        handlers: 'failed',
        attempts: 4,
        lastError: 'Error: fulfilment service answered 503 Service Unavailable',
      };
    case 'overdue':
      return {
        ...base,
        outcome: 'pending',
        status: 'PENDING',
        source: 'reconciliation',
        handlers: 'none',
        attempts: 0,
        lastError: `overdue: outcome unknown after 9 checks; slow lane, next check at ${iso(at + 3_600_000)} (last: PENDING)`,
      };
    case 'duplicate to refund':
      return { ...base, outcome: 'duplicate', settledBy: `pay_dsk_${n}_first__dsk-o-${n}` };
    case 'duplicate, refund refused':
      return {
        ...base,
        outcome: 'duplicate',
        settledBy: `pay_dsk_${n}_first__dsk-o-${n}`,
        refundState: 'refused',
        refundTries: 1,
        refundError: 'REFUND_NOT_ALLOWED',
      };
    case 'duplicate, refunded':
      return {
        ...base,
        outcome: 'duplicate',
        settledBy: `pay_dsk_${n}_first__dsk-o-${n}`,
        refundState: 'refunded',
        refundTries: 1,
        refund: { refundId: `rf_${n}`, amount: '12500', status: 'SUCCESS', refundedAt: iso(at - 500) },
      };
    case 'mismatch':
      return {
        ...base,
        outcome: 'mismatch',
        handlers: 'none',
        amount: '1250',
        lastError: 'verified amount 1250 differs from the 12500 sent',
      };
    case 'expired':
      return { ...base, outcome: 'expired', status: 'EXPIRED', source: 'reconciliation', handlers: 'none' };
    case 'failed':
      return { ...base, outcome: 'failed', status: 'FAILURE', handlers: 'none' };
    default:
      return base;
  }
}

const saveRecord = (store, n) => store.saveOutcome(recordOf(n), RECORD_TTL);

/** A payment's story as the engine tells it: generated, webhook delivered and verified, handlers ran. */
function storyOf(n) {
  const at = updatedAt(n);
  const entry = (ms, source, kind, answer) => ({
    paymentId: fillId(n),
    at: iso(ms),
    instance: 'shop-1:4242',
    source,
    kind,
    answer,
  });
  return [
    entry(at - 95_000, 'generate', 'created', '12500'),
    entry(at - 1500, 'webhook', 'verify', 'SUCCESS'),
    entry(at - 800, 'webhook', 'handlers', 'succeeded'),
    entry(at, 'webhook', 'webhook', '200 handled'),
  ];
}

/** The stories (1 payment in 100) and 30 days of hourly tallies, through the store's story log. */
async function writeStories(store, size) {
  const stories = [];
  for (let n = STORY_FIRST; n < size; n += STORY_EVERY) stories.push(...storyOf(n));
  for (let i = 0; i < stories.length; i += 800)
    await store.story.append({ registration: '', entries: stories.slice(i, i + 800), tallies: [] });
  const hours = 30 * 24;
  const perHour = size / hours;
  const tallies = [];
  for (let h = 0; h < hours; h++) {
    const bucket = Math.floor((FILL_NOW - h * 3_600_000) / 3_600_000) * 3_600_000;
    const add = (name, by) => by >= 1 && tallies.push({ name, by: Math.round(by), bucket });
    add('outcome.confirmed', perHour * 0.7);
    add('outcome.expired', perHour * 0.27);
    add('outcome.failed', perHour * 0.03);
    add('outcome.duplicate', (perHour * 5) / 10_000 + (h % 3 === 0 ? 1 : 0));
    add('outcome.mismatch', h % 7 === 0 ? 1 : 0);
    add('settled', perHour * 0.7);
    add('verify.settled', perHour * 0.72);
    add('verify.stranger', h % 5 === 0 ? 1 : 0);
    add('webhook.refused', h % 11 === 0 ? 2 : 0);
    add('handled.le.250', perHour * 0.5);
    add('handled.le.1000', perHour * 0.18);
    add('handled.le.5000', perHour * 0.02);
  }
  for (let i = 0; i < tallies.length; i += 1000)
    await store.story.append({ registration: '', entries: [], tallies: tallies.slice(i, i + 1000) });
  return stories.length;
}

/** Template payments of the PostgreSQL copy, one per kind: a number no payment of the fill has. */
const templateOf = (k) => 900_000_000_000 + k;

/**
 * Copies, in SQL, the row the store wrote for each kind's template payment to the payments [0,
 * size) of that kind: the template's number replaced by n, its times shifted as updatedAt(n) is.
 */
async function fillByCopy(store, pool, table, size) {
  // The templates are dated as payment 0; payment n is SPACING_MS * n older.
  for (const [k, kind] of KINDS.entries())
    await store.saveOutcome(recordOf(templateOf(k), kind.name, updatedAt(0)), RECORD_TTL);
  const times = {};
  for (const [k] of KINDS.entries()) {
    const { rows } = await pool.query(`SELECT record::text AS r FROM ${table} WHERE payment_id = $1`, [
      fillId(templateOf(k)),
    ]);
    times[k] = [...new Set(rows[0].r.match(ISO))];
  }
  const step = 100_000;
  for (let lo = 0; lo < size; lo += step) {
    const hi = Math.min(size, lo + step) - 1;
    for (const [k] of KINDS.entries()) {
      const t = templateOf(k);
      const sub = templateSubstitution(t, times[k], `n * interval '${-SPACING_MS} milliseconds'`);
      const kind = `CASE ${KINDS.map((x, i) => `WHEN ${x.sql} THEN ${i}`).join(' ')} END`;
      await pool.query(`INSERT INTO ${table} (payment_id, outcome, handlers, updated_at, record, expires_at)
SELECT ${sub('t.payment_id')}, t.outcome, t.handlers, ${sub('t.updated_at')}, ${sub('t.record::text')}::jsonb, t.expires_at
FROM ${table} t, generate_series(${lo}, ${hi}) AS n WHERE ${kind} = ${k} AND t.payment_id = '${fillId(t)}'`);
    }
  }
  for (const [k] of KINDS.entries())
    await pool.query(`DELETE FROM ${table} WHERE payment_id = $1`, [fillId(templateOf(k))]);
}

/** Sorted-key JSON: the same text for the same record, whatever order a store keeps its keys in. */
const canonical = (value) =>
  JSON.stringify(value, (_, v) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v,
  );

/**
 * Payments of every kind (the first, one in the middle, the last of each) read back through the
 * store's API against the record the engine would have written: 'same', or the first that differs.
 */
async function fillCheck(store, size) {
  const find = (k, from, step) => {
    for (let n = from; n >= 0 && n < size; n += step) if (kindOf(n) === k) return n;
    return undefined;
  };
  const picks = KINDS.flatMap((_, k) => [find(k, 0, 1), find(k, size >> 1, 1), find(k, size - 1, -1)]);
  for (const n of new Set(picks.filter((n) => n !== undefined))) {
    const read = await store.getOutcome(fillId(n));
    if (canonical(read) !== canonical(recordOf(n))) return { payment: n, read, expected: recordOf(n) };
  }
  return 'same';
}

// ---------------------------------------------------------------- stores
async function openStore(kind, redisUrl, postgresUrl) {
  if (kind === 'redis') {
    const { RedisPaymentsStore } = await import(`${dist}redis/index.js`);
    const { Redis } = await import('ioredis');
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    const store = new RedisPaymentsStore(redis, { keyPrefix: 'dsk:', story: true, operationTimeoutMs: 60_000 });
    return {
      store,
      fill: (size) => fillByMethods(store, 0, size, 2000, saveRecord),
      size: async () => ({
        keys: await redis.dbsize(),
        usedMiB: Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]) / 2 ** 20,
      }),
      close: () => redis.quit(),
      empty: () => deleteRedisKeys(redisUrl, 'dsk:*'),
      // The store as an earlier version left it: no filter index (redis.records.ts).
      dropFilterIndexes: () => deleteRedisKeys(redisUrl, 'dsk:outcomes:by:*'),
    };
  }
  const { PostgresPaymentsStore, paymentsStoreMigration } = await import(`${dist}postgres/index.js`);
  const pg = await import('pg');
  const pool = new (pg.default ?? pg).Pool({ connectionString: postgresUrl, max: 10 });
  const store = new PostgresPaymentsStore(pool, { tablePrefix: 'dsk_', story: true, operationTimeoutMs: 60_000 });
  await store.ping();
  return {
    store,
    async fill(size) {
      await fillByCopy(store, pool, '"dsk_outcomes"', size);
      await pool.query('VACUUM ANALYZE "dsk_outcomes"');
    },
    size: async () => {
      const { rows } = await pool.query(`SELECT pg_total_relation_size('"dsk_outcomes"')::float8 AS bytes`);
      return { outcomesMiB: rows[0].bytes / 2 ** 20 };
    },
    close: async () => {
      await store.close();
      await pool.end();
    },
    empty: () => dropTables(postgresUrl, 'dsk\\_%'),
    /**
     * What an existing install's upgrade costs: the index by outcome dropped, then created by its
     * statement of the migration (as the store runs it when it starts), in ms.
     */
    async indexBuild() {
      const statement = paymentsStoreMigration({ tablePrefix: 'dsk_' })
        .split('\n')
        .find((line) => line.includes('outcomes_outcome_idx'));
      await pool.query('DROP INDEX "dsk_outcomes_outcome_idx"');
      const start = performance.now();
      await pool.query(statement);
      return performance.now() - start;
    },
  };
}

// ---------------------------------------------------------------- the desk over HTTP
/** The desk mounted at /desk of an Express app on a loopback port, as docs/desk.md mounts it. */
async function mountDesk(client) {
  const app = express();
  app.use('/desk', createPaymentsDesk({ client, authorize: () => ({ id: 'bench', name: 'Bench' }) }));
  const server = http.createServer(app);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** GET `path` over `agent`: the time to the last byte of a 200, in ms. */
function get(port, agent, path) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const request = http.get({ host: '127.0.0.1', port, path, agent }, (response) => {
      let bytes = 0;
      response.on('data', (chunk) => (bytes += chunk.length));
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`GET ${path}: ${response.statusCode}`));
        else resolve({ ms: performance.now() - start, bytes });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/** Each page, WARMUPS then REQUESTS one at a time: p50, p99, max and the page's size. */
async function measurePages(port, size) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let seed = 40;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const storied = Math.ceil((size - STORY_FIRST) / STORY_EVERY); // how many payments below size have one
  const paymentPath = (i) => {
    const n = i % 2 ? Math.floor(random() * storied) * STORY_EVERY + STORY_FIRST : Math.floor(random() * size);
    return `/desk/payments/${encodeURIComponent(fillId(n))}`;
  };
  const pages = {
    overview: () => '/desk/',
    payment: paymentPath,
    charts: () => '/desk/charts?window=30d',
  };
  const out = {};
  for (const [name, path] of Object.entries(pages)) {
    for (let i = 0; i < WARMUPS; i++) await get(port, agent, path(i));
    const times = [];
    let bytes = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const r = await get(port, agent, path(i));
      times.push(r.ms);
      bytes = Math.max(bytes, r.bytes);
    }
    const sorted = times.sort((a, b) => a - b);
    out[name] = {
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted[sorted.length - 1],
      requests: REQUESTS,
      kiB: bytes / 1024,
    };
    process.stderr.write(
      `desk: ${name}: p50 ${out[name].p50.toFixed(1)} ms, p99 ${out[name].p99.toFixed(1)} ms, max ${out[name].max.toFixed(1)} ms\n`,
    );
  }
  agent.destroy();
  return out;
}

/**
 * The overview's store reads one at a time, as desk.data.ts makes them (pages of 500 up to 5000
 * matching records): per list, the time, the pages read and the records found.
 */
async function profileOverview(store) {
  const scans = {
    'handlers failed': { handlers: 'failed' },
    'outcome pending': { outcome: 'pending' },
    'outcome duplicate': { outcome: 'duplicate' },
    'outcome mismatch': { outcome: 'mismatch' },
  };
  const out = {};
  for (const [name, query] of Object.entries(scans)) {
    const start = performance.now();
    let cursor;
    let records = 0;
    let pages = 0;
    do {
      const page = await store.listOutcomes({ ...query, limit: Math.min(500, 5000 - records), cursor });
      pages++;
      records += page.items.length;
      cursor = page.nextCursor;
    } while (cursor !== undefined && records < 5000);
    out[name] = { ms: performance.now() - start, pages, records };
  }
  const start = performance.now();
  await store.listOutcomes({ limit: 20 });
  out['latest 20'] = { ms: performance.now() - start, pages: 1, records: 20 };
  process.stderr.write(
    `desk: overview's reads: ${Object.entries(out)
      .map(([k, v]) => `${k} ${v.ms.toFixed(1)} ms (${v.pages} pages, ${v.records} records)`)
      .join('; ')}\n`,
  );
  return out;
}

/**
 * Redis: the store as an earlier version left it (its filter indexes dropped), then overviews one
 * after the other until one is under the target: the first ones read the index of every record
 * while each filtered read builds a step of the filter indexes.
 */
async function afterUpgrade(port, opened) {
  await opened.dropFilterIndexes();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times = [];
  const start = performance.now();
  do times.push((await get(port, agent, '/desk/')).ms);
  while (times[times.length - 1] >= TARGETS.overview && times.length < 20);
  agent.destroy();
  const out = { overviews: times, seconds: (performance.now() - start) / 1000 };
  process.stderr.write(
    `desk: after an upgrade: overviews ${times.map((t) => t.toFixed(0)).join(', ')} ms (${out.seconds.toFixed(1)} s)\n`,
  );
  return out;
}

// ---------------------------------------------------------------- main
async function run(kind, redisUrl, postgresUrl, sizeArg) {
  const size = Number(sizeArg);
  const opened = await openStore(kind, redisUrl, postgresUrl);
  const client = new PaymentsClient({
    publicKey: 'pk_bench',
    privateKey: 'sk_bench_private',
    baseUrl: 'http://127.0.0.1:9', // never called: the pages measured only read the store
    successLink: 'https://shop.example.com/checkout/success',
    failLink: 'https://shop.example.com/checkout/failed',
    webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: 'bench-webhook-secret-0123456789abcdef-0123' },
    reconciliation: { enabled: false },
    telemetry: false,
    logger: {
      log() {},
      warn: (m) => process.stderr.write(`desk: ${m}\n`),
      error: (m) => process.stderr.write(`desk: ${m}\n`),
    },
    store: opened.store,
  });
  let server;
  try {
    const t0 = performance.now();
    await opened.fill(size);
    const stories = await writeStories(opened.store, size);
    const fillSecs = (performance.now() - t0) / 1000;
    const check = await fillCheck(opened.store, size);
    if (check !== 'same') process.stderr.write(`desk: ${kind}: the fill differs: ${JSON.stringify(check)}\n`);
    process.stderr.write(
      `desk: ${kind} ${size} outcomes filled in ${fillSecs.toFixed(1)} s (${stories} story entries)\n`,
    );
    const counts = Object.fromEntries(KINDS.map((k) => [k.name, 0]));
    for (let n = 0; n < size; n++) counts[KINDS[kindOf(n)].name]++;
    server = await mountDesk(client);
    const pages = await measurePages(server.address().port, size);
    const reads = await profileOverview(opened.store);
    const upgrade = opened.dropFilterIndexes
      ? await afterUpgrade(server.address().port, opened)
      : { indexBuildMs: await opened.indexBuild() };
    if (upgrade.indexBuildMs !== undefined)
      process.stderr.write(
        `desk: after an upgrade: the index by outcome built in ${upgrade.indexBuildMs.toFixed(0)} ms\n`,
      );
    return {
      store: kind,
      size,
      fillSecs,
      fillCheck: check,
      counts,
      stories,
      storeSize: await opened.size(),
      pages,
      reads,
      upgrade,
      targets: TARGETS,
    };
  } finally {
    if (server) await new Promise((resolve) => server.close(resolve));
    await client.close();
    await opened.close();
    await opened.empty();
  }
}

const [kind, redisUrl, postgresUrl, size] = process.argv.slice(2);
const result = await run(kind, redisUrl, postgresUrl, size);
process.send({ type: 'result', ...result });
process.on('message', (message) => message?.type === 'stop' && process.exit(0));
