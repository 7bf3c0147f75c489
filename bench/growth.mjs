// How cost grows with the store's size (issue 39): the engine's per-payment latency and store round
// trips against a store holding 10k, 100k and 1M payments, a reconciliation pass over a long
// queue, the store's size and the process's heap. Run by run.mjs (part `growth`, with
// --expose-gc), one process per store, against the stub of the service in another process
// (bench/stub-server.mjs --echo-tracking: every payment generated for an order is confirmed).
//
//   node --expose-gc growth.mjs measure <memory|redis|postgres> <stubUrl> <redisUrl> <postgresUrl> <sizes>
//   node --expose-gc growth.mjs retention <stubUrl> <payments>
//
// `measure`: for each size in turn the store is filled up to it (30% open: a binding and a queue
// entry, as generatePayment leaves them; 70% done: a binding, the done marker, the order's
// settlement and the outcome record, as a confirmed webhook leaves them), then GROWTH_SAMPLES calls
// of each path are timed one at a time: generatePayment (a fresh order each), a paid webhook (a
// signed token through the client's webhook processor), a return (reconcilePayment), and
// reconciliation passes (runReconciliation over GROWTH_PASSES batches due now, the rest of the
// queue due later). The store is wrapped in a counting proxy: every store method called is one
// round trip. The memory and Redis stores are filled through their own methods (Redis: thousands
// in flight on one connection, which ioredis pipelines); PostgreSQL by copying, in SQL, the rows
// the store's methods wrote for one template payment (ids and times substituted), which fills
// 1M payments in well under a minute where one statement per row would take many.
//
// `retention`: the memory store through the full engine on a test clock moved forward, `payments`
// payments over simulated months (default retention, reconciliation passes every simulated
// minute), the store's entries and the heap read every simulated week: flat once the retention
// windows are full, or something leaks.
import { performance } from 'node:perf_hooks';
import { median, quantile } from './common.mjs';
import { deleteRedisKeys, dropTables, fillByMethods, ISO, templateSubstitution } from './seed.mjs';

const dist = new URL('../dist/', import.meta.url).href;
const { PaymentsClient } = await import(`${dist}index.js`);
const { MemoryPaymentsStore } = await import(`${dist}store/index.js`);
const { WebhookTokenSigner } = await import(`${dist}core/webhook/webhook.token.js`);

const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const DAY = 24 * 3600 * 1000;
const TOKEN_TTL = 7 * DAY; // webhook.tokenTtlSecs
const DONE_TTL = 30 * DAY; // webhook.doneTtlSecs
const RECORD_TTL = 30 * DAY; // outcomeRecordTtlSecs
const SESSION_MS = 20 * 60 * 1000; // the service's default session
const GRACE_MS = 60 * 1000; // reconciliation.graceSecs
const LEASE_MS = 60_000; // webhook.leaseMs
const SAMPLES = Number(process.env.GROWTH_SAMPLES ?? 300);
const PASSES = Number(process.env.GROWTH_PASSES ?? 18);
const BATCH = 20; // reconciliation.batchSize
const gc = globalThis.gc ?? (() => undefined);
const heapMiB = () => (gc(), gc(), process.memoryUsage().heapUsed / 2 ** 20);

// ---------------------------------------------------------------- the counting proxy
/**
 * The store seen through a proxy that counts every method call (and the rate limiter's), and keeps
 * the arguments of each method's last call (`last`).
 */
function counting(store) {
  const counts = new Map();
  const last = new Map();
  const wrap = (target, prefix) =>
    new Proxy(target, {
      get(t, property) {
        const value = Reflect.get(t, property, t);
        if (property === 'rateLimits' && value) return wrap(value, 'rateLimits.');
        if (typeof value !== 'function' || property === 'constructor') return value;
        const name = prefix + String(property);
        return (...a) => {
          counts.set(name, (counts.get(name) ?? 0) + 1);
          last.set(name, a);
          return value.apply(t, a);
        };
      },
    });
  const total = () => [...counts.values()].reduce((s, n) => s + n, 0);
  return { store: wrap(store, ''), counts, last, total };
}

function clientOf(store, stubUrl, clock) {
  const client = new PaymentsClient({
    publicKey: 'pk_bench',
    privateKey: 'sk_bench_private',
    baseUrl: stubUrl,
    successLink: 'https://shop.example.com/checkout/success',
    failLink: 'https://shop.example.com/checkout/failed',
    webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
    reconciliation: { enabled: false },
    telemetry: false,
    // Give-ups of the retention run's PENDING payments are expected; any other error is shown.
    logger: { log() {}, warn() {}, error: (m) => !m.includes('gave up on') && process.stderr.write(`growth: ${m}\n`) },
    store,
    ...(clock ? { clock } : {}),
  });
  client.setHandlers({ handlersOf: () => [async () => {}] });
  return client;
}

// ---------------------------------------------------------------- the fill
// Payment n of the fill: ids carry the order (tracking id) after `__`, as the stub's do.
const fillId = (n) => `pay_grw_${n}__grw-o-${n}`;
const fillTracking = (n) => `grw-o-${n}`;
const fillToken = (n) => `g${String(n).padStart(15, '0')}`;
/** The fill's "now": every payment of the fill (and the templates copied) is dated from it. */
const FILL_NOW = Date.now();
/** 30% open (3 in 10), 70% done. */
const isOpen = (n) => n % 10 < 3;

/** What generatePayment writes for payment n, created at `at`: the binding and the queue entry's arguments. */
function generated(n, at) {
  const binding = {
    paymentId: fillId(n),
    amount: '12500',
    createdAt: new Date(at).toISOString(),
    sessionEndsAt: new Date(at + SESSION_MS).toISOString(),
    developerTrackingId: fillTracking(n),
  };
  return { binding, entry: { ...binding, checks: 0 }, dueAt: at + SESSION_MS + GRACE_MS };
}

/** The store calls the engine makes for payment n (see the header), with the engine's arguments. */
async function writePayment(store, n, now) {
  const at = now - 60_000 - (n % 100_000) * 1000; // created within the last day or so
  const { binding, entry } = generated(n, at);
  await store.saveBinding(fillToken(n), binding, TOKEN_TTL);
  if (isOpen(n)) {
    // Open or abandoned: queued, due in the next day (the slow lanes), none due while measuring.
    await store.queueGenerated({ ...entry, checks: n % 11 }, now + 3_600_000 + (n % 86_400) * 1000);
    return;
  }
  const eventKey = `outcome:${binding.paymentId}`;
  const owner = `fill-${n}`;
  await store.claim(eventKey, owner, LEASE_MS);
  await store.settleOrder(binding.developerTrackingId, { paymentId: binding.paymentId, amount: '12500' }, DONE_TTL);
  await store.finishOutcome({
    eventKey,
    owner,
    claim: 'done',
    doneTtlMs: DONE_TTL,
    record: {
      paymentId: binding.paymentId,
      outcome: 'confirmed',
      status: 'SUCCESS',
      source: 'webhook',
      handlers: 'succeeded',
      amount: '12500',
      updatedAt: new Date(at + 30_000).toISOString(),
      developerTrackingId: binding.developerTrackingId,
    },
    attemptsAdded: 1,
    recordTtlMs: RECORD_TTL,
  });
}

// PostgreSQL: the rows of template payments written by the store's methods, copied in SQL.
const TEMPLATE = { open: 900_000_000_001, done: 900_000_000_007 };

/**
 * Copies the template payments' rows for payments [from, to): ids with the template's number
 * replaced by the payment's, every time shifted as writePayment shifts it, `checks` and `due_at`
 * as writePayment writes them. The template's times are read back and replaced one by one.
 */
async function fillByCopy(pool, prefix, from, to) {
  const T = (name) => `"${prefix}${name}"`;
  const templates = {};
  for (const [kind, t] of Object.entries(TEMPLATE)) {
    const { rows } = await pool.query(`SELECT binding::text AS b FROM ${T('bindings')} WHERE token_id = $1`, [
      fillToken(t),
    ]);
    templates[kind] = [...new Set(rows[0].b.match(ISO))];
    if (kind === 'done') {
      const { rows: r } = await pool.query(`SELECT record::text AS r FROM ${T('outcomes')} WHERE payment_id = $1`, [
        fillId(t),
      ]);
      templates[kind] = [...new Set([...templates[kind], ...r[0].r.match(ISO)])];
    }
  }
  const step = 50_000;
  for (let lo = from; lo < to; lo += step) {
    const hi = Math.min(to, lo + step) - 1;
    for (const [kind, template] of Object.entries(TEMPLATE)) {
      const open = kind === 'open';
      const from = (table) => `FROM ${T(table)} t, generate_series(${lo}, ${hi}) AS n WHERE (n % 10 < 3) = ${open} AND`;
      const shift = `(${template % 100_000} - n % 100000) * interval '1 second'`;
      // Ids first, then each of the template's times.
      const sub = templateSubstitution(template, templates[kind], shift);
      await pool.query(`INSERT INTO ${T('bindings')} (token_id, binding, expires_at)
SELECT 'g' || lpad(n::text, 15, '0'), ${sub('t.binding::text')}::jsonb, t.expires_at
${from('bindings')} t.token_id = '${fillToken(template)}'`);
      if (open) {
        await pool.query(`INSERT INTO ${T('pending')} (payment_id, entry, due_at)
SELECT ${sub('t.payment_id')}, jsonb_set(${sub('t.entry::text')}::jsonb, '{checks}', to_jsonb(n % 11)),
  t.due_at + ((n % 86400) - ${template % 86_400}) * 1000
${from('pending')} t.payment_id = '${fillId(template)}'`);
        continue;
      }
      await pool.query(`INSERT INTO ${T('events')} (event_key, state, owner, expires_at)
SELECT ${sub('t.event_key')}, t.state, t.owner, t.expires_at
${from('events')} t.event_key = 'outcome:${fillId(template)}'`);
      await pool.query(`INSERT INTO ${T('orders')} (order_key, kind, value, expires_at)
SELECT ${sub('t.order_key')}, t.kind, ${sub('t.value')}, t.expires_at
${from('orders')} t.order_key = '${fillTracking(template)}'`);
      await pool.query(`INSERT INTO ${T('outcomes')} (payment_id, outcome, handlers, updated_at, record, expires_at)
SELECT ${sub('t.payment_id')}, t.outcome, t.handlers, ${sub('t.updated_at')}, ${sub('t.record::text')}::jsonb, t.expires_at
${from('outcomes')} t.payment_id = '${fillId(template)}'`);
    }
  }
}

// ---------------------------------------------------------------- stores
/**
 * Of 1000 keys drawn at random from the benchmark's database, those without an expiry: only the
 * queue and the outcome indexes may lack one (their members leave with their payment or are swept).
 */
async function keysWithoutTtl(redis) {
  const lasting = new Set();
  let sampled = 0;
  for (let i = 0; i < 1000; i++) {
    const key = await redis.randomkey();
    if (key === null) break;
    if (!key.startsWith('grw:')) continue; // another user's key, in a shared database
    sampled++;
    if ((await redis.pttl(key)) === -1) lasting.add(key);
  }
  return { sampled, withoutTtl: [...lasting].sort() };
}

/**
 * Store `index` of a run (one per size, side by side): the store, how to fill it, how to read its
 * size. Redis: keys under `grw:<index>:` in the URL's database; PostgreSQL: tables `grw_<index>_*`.
 */
async function openStore(kind, redisUrl, postgresUrl, index) {
  if (kind === 'memory') {
    const store = new MemoryPaymentsStore();
    return {
      store,
      fill: (from, to) => fillByMethods(store, from, to, 1, writePayment, FILL_NOW),
      size: async () => ({ entries: store.size }),
      close: async () => {},
    };
  }
  if (kind === 'redis') {
    const { RedisPaymentsStore } = await import(`${dist}redis/index.js`);
    const { Redis } = await import('ioredis');
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]);
    const store = new RedisPaymentsStore(redis, { keyPrefix: `grw:${index}:`, operationTimeoutMs: 60_000 });
    let filled = { keys: 0, usedMiB: 0 };
    return {
      store,
      // The database holds every store of the run: what this one's fill added is its size.
      async fill(from, to) {
        const [keys0, used0] = [await redis.dbsize(), await usedMemory()];
        await fillByMethods(store, from, to, 2000, writePayment, FILL_NOW);
        filled = {
          keys: filled.keys + (await redis.dbsize()) - keys0,
          usedMiB: filled.usedMiB + ((await usedMemory()) - used0) / 2 ** 20,
        };
      },
      size: async () => ({ ...filled, ...(await keysWithoutTtl(redis)) }),
      close: () => redis.quit(),
    };
  }
  const { PostgresPaymentsStore } = await import(`${dist}postgres/index.js`);
  const pg = await import('pg');
  const pool = new (pg.default ?? pg).Pool({ connectionString: postgresUrl, max: 5 });
  const prefix = `grw_${index}_`;
  const like = `grw\\_${index}\\_%`;
  const store = new PostgresPaymentsStore(pool, { tablePrefix: prefix, operationTimeoutMs: 60_000 });
  await store.ping();
  const tables = ['bindings', 'events', 'pending', 'orders', 'outcomes'].map((t) => `"${prefix}${t}"`);
  let templated = false;
  return {
    store,
    async fill(from, to) {
      if (!templated) for (const n of Object.values(TEMPLATE)) await writePayment(store, n, FILL_NOW);
      templated = true;
      await fillByCopy(pool, prefix, from, to);
      await pool.query('ANALYZE');
    },
    /** Checks that copied rows equal what the store's methods write (payment `n` both ways). */
    async checkCopy(n) {
      const match = `t::text LIKE '%grw\\_${n}\\_\\_%' OR t::text LIKE '%grw-o-${n}%' OR t::text LIKE '%${fillToken(n)}%'`;
      const read = async () => {
        const out = {};
        for (const table of tables) {
          const { rows } = await pool.query(`SELECT * FROM ${table} t WHERE ${match}`);
          out[table] = rows.map((r) => JSON.stringify({ ...r, expires_at: undefined }));
        }
        return out;
      };
      await writePayment(store, n, FILL_NOW);
      const byMethods = await read();
      for (const table of tables) await pool.query(`DELETE FROM ${table} t WHERE ${match}`);
      await this.fill(n, n + 1);
      const byCopy = await read();
      return { byMethods, byCopy };
    },
    size: async () => {
      const { rows } = await pool.query(
        `SELECT c.relname AS name, pg_total_relation_size(c.oid)::float8 AS bytes, c.reltuples::float8 AS rows
         FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE c.relkind = 'r' AND c.relname LIKE '${like}' AND s.nspname = current_schema()`,
      );
      // Sequential scans of the store's tables so far: a statement that scans a table instead of
      // using an index shows here (the difference over the measured calls is reported).
      const { rows: scans } = await pool.query(
        `SELECT relname AS name, seq_scan::float8 AS seq, seq_tup_read::float8 AS read FROM pg_stat_user_tables WHERE relname LIKE '${like}'`,
      );
      const seqScans = Object.fromEntries(
        scans.map((r) => [r.name.slice(prefix.length), { seq: r.seq, read: r.read }]),
      );
      return {
        seqScans,
        totalMiB: rows.reduce((s, r) => s + r.bytes, 0) / 2 ** 20,
        tables: Object.fromEntries(rows.map((r) => [r.name, { MiB: r.bytes / 2 ** 20, rows: r.rows }])),
      };
    },
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

/**
 * Deletes what the run writes: in Redis its keys (prefix `grw:`; never the whole database, which
 * may be shared), in PostgreSQL its tables (`grw_*`).
 */
async function emptyAll(kind, redisUrl, postgresUrl) {
  if (kind === 'redis') await deleteRedisKeys(redisUrl, 'grw:*');
  else if (kind === 'postgres') await dropTables(postgresUrl, 'grw\\_%');
}

// ---------------------------------------------------------------- measure
const ROUNDS = Number(process.env.GROWTH_ROUNDS ?? 6);
const PATHS = ['generate', 'webhook', 'return', 'pass'];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `call` `count` times one at a time, adding each latency and round trips to `into`. */
async function timed(count, call, counter, into) {
  const round = [];
  for (let i = 0; i < count; i++) {
    const before = counter.total();
    const start = performance.now();
    await call(i);
    const ms = performance.now() - start;
    round.push(ms);
    into.latencies.push(ms);
    into.trips.push(counter.total() - before);
  }
  into.rounds.push(median(round));
}

/**
 * What the store's API reads of a payment (binding, queue entry, outcome record, order settlement),
 * its ids, times and check count replaced by placeholders: the same text for a payment of the fill
 * and one the plugin wrote, or the fill is not what the plugin leaves.
 */
async function readBack(store, tokenId, paymentId, tracking) {
  const state = {
    binding: await store.findBinding(tokenId),
    pending: await store.findPending(paymentId),
    outcome: await store.getOutcome(paymentId),
    settlement: await store.findOrderSettlement(tracking),
  };
  return JSON.stringify(state, (_, v) => (v === undefined ? null : v))
    .replaceAll(paymentId, '<payment>')
    .replaceAll(tracking, '<order>')
    .replace(ISO, '<time>')
    .replace(/"checks":\d+/g, '"checks":"<n>"');
}

/** One store of the run, at one size, with its own client and counting proxy, and what it measured. */
async function sizedStore(kind, stubUrl, redisUrl, postgresUrl, index, size) {
  const opened = await openStore(kind, redisUrl, postgresUrl, index);
  const counter = counting(opened.store);
  const client = clientOf(counter.store, stubUrl);
  const signer = new WebhookTokenSigner(SECRET);
  const got = Object.fromEntries(PATHS.map((p) => [p, { latencies: [], trips: [], rounds: [] }]));
  let order = 0;
  let extra = 0; // payments made by the measurements: ids of their own
  const own = () => 800_000_000_000 + ++extra;
  return {
    size,
    opened,
    client,
    got,
    async generate(count, made) {
      await timed(
        count,
        async () =>
          made.push(
            (await client.generatePayment({ amount: '12500', developerTrackingId: `grw-g-${index}-${++order}` }))
              .paymentId,
          ),
        counter,
        got.generate,
      );
    },
    /**
     * Fill payments read back through the store's API against payments the plugin wrote: an open
     * one (generatePayment) and a done one (a paid webhook); 'same' or both texts. The fill's
     * last payments of each kind: the memory store's caps have evicted its first ones at 100k.
     */
    async checkAgainstPlugin() {
      const [open, done] = [1, 5].map((k) => Math.floor((size - 1 - k) / 10) * 10 + k);
      const tracking = `grw-v-${index}`;
      const { paymentId } = await client.generatePayment({ amount: '12500', developerTrackingId: tracking });
      const [tokenId] = counter.last.get('saveBinding');
      const { binding, entry, dueAt } = generated(own(), Date.now());
      const { token, claims } = signer.issue('12500', binding.developerTrackingId, TOKEN_TTL);
      await opened.store.saveBinding(claims.nonce, binding, TOKEN_TTL);
      await opened.store.queueGenerated(entry, dueAt);
      const answer = await client.webhooks.handle({
        query: {},
        body: { payment_id: binding.paymentId },
        pathToken: token,
      });
      if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}`);
      const pairs = {
        open: [
          await readBack(opened.store, tokenId, paymentId, tracking),
          await readBack(opened.store, fillToken(open), fillId(open), fillTracking(open)),
        ],
        done: [
          await readBack(opened.store, claims.nonce, binding.paymentId, binding.developerTrackingId),
          await readBack(opened.store, fillToken(done), fillId(done), fillTracking(done)),
        ],
      };
      return Object.values(pairs).every(([plugin, fill]) => plugin === fill) ? 'same' : pairs;
    },
    async webhook(count) {
      // Tokens as generatePayment issues them, written as it writes them (not timed).
      const now = Date.now();
      const tokens = [];
      for (let i = 0; i < count; i++) {
        const { binding, entry, dueAt } = generated(own(), now);
        const { token, claims } = signer.issue('12500', binding.developerTrackingId, TOKEN_TTL);
        await opened.store.saveBinding(claims.nonce, binding, TOKEN_TTL);
        await opened.store.queueGenerated(entry, dueAt);
        tokens.push([token, binding.paymentId]);
      }
      await timed(
        count,
        async (i) => {
          const [token, paymentId] = tokens[i];
          const answer = await client.webhooks.handle({ query: {}, body: { payment_id: paymentId }, pathToken: token });
          if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}`);
        },
        counter,
        got.webhook,
      );
    },
    async ret(ids) {
      await timed(
        ids.length,
        async (i) => {
          const r = await client.reconcilePayment(ids[i]);
          if (r.outcome !== 'confirmed') throw new Error(`return: ${r.outcome}`);
        },
        counter,
        got.return,
      );
    },
    async passes(count) {
      // `count` batches due now, queued as generatePayment queues them; the rest is due later.
      const now = Date.now();
      for (let i = 0; i < count * BATCH; i++) {
        const { entry } = generated(own(), now - SESSION_MS - GRACE_MS - 10_000);
        await opened.store.queueGenerated(entry, now - 5000 + i);
      }
      await timed(
        count,
        async () => {
          const run = await client.runReconciliation();
          if (run.settled !== BATCH) throw new Error(`pass settled ${run.settled}`);
        },
        counter,
        got.pass,
      );
    },
  };
}

/**
 * Every size's store side by side (filled smallest first), then measured in rounds, the stores in
 * a rotated order each round, so that load from outside falls on every size alike; the ratio of a
 * size to the smallest is the median of the per-round ratios of their medians.
 */
async function measure(kind, stubUrl, redisUrl, postgresUrl, sizesArg) {
  const sizes = sizesArg
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
  await emptyAll(kind, redisUrl, postgresUrl);
  const stores = [];
  let copyCheck;
  try {
    for (const [index, size] of sizes.entries()) {
      const heap0 = heapMiB();
      const s = await sizedStore(kind, stubUrl, redisUrl, postgresUrl, index, size);
      if (index === 0 && s.opened.checkCopy) {
        // An open payment and a done one, each written by the store's methods and then by the copy.
        const checks = [await s.opened.checkCopy(777_777_771), await s.opened.checkCopy(777_777_777)];
        copyCheck = checks.every((c) => JSON.stringify(c.byMethods) === JSON.stringify(c.byCopy))
          ? 'same rows'
          : checks;
        if (copyCheck !== 'same rows')
          process.stderr.write(`growth: copied rows differ: ${JSON.stringify(copyCheck)}\n`);
      }
      const t0 = performance.now();
      await s.opened.fill(0, size);
      s.fillSecs = (performance.now() - t0) / 1000;
      s.heapDeltaMiB = heapMiB() - heap0;
      s.apiCheck = await s.checkAgainstPlugin();
      if (s.apiCheck !== 'same')
        process.stderr.write(
          `growth: ${kind} ${size}: the fill differs from the plugin's writes: ${JSON.stringify(s.apiCheck)}\n`,
        );
      // countPending: on PostgreSQL a count(*), a scan of the queue, kept out of the calls measured.
      s.pending = await s.opened.store.countPending();
      process.stderr.write(`growth: ${kind} ${size} filled in ${s.fillSecs.toFixed(1)} s\n`);
      stores.push(s);
    }
    // Warm-up of every store (JIT, sockets, prepared statements), not measured.
    for (const s of stores) {
      const made = [];
      await s.generate(30, made);
      await s.webhook(30);
      await s.ret(made);
      await s.passes(1);
      for (const p of PATHS) s.got[p] = { latencies: [], trips: [], rounds: [] };
    }
    if (kind === 'postgres') await sleep(1000); // the statistics settle
    for (const s of stores) s.before = await s.opened.size();
    const heap = heapMiB();
    const perRound = Math.max(1, Math.round(SAMPLES / ROUNDS));
    const passesPerRound = Math.max(1, Math.round(PASSES / ROUNDS));
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < stores.length; k++) {
        const s = stores[(k + round) % stores.length];
        const made = [];
        await s.generate(perRound, made);
        await s.webhook(perRound);
        await s.ret(made);
        await s.passes(passesPerRound);
      }
    }
    if (kind === 'postgres') await sleep(1000);
    const smallest = stores[0];
    const rows = [];
    for (const s of stores) {
      const after = await s.opened.size();
      const row = { size: s.size, fillSecs: s.fillSecs, store: s.before, pending: s.pending, heapMiB: heap };
      if (kind === 'memory') row.heapMiB = s.heapDeltaMiB;
      for (const p of PATHS) {
        const g = s.got[p];
        const sorted = [...g.latencies].sort((a, b) => a - b);
        row[p] = {
          p50: quantile(sorted, 0.5),
          p99: quantile(sorted, 0.99),
          trips: median(g.trips),
          calls: g.latencies.length,
          // Paired by round with the smallest store (measured seconds apart, in the same round).
          vsSmallest: median(g.rounds.map((m, r) => m / smallest.got[p].rounds[r])),
        };
      }
      if (after.seqScans)
        row.seqScans = Object.fromEntries(
          Object.entries(after.seqScans).map(([t, v]) => [
            t,
            { seq: v.seq - (s.before.seqScans[t]?.seq ?? 0), read: v.read - (s.before.seqScans[t]?.read ?? 0) },
          ]),
        );
      const f = (x) => `${x.p50.toFixed(2)}/${x.p99.toFixed(2)} ms ${x.trips} rt ${x.vsSmallest.toFixed(2)}x`;
      process.stderr.write(
        `growth: ${kind} ${s.size}: generate ${f(row.generate)}; webhook ${f(row.webhook)}; return ${f(row.return)}; pass ${f(row.pass)}\n`,
      );
      rows.push(row);
    }
    const apiCheck = stores.every((s) => s.apiCheck === 'same') ? 'same' : stores.map((s) => s.apiCheck);
    return { store: kind, rows, copyCheck, apiCheck, rounds: ROUNDS };
  } finally {
    for (const s of stores) {
      await s.client.close();
      await s.opened.close();
    }
    await emptyAll(kind, redisUrl, postgresUrl);
  }
}

// ---------------------------------------------------------------- retention
/** A clock the run moves forward by hand; timers run on real time (nothing here waits on them). */
function testClock(start) {
  let offset = 0;
  return {
    now: () => start + offset + performance.now(),
    advance: (ms) => (offset += ms),
    setTimeout: (fn, ms, keepAlive = false) => {
      const timer = setTimeout(fn, ms);
      if (!keepAlive) timer.unref();
      return timer;
    },
    clearTimeout: (timer) => timer !== undefined && clearTimeout(timer),
  };
}

/**
 * The memory store with its default caps and the engine's default retention, `payments` payments
 * over GROWTH_RETENTION_DAYS simulated days (default 120), hour by hour: each hour's payments
 * generated (a new order each); 70% paid and returned at once (`reconcilePayment`), 29% abandoned
 * (the service answers EXPIRED once the session is over), 1% left PENDING for ever (checked on
 * the lanes until the 7-day horizon, then given up); then the clock moves an hour and
 * reconciliation passes run until one finds nothing due. Every few days: entries, queue, heap.
 */
async function retention(stubUrl, paymentsArg) {
  const payments = Number(paymentsArg);
  const days = Number(process.env.GROWTH_RETENTION_DAYS ?? 120);
  const clock = testClock(Date.now() - performance.now());
  const store = new MemoryPaymentsStore({ clock });
  const client = clientOf(store, stubUrl, clock);
  const hours = days * 24;
  const perHour = payments / hours;
  const every = Math.max(1, Math.round(days / 24)); // about 24 samples
  const samples = [];
  let made = 0;
  let passes = 0;
  const t0 = performance.now();
  for (let hour = 0; hour < hours; hour++) {
    const target = Math.round(perHour * (hour + 1));
    const batch = [];
    while (made < target) {
      const n = made++;
      const kind = n % 100 < 70 ? 'paid' : n % 100 < 99 ? 'expired' : 'pending';
      batch.push([n, kind]);
    }
    // Eight at a time, as a shop's checkout requests overlap.
    for (let i = 0; i < batch.length; i += 8)
      await Promise.all(
        batch.slice(i, i + 8).map(async ([n, kind]) => {
          const tracking = kind === 'paid' ? `ret-${n}` : `${kind}-${n}`;
          const { paymentId } = await client.generatePayment({ amount: '12500', developerTrackingId: tracking });
          if (kind === 'paid') await client.reconcilePayment(paymentId);
        }),
      );
    clock.advance(3_600_000);
    for (let k = 0; k < 10_000; k++) {
      passes++;
      if ((await client.runReconciliation()).checked === 0) break;
    }
    if ((hour + 1) % (24 * every) === 0 || hour === hours - 1) {
      const sample = {
        day: (hour + 1) / 24,
        payments: made,
        entries: store.size,
        pending: await store.countPending(),
        heapMiB: heapMiB(),
      };
      samples.push(sample);
      process.stderr.write(
        `growth: retention day ${sample.day}: ${made} payments, ${sample.entries} entries, queue ${sample.pending}, heap ${sample.heapMiB.toFixed(1)} MiB, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
      );
    }
  }
  await client.close();
  return { payments: made, days, passes, samples, seconds: (performance.now() - t0) / 1000 };
}

// ---------------------------------------------------------------- main
const [mode, ...args] = process.argv.slice(2);
const result = mode === 'retention' ? await retention(...args) : await measure(...args);
process.send({ type: 'result', ...result });
process.on('message', (message) => message?.type === 'stop' && process.exit(0));
