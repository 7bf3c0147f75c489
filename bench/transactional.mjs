// Webhook ingest on a PostgreSQL server in the three ways a handler's write can be tied to the
// plugin's bookkeeping (docs/exactly-once.md). All apps run the same confirmation handler, one
// write of an order row: `transactional: true`, through `event.transaction` (one transaction with
// the done marker: BEGIN, the write, finishOutcome, COMMIT on a client of its own); the inbox
// (`sqlInbox` on the same pool, a plain store: BEGIN, the inbox row, the write, COMMIT, then the
// store's bookkeeping); and neither, on the pool (its own autocommit statement, then
// finishOutcome). Each app is plain Express + createWebhookRouter in its own process; every request
// is a distinct genuine payment, verified against the loopback stub of the service. Slices
// alternate between the apps. Each app counts the statements it sends: all of them, and those
// inside the handler's transaction (between its BEGIN and COMMIT), per confirmation.
//
//   node bench/transactional.mjs            (POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test)
//   node bench/run.mjs --only=inbox         the same, as a part of `npm run bench` (RESULTS.md's table)
//
// The package is bundled from lib/ by esbuild into bench/.work/ (no build needed). Prints a table.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { BENCH_DIR, fmt, forkChild, machineFacts, median } from './common.mjs';

const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROOT = path.resolve(BENCH_DIR, '..');
const WORK = path.join(ROOT, 'bench/.work/transactional');
const BUNDLE = path.join(WORK, 'payments.mjs');
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const TTL_MS = 3_600_000;
const CFG = {
  tokens: 40_000,
  seconds: Number(process.env.BENCH_SECS ?? 3),
  repeats: Number(process.env.BENCH_REPEATS ?? 4),
  connections: 16,
};

if (process.argv[2] === 'app') await app(process.argv[3], process.argv[4]);
else await main();

async function main() {
  mkdirSync(WORK, { recursive: true });
  const entry = path.join(WORK, 'entry.ts');
  const lib = (p) => path.relative(WORK, path.join(ROOT, 'lib', p)).replaceAll(path.sep, '/');
  writeFileSync(
    entry,
    `export { createPaymentsClient, createWebhookRouter } from '${lib('express/index.js')}';\n` +
      `export { PostgresPaymentsStore } from '${lib('postgres/index.js')}';\n` +
      `export { inboxDdl, sqlInbox } from '${lib('store/index.js')}';\n` +
      `export { WebhookTokenSigner } from '${lib('core/webhook/webhook.token.js')}';\n`,
  );
  execFileSync(
    path.join(ROOT, 'node_modules/.bin/esbuild'),
    [
      entry,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--packages=external',
      `--outfile=${BUNDLE}`,
      '--log-level=error',
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );

  const stub = forkChild('./stub-server.mjs');
  const { port: stubPort } = await stub.next('ready');
  const stubUrl = `http://127.0.0.1:${stubPort}`;
  const self = path.relative(BENCH_DIR, fileURLToPath(import.meta.url));
  const apps = [];
  for (const mode of ['off', 'on', 'inbox']) {
    const child = forkChild(`./${self}`, ['app', mode, stubUrl], { readyTimeoutMs: 180_000 });
    const { port, tokens } = await child.next('ready', 180_000);
    apps.push({ mode, child, port, tokens, next: 0, slices: [] });
  }
  const request = (a) => (req) => {
    const [token, id] = a.tokens[a.next++ % a.tokens.length];
    return {
      ...req,
      path: `/hook/${token}`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: id }),
    };
  };
  const measured = async (a, seconds) => {
    a.child.send({ type: 'mark' });
    const m0 = await a.child.next('mark');
    const result = await cannon({ port: a.port, makeRequest: request(a), seconds });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last requests finish their handler
    a.child.send({ type: 'mark' });
    const m1 = await a.child.next('mark');
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx + result.errors,
      cpu: (m1.cpuUs - m0.cpuUs) / Math.max(1, m1.requests - m0.requests),
      handled: m1.handled - m0.handled,
      requests: m1.requests - m0.requests,
      statements: (m1.statements - m0.statements) / Math.max(1, m1.handled - m0.handled),
      inTransaction: (m1.inTransaction - m0.inTransaction) / Math.max(1, m1.handled - m0.handled),
    };
  };
  try {
    for (const a of apps) await measured(a, 1); // warm-up
    for (let r = 0; r < CFG.repeats; r++)
      for (const a of r % 2 ? [...apps].reverse() : apps) a.slices.push(await measured(a, CFG.seconds));
    const rows = [];
    for (const a of apps) {
      a.child.send({ type: 'check' });
      const check = await a.child.next('check');
      const s = a.slices;
      rows.push({
        mode: { on: 'transactional: true', inbox: 'inbox (sqlInbox), plain store', off: 'neither' }[a.mode],
        rps: median(s.map((x) => x.rps)),
        p50: median(s.map((x) => x.p50)),
        p99: median(s.map((x) => x.p99)),
        cpu: median(s.map((x) => x.cpu)),
        statements: median(s.map((x) => x.statements)),
        inTransaction: median(s.map((x) => x.inTransaction)),
        non2xx: s.reduce((n, x) => n + x.non2xx, 0),
        check,
      });
    }
    const facts = machineFacts();
    console.log(
      `\nWebhook ingest, PostgreSQL server (${CFG.repeats} x ${CFG.seconds} s slices, ${CFG.connections} connections, median of slices)`,
    );
    console.log(`${facts.cpu}, ${facts.cores} cores, Node ${facts.node}\n`);
    console.log(
      '| mode | req/s | p50 ms | p99 ms | app CPU µs/req | statements per confirmation | of them in the handler’s transaction | non-2xx | orders written / outcomes done |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      console.log(
        `| ${r.mode} | ${fmt(r.rps)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.cpu)} | ${fmt(r.statements, 2)} | ${fmt(r.inTransaction, 2)} | ${r.non2xx} | ${r.check.orders} / ${r.check.done} |`,
      );
    }
    // For bench/run.mjs (part `inbox`): the rows as JSON.
    if (process.env.BENCH_JSON_OUT) writeFileSync(process.env.BENCH_JSON_OUT, JSON.stringify({ config: CFG, rows }));
    const [off, on, inbox] = rows;
    console.log(
      `\ntransactional / neither: ${fmt((on.rps / off.rps) * 100, 1)} % of the throughput, ${fmt((on.cpu / off.cpu) * 100, 1)} % of the CPU per request`,
    );
    console.log(
      `inbox / neither: ${fmt((inbox.rps / off.rps) * 100, 1)} % of the throughput, ${fmt((inbox.cpu / off.cpu) * 100, 1)} % of the CPU per request; inbox / transactional: ${fmt((inbox.rps / on.rps) * 100, 1)} %`,
    );
    console.log(
      `statements in the handler's transaction beyond the handler's own write: transactional ${fmt(on.inTransaction - 1, 2)}, inbox ${fmt(inbox.inTransaction - 1, 2)}`,
    );
  } finally {
    for (const a of apps) await a.child.stop();
    await stub.stop();
  }
}

function cannon({ port, makeRequest, seconds }) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: CFG.connections,
        pipelining: 1,
        duration: seconds,
        requests: [{ method: 'POST', path: '/hook', setupRequest: makeRequest }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

/** The app of one mode, in its own process. */
async function app(mode, stubUrl) {
  const { default: express } = await import('express');
  const { default: pg } = await import('pg');
  const { createPaymentsClient, createWebhookRouter, PostgresPaymentsStore, WebhookTokenSigner, inboxDdl, sqlInbox } =
    await import(BUNDLE);
  const prefix = `bench_tx_${process.pid}_`;
  // Every statement this process sends, and those between a client's BEGIN and its COMMIT or ROLLBACK.
  const counted = { statements: 0, inTransaction: 0 };
  const open = new WeakSet();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = (typeof config === 'string' ? config : (config?.text ?? '')).trim().toUpperCase();
    counted.statements++;
    // The store's transactional mode begins with `BEGIN ISOLATION LEVEL ...; SELECT ...` (one round trip).
    if (text.startsWith('BEGIN')) open.add(this);
    else if (text === 'COMMIT' || text === 'ROLLBACK') open.delete(this);
    else if (open.has(this)) counted.inTransaction++;
    return query.call(this, config, ...rest);
  };
  // One pool for the orders and the store, as a host would have it.
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 10 });
  await pool.query(
    `CREATE TABLE ${prefix}shop_orders (payment_id text PRIMARY KEY, amount text NOT NULL, paid_at timestamptz NOT NULL DEFAULT now())`,
  );
  const store = new PostgresPaymentsStore(pool, { tablePrefix: prefix, transactional: mode === 'on' });
  // The inbox as docs/exactly-once.md's plain pg recipe gives it, on the orders' pool.
  const inboxTable = `${prefix}host_inbox`;
  if (mode === 'inbox') await pool.query(inboxDdl('postgres', inboxTable));
  const inbox =
    mode === 'inbox'
      ? sqlInbox({
          dialect: 'postgres',
          table: inboxTable,
          transaction: async (run) => {
            const tx = await pool.connect();
            try {
              await tx.query('BEGIN');
              const result = await run({
                client: tx,
                query: async (sql, params) => (await tx.query(sql, params)).rows,
              });
              await tx.query('COMMIT');
              return result;
            } catch (error) {
              await tx.query('ROLLBACK').catch(() => undefined);
              throw error;
            } finally {
              tx.release();
            }
          },
        })
      : undefined;
  const client = createPaymentsClient({
    publicKey: 'pk_bench',
    privateKey: 'sk_bench_private',
    baseUrl: stubUrl,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    webhook: { publicUrl: 'http://127.0.0.1/hook', secret: SECRET },
    reconciliation: { enabled: false },
    telemetry: false,
    store,
    inbox,
  });
  const insert = `INSERT INTO ${prefix}shop_orders (payment_id, amount) VALUES ($1, $2)`;
  let handled = 0;
  const server = express();
  server.use(
    '/hook',
    createWebhookRouter({
      client,
      onPaymentConfirmed: async (event) => {
        const params = [event.paymentId, event.amount];
        if (event.transaction === undefined) await pool.query(insert, params);
        else if (mode === 'inbox') await event.transaction.client.query(insert, params);
        else await event.transaction.query(insert, params);
        handled++;
      },
    }),
  );
  const listener = server.listen(0, '127.0.0.1');
  await new Promise((resolve) => listener.once('listening', resolve));
  let requests = 0;
  listener.on('request', () => requests++);

  // Genuine tokens, as generatePayment would have issued them (same signer, same binding).
  const signer = new WebhookTokenSigner(SECRET);
  const tokens = [];
  const createdAt = new Date().toISOString();
  for (let i = 0; i < CFG.tokens; i += 500) {
    const batch = [];
    for (let j = i; j < Math.min(CFG.tokens, i + 500); j++) {
      const { token, claims } = signer.issue('12500', undefined, TTL_MS);
      const paymentId = `pay_${process.pid}_${j}`;
      tokens.push([token, paymentId]);
      batch.push(store.saveBinding(claims.nonce, { paymentId, amount: '12500', createdAt }, TTL_MS));
    }
    await Promise.all(batch);
  }
  process.send({ type: 'ready', port: listener.address().port, tokens });
  process.on('message', async (message) => {
    if (message?.type === 'mark') {
      const cpu = process.cpuUsage();
      process.send({ type: 'mark', cpuUs: cpu.user + cpu.system, requests, handled, ...counted });
    }
    if (message?.type === 'check') {
      const orders = await pool.query(`SELECT count(*)::int AS n FROM ${prefix}shop_orders`);
      const done = await pool.query(`SELECT count(*)::int AS n FROM ${prefix}events WHERE state = 'done'`);
      process.send({ type: 'check', orders: orders.rows[0].n, done: done.rows[0].n });
    }
    if (message?.type === 'stop') {
      listener.closeAllConnections();
      listener.close();
      await client.close();
      // Own tables only (the prefix has this process' id), then the pool.
      const { rows } = await pool.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1`, [
        `${prefix.replaceAll('_', '\\_')}%`,
      ]);
      for (const { tablename } of rows) await pool.query(`DROP TABLE IF EXISTS "${tablename}" CASCADE`);
      await pool.end();
      process.exit(0);
    }
  });
}
