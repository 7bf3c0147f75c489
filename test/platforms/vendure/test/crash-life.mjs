// One life of a Vendure server with the plugin, run as a child process by crash.test.mjs: Vendure
// on PostgreSQL or MariaDB (DB), the plugin's state in a PostgreSQL store of its own
// (STORE_SCHEMA in the database `test`), the service a PaymentsSandbox of the parent's
// (SERVICE_URL and its keys). POPULATE=1: the first life makes and fills Vendure's database (then
// prints `DATABASE <name>`); the others start on it (DATABASE_NAME).
//
// The kill points are counted, not named: from a webhook request marked `x-crash-count: 1` until
// the store's done marker call returns, each round trip started on Vendure's database (or, within
// the done marker call, on the store's) is one await. KILL_AT=<n>: the process SIGKILLs itself
// while awaiting the n-th (its bytes written, the answer not read); otherwise it prints, after
// each marked webhook's done marker, `AWAITS {"awaits":n,"inbox":i,"commit":c,"doneMarker":d}`: the
// number of awaits, and those of the inbox row's insert, the last commit on Vendure's database and
// the done marker's first. Prints `READY` once listening on PORT.
import http from 'node:http';
import net from 'node:net';
import pg from 'pg';
import { DefaultLogger, LogLevel, mergeConfig } from '@vendure/core';
import { createTestEnvironment, testConfig } from '@vendure/testing';
import { PostgresPaymentsStore } from 'nestjs-payments/postgres';
import { guidePlugin, IMPORT_OPTIONS, POPULATION, testDatabase } from './environment.mjs';

const env = process.env;
const killAt = env.KILL_AT ? Number(env.KILL_AT) : undefined;
const hostPort = env.DB === 'mariadb' ? 3306 : 5432;

const storeSockets = new WeakSet();
const pool = new pg.Pool({
  connectionString: 'postgres://postgres@127.0.0.1:5432/test',
  max: 4,
  options: `-c search_path=${env.STORE_SCHEMA}`,
});
pool.on('connect', (client) => storeSockets.add(client.connection.stream));
pool.on('error', (error) => process.stderr.write(`store pool: ${error.message}\n`));
const store = new PostgresPaymentsStore(pool, { operationTimeoutMs: 20_000 });

/** The marked webhook being counted: one at a time (the parent sends one, then waits). */
let window;
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (...args) {
  const counted =
    window &&
    !window.burst &&
    (window.finishing ? storeSockets.has(this) : this.remotePort === hostPort && !storeSockets.has(this));
  if (counted) {
    const state = window;
    state.burst = true;
    const n = ++state.awaits;
    const text = typeof args[0] === 'string' ? args[0] : Buffer.from(args[0]).toString('latin1');
    if (/INSERT INTO\W+nestjs_payments_inbox/i.test(text)) state.marks.inbox ??= n;
    if (/\bCOMMIT\b/.test(text) && !state.finishing) state.marks.commit = n;
    if (state.finishing) state.marks.doneMarker ??= n;
    process.nextTick(() => {
      state.burst = false;
      if (n === killAt) process.kill(process.pid, 'SIGKILL');
    });
  }
  return write.apply(this, args);
};
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, ...rest) {
  if (event === 'request' && req.headers['x-crash-count'] === '1')
    window = { awaits: 0, burst: false, finishing: false, marks: {} };
  return emit.call(this, event, req, ...rest);
};
const finishOutcome = store.finishOutcome.bind(store);
store.finishOutcome = async (finish) => {
  if (finish.claim !== 'done' || !window) return finishOutcome(finish);
  window.finishing = true;
  const result = await finishOutcome(finish);
  process.stdout.write(`AWAITS ${JSON.stringify({ awaits: window.awaits, ...window.marks })}\n`);
  window = undefined;
  return result;
};

const port = Number(env.PORT);
const dbConnectionOptions = testDatabase(env.DB);
if (!env.POPULATE) dbConnectionOptions.database = env.DATABASE_NAME;
const sandbox = { url: env.SERVICE_URL, publicKey: env.PUBLIC_KEY, privateKey: env.PRIVATE_KEY };
const config = mergeConfig(testConfig, {
  apiOptions: { port },
  importExportOptions: IMPORT_OPTIONS,
  logger: new DefaultLogger({ level: LogLevel.Error }),
  dbConnectionOptions,
  plugins: [
    // Webhooks go nowhere (port 9): the parent delivers each itself, to the life alive at the time.
    await guidePlugin(sandbox, port, 9, env.SERVICE_URL, (options) => ({
      ...options,
      store,
      maxRetries: 0,
      webhook: { ...options.webhook, leaseMs: Number(env.LEASE_MS) },
      reconciliation: { enabled: false },
    })),
  ],
});
const { server } = createTestEnvironment(config);
if (env.POPULATE) {
  await server.init(POPULATION);
  process.stdout.write(
    `DATABASE ${server.vendureConfig?.dbConnectionOptions?.database ?? config.dbConnectionOptions.database}\n`,
  );
} else {
  await server.bootstrap();
}
process.stdout.write('READY\n');

process.on('SIGTERM', async () => {
  await server.destroy();
  await store.close();
  await pool.end();
  process.exit(0);
});
