// Exactly-once settlements under real crashes: a Vendure server (a child process, crash-life.mjs,
// on PostgreSQL or MariaDB, the plugin's state in a PostgreSQL store) SIGKILLed at each round
// trip of a settlement, from the webhook's arrival through Vendure's transaction (the Payment, the
// order's transition, the inbox row) to the store's done marker. The first life settles an order
// untouched and counts those round trips; then one life per kill point pays a new order and dies
// at it; a last life is sent every webhook until each is answered (a dead life's claim is busy
// until its lease ends). Then every order has exactly one Payment, settled, and one inbox row.
//
// Run on PostgreSQL by run.sh; on MariaDB with VENDURE_CRASH_MARIADB=1 (it populates slowly).
// VENDURE_CRASH_POINTS: which kill points to try: `all`, or a number spread over them; by default
// the first round trip, the inbox row's insert, one halfway to the commit, the one before the
// commit, the commit, the done marker's first, and the last. Each life costs a Vendure start (about 12 s).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { mergeConfig } from '@vendure/core';
import { SimpleGraphQLClient, testConfig } from '@vendure/testing';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { adminOrder, cartWithShipping, gql, paymentLink } from './environment.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const db = process.env.VENDURE_DB ?? 'sqljs';
const port = { postgres: 28541, mariadb: 28542 }[db];
const LEASE_MS = 1500;
const POINTS = process.env.VENDURE_CRASH_POINTS ?? 'marks';

/**
 * The kill points to try among a settlement's round trips (`counted`: the first life's AWAITS
 * line): all, `count` spread from the first to the last, or by default (`marks`) those around
 * Vendure's transaction.
 */
export function killPoints(counted, count) {
  const { awaits, inbox, commit, doneMarker } = counted;
  if (count === 'marks') {
    const inside = Math.round((inbox + commit) / 2);
    return [...new Set([1, inbox, inside, commit - 1, commit, doneMarker, awaits])].sort((a, b) => a - b);
  }
  if (count === 'all' || Number(count) >= awaits) return Array.from({ length: awaits }, (_, i) => i + 1);
  const n = Math.max(1, Number(count));
  if (n === 1) return [awaits];
  return [...new Set(Array.from({ length: n }, (_, i) => 1 + Math.round((i * (awaits - 1)) / (n - 1))))];
}

/** Why this database is not run: sql.js's writes die with the process; MariaDB's run is opt-in. */
const skip =
  db === 'sqljs'
    ? 'sql.js keeps its writes in the process: nothing survives a kill'
    : db === 'mariadb' && !process.env.VENDURE_CRASH_MARIADB
      ? 'MariaDB: set VENDURE_CRASH_MARIADB=1 (4 minutes: its population is slow)'
      : false;

describe(`Vendure killed during a settlement (${db})`, { skip }, () => {
  const schema = `vcrash_${randomUUID().slice(0, 8)}`;
  const storeDb = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', max: 1 });
  let sandbox;
  let database;
  const lives = [];

  /** A Vendure life; resolves once it listens, with its output lines so far and how it ends. */
  function startLife(extra) {
    const child = spawn(process.execPath, [path.join(HERE, 'crash-life.mjs')], {
      env: {
        ...process.env,
        DB: db,
        PORT: String(port),
        STORE_SCHEMA: schema,
        SERVICE_URL: sandbox.url,
        PUBLIC_KEY: sandbox.publicKey,
        PRIVATE_KEY: sandbox.privateKey,
        LEASE_MS: String(LEASE_MS),
        ...extra,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    lives.push(child);
    const lines = [];
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const ready = new Promise((resolve, reject) => {
      let buffer = '';
      child.stdout.on('data', (chunk) => {
        buffer += chunk;
        for (let at = buffer.indexOf('\n'); at !== -1; at = buffer.indexOf('\n')) {
          lines.push(buffer.slice(0, at));
          buffer = buffer.slice(at + 1);
          if (lines.at(-1) === 'READY') resolve();
        }
      });
      exited.then((end) => reject(new Error(`the life ended before it was ready: ${JSON.stringify(end)}\n${stderr}`)));
    });
    const clientConfig = mergeConfig(testConfig, { apiOptions: { port } });
    const url = `http://127.0.0.1:${port}`;
    return ready.then(() => ({
      child,
      lines,
      exited,
      stderr: () => stderr,
      shop: new SimpleGraphQLClient(clientConfig, `${url}/shop-api`),
      admin: new SimpleGraphQLClient(clientConfig, `${url}/admin-api`),
      url,
    }));
  }

  /** A new order of this life, paid on the service; its webhook not delivered yet. */
  async function paidOrder(life) {
    const cart = await cartWithShipping(life.shop);
    const link = await paymentLink(life.shop);
    await sandbox.completePayment(link.paymentId, { requireDelivery: false });
    return {
      id: cart.id,
      code: cart.code,
      paymentId: link.paymentId,
      webhook: sandbox.getPayment(link.paymentId).webhook,
    };
  }

  /** Delivers an order's webhook to a life, marked to be counted or not; its status (0: no answer). */
  async function deliver(life, order, counted) {
    try {
      const answer = await fetch(`${life.url}${new URL(order.webhook).pathname}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(counted ? { 'x-crash-count': '1' } : {}) },
        body: JSON.stringify({ payment_id: order.paymentId }),
        signal: AbortSignal.timeout(30_000),
      });
      return answer.status;
    } catch {
      return 0;
    }
  }

  async function stop(life) {
    life.child.kill('SIGTERM');
    return life.exited;
  }

  before(async () => {
    sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
    await storeDb.query(`CREATE SCHEMA ${schema}`);
  });
  after(async () => {
    for (const life of lives) if (life.exitCode === null && life.signalCode === null) life.kill('SIGKILL');
    await storeDb.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await storeDb.end();
    await sandbox?.close();
  });

  it('kills it at each round trip of a settlement: every order ends with one settled Payment and one inbox row', async () => {
    const orders = [];
    const done = new Set();

    const first = await startLife({ POPULATE: '1' });
    database = first.lines.find((l) => l.startsWith('DATABASE '))?.slice('DATABASE '.length);
    assert.ok(database, first.lines.join('\n'));
    await first.admin.asSuperAdmin();
    // The service takes dinars: the default channel sells in TND.
    await first.admin.query(
      gql(
        `mutation { updateChannel(input: { id: "T_1", defaultCurrencyCode: TND, availableCurrencyCodes: [TND] }) { ... on Channel { id } } }`,
      ),
    );
    const untouched = await paidOrder(first);
    orders.push(untouched);
    assert.equal(await deliver(first, untouched, true), 200);
    done.add(untouched.paymentId);
    const counted = JSON.parse(first.lines.find((l) => l.startsWith('AWAITS '))?.slice('AWAITS '.length) ?? '{}');
    const { awaits } = counted;
    assert.deepEqual(await stop(first), { code: 0, signal: null });
    // The inbox row, then Vendure's commit, then the store's done marker.
    assert.ok(counted.inbox < counted.commit && counted.commit < counted.doneMarker, JSON.stringify(counted));

    const points = killPoints(counted, POINTS);
    let kills = 0;
    for (const point of points) {
      const life = await startLife({ DATABASE_NAME: database, KILL_AT: String(point) });
      const order = await paidOrder(life);
      orders.push(order);
      const status = await deliver(life, order, true);
      const end = await Promise.race([life.exited, sleep(15_000).then(() => ({ status }))]);
      if ('status' in end) {
        // Fewer round trips this time than the first life counted: it settled before its point.
        assert.equal(end.status, 200, `point ${point} of ${awaits}: lived, answered ${end.status}\n${life.stderr()}`);
        done.add(order.paymentId);
        await stop(life);
        continue;
      }
      assert.deepEqual(end, { code: null, signal: 'SIGKILL' }, `point ${point} of ${awaits}\n${life.stderr()}`);
      kills += 1;
    }
    assert.ok(kills >= Math.min(points.length, 2), `${kills} kills at ${points.join(', ')} of ${awaits}`);

    const last = await startLife({ DATABASE_NAME: database });
    try {
      for (let round = 0; round < 60 && done.size < orders.length; round++) {
        for (const order of orders.filter((o) => !done.has(o.paymentId)))
          if ((await deliver(last, order, false)) === 200) done.add(order.paymentId);
        if (done.size < orders.length) await sleep(LEASE_MS / 2);
      }
      assert.equal(done.size, orders.length, 'every webhook answered 200 in the end');
      await last.admin.asSuperAdmin();
      const inbox = db === 'postgres' ? await inboxRowsPg(database) : await inboxRowsMysql(database);
      for (const order of orders) {
        const seen = await adminOrder(last.admin, order.id);
        assert.equal(seen.state, 'PaymentSettled', `${order.code}`);
        assert.deepEqual(
          seen.payments.map((p) => [p.state, p.transactionId]),
          [['Settled', order.paymentId]],
          `${order.code}: one Payment`,
        );
        assert.equal(inbox.filter((r) => r.payment_id === order.paymentId).length, 1, `${order.code}: one inbox row`);
      }
      process.stdout.write(
        `# vendure (${db}) killed ${kills} times at ${points.join(', ')} of ${awaits} round trips (${JSON.stringify(counted)}): ${orders.length} orders, each one Payment and one inbox row\n`,
      );
    } finally {
      await stop(last);
    }
  });
});

async function inboxRowsPg(database) {
  const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${database}` });
  await client.connect();
  try {
    return (await client.query('SELECT payment_id FROM nestjs_payments_inbox')).rows;
  } finally {
    await client.end();
  }
}

async function inboxRowsMysql(database) {
  const connection = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database });
  try {
    return (await connection.query('SELECT payment_id FROM nestjs_payments_inbox'))[0];
  } finally {
    await connection.end();
  }
}
