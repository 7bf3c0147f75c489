// The guides project's check (test/compat/guides): the pasted guides, run as a merchant would.
// Starts a PaymentsSandbox (the service), a round-robin balancer in front of two instances of
// the built app (the public URL of both accounts' webhooks), and for each store of docs/stores.md
// (Redis, then PostgreSQL; values in .env):
//   - waits for /health up with the merchant's store and the service;
//   - pays on both accounts through both instances: every payment confirmed by its webhook (the
//     sandbox gets 200), each handler once across the instances, under its own account;
// then, on Redis:
//   - rotates the webhook secret as docs/security.md says, restarting the instances one by one
//     with payments generated before and between the steps: none is lost;
//   - starts an instance under a global prefix with the public URLs left unprefixed: the start-up
//     warning names both paths;
//   - starts an instance whose store is unreachable: /health is down with ECONNREFUSED (the
//     indicator checks the merchant's store);
// and last docs/exactly-once.md's recipe on PostgreSQL (its own schema): two instances, each
// order marked paid with one event row, each handler once.
// Prints `<project name>: ok (...)` and exits 0, or says what failed and exits 1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import pg from 'pg';

const NAME = JSON.parse(readFileSync('package.json', 'utf8')).name;
// Below 32768: Linux gives the ports above it to outgoing connections, and one may hold a fixed port.
const BASE = Number(process.env.GUIDES_PORT_BASE ?? 28050);
const [SANDBOX_PORT, LB_PORT, PORT_A, PORT_B, PORT_C] = [BASE, BASE + 1, BASE + 2, BASE + 3, BASE + 4];
const LB = `http://127.0.0.1:${LB_PORT}`;
const OLD = 'guides-old-secret-0123456789abcdefghijklmnop';
const NEW = 'guides-new-secret-0123456789abcdefghijklmnop';
const REDIS_URL = process.env.GUIDES_REDIS_URL ?? 'redis://127.0.0.1:6379/9';
const DATABASE_URL = process.env.GUIDES_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const sandbox = await PaymentsSandbox.start({ port: SANDBOX_PORT });
const { publicKey, privateKey } = sandbox.options();

/** The .env of docs/configuration.md: both accounts (the outlet under PAYMENTS_OUTLET_), the stores' URLs. */
function writeEnv(overrides = {}) {
  const env = {
    PAYMENTS_PUBLIC_KEY: publicKey,
    PAYMENTS_PRIVATE_KEY: privateKey,
    PAYMENTS_BASE_URL: sandbox.url,
    PAYMENTS_SUCCESS_LINK: 'https://shop.example.com/paid',
    PAYMENTS_FAIL_LINK: 'https://shop.example.com/failed',
    PAYMENTS_WEBHOOK_PUBLIC_URL: `${LB}/payments/webhook`,
    PAYMENTS_WEBHOOK_SECRET: OLD,
    PAYMENTS_OUTLET_PUBLIC_KEY: publicKey,
    PAYMENTS_OUTLET_PRIVATE_KEY: privateKey,
    PAYMENTS_OUTLET_BASE_URL: sandbox.url,
    PAYMENTS_OUTLET_SUCCESS_LINK: 'https://shop.example.com/outlet/paid',
    PAYMENTS_OUTLET_FAIL_LINK: 'https://shop.example.com/outlet/failed',
    PAYMENTS_OUTLET_WEBHOOK_PUBLIC_URL: `${LB}/payments/outlet/webhook`,
    PAYMENTS_OUTLET_WEBHOOK_SECRET: OLD,
    REDIS_URL,
    DATABASE_URL,
    ...overrides,
  };
  writeFileSync(
    '.env',
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n',
  );
}

// Deliveries go to the two instances in turn (the payments' webhook URLs are the balancer's).
let targets = [];
let turn = 0;
const balancer = createServer((req, res) => {
  const target = targets[turn++ % targets.length];
  const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => res.writeHead(502).end());
  req.pipe(upstream);
});
balancer.listen(LB_PORT, '127.0.0.1');
await once(balancer, 'listening');

const running = new Set();
/** Starts the built app on `port` with extra environment; resolves once it answers /health (or `ready` says so). */
async function start(port, env = {}, ready = async (url) => (await fetch(`${url}/health`)).status === 200) {
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { ...process.env, NO_COLOR: '1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const instance = { url: `http://127.0.0.1:${port}`, child, output: () => output };
  running.add(instance);
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the app on port ${port} exited with ${child.exitCode}:\n${output}`);
    try {
      if (await ready(instance.url)) return instance;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the app on port ${port} did not get ready:\n${output}`);
}
/** The handlers' runs of the instances stopped so far (each keeps its ledger in memory). */
const retired = [];
async function stop(instance) {
  running.delete(instance);
  if (instance.child.exitCode !== null) return;
  try {
    retired.push(...(await (await fetch(`${instance.url}/shop/ledger`)).json()));
  } catch {
    // an instance without the shop routes (the prefixed one)
  }
  instance.child.kill('SIGTERM');
  const killer = setTimeout(() => instance.child.kill('SIGKILL'), 10_000);
  await once(instance.child, 'exit');
  clearTimeout(killer);
}

async function pay(instance, account, amount, order) {
  const answer = await fetch(`${instance.url}/shop/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ account, amount, order }),
  });
  if (answer.status !== 201)
    throw new Error(`POST /shop/pay on ${instance.url}: ${answer.status} ${await answer.text()}`);
  return (await answer.json()).paymentId;
}

/** Completes each payment at the sandbox: its webhook must get 200 (through the balancer, from either instance). */
async function complete(ids) {
  for (const id of ids) {
    const settled = await sandbox.completePayment(id);
    assert.equal(settled.lastStatus, 200, `the webhook of ${id} got ${settled.lastStatus}`);
  }
}

/** Each payment's handler ran once, under its account, across the instances (stopped ones included). */
async function expectConfirmedOnce(instances, expected) {
  const entries = [...retired];
  for (const instance of instances) entries.push(...(await (await fetch(`${instance.url}/shop/ledger`)).json()));
  const ids = new Set(expected.map((e) => e.split(':')[1]));
  const ran = entries.filter((e) => ids.has(e.split(':')[1]));
  assert.deepEqual(ran.sort(), [...expected].sort(), 'the handlers that ran for these payments, across the instances');
}

/** docs/exactly-once.md's recipe: the orders' tables and the store's in a schema of their own. */
async function exactlyOnce() {
  const schema = `guides_${process.pid}`;
  const admin = new pg.Pool({ connectionString: DATABASE_URL });
  await admin.query(`CREATE SCHEMA ${schema}`);
  try {
    await admin.query(`CREATE TABLE ${schema}.orders (id text PRIMARY KEY, status text NOT NULL)`);
    await admin.query(
      `CREATE TABLE ${schema}.order_events (id serial PRIMARY KEY, order_id text NOT NULL, kind text NOT NULL)`,
    );
    const orders = ['eo-0', 'eo-1', 'eo-2', 'eo-3'];
    for (const id of orders) await admin.query(`INSERT INTO ${schema}.orders (id, status) VALUES ($1, 'new')`, [id]);
    writeEnv();
    const url = new URL(DATABASE_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const a = await start(PORT_A, { GUIDES_STORE: 'exactly-once', DATABASE_URL: url.href });
    const b = await start(PORT_B, { GUIDES_STORE: 'exactly-once', DATABASE_URL: url.href });
    targets = [a.url, b.url];
    const expected = [];
    for (const [i, order] of orders.entries())
      expected.push(`default:${await pay(i % 2 ? b : a, 'default', String(3000 + i), order)}`);
    await complete(expected.map((e) => e.split(':')[1]));
    await expectConfirmedOnce([a, b], expected);
    const paid = await admin.query(`SELECT id, status FROM ${schema}.orders ORDER BY id`);
    assert.deepEqual(
      paid.rows,
      orders.map((id) => ({ id, status: 'paid' })),
    );
    const events = await admin.query(
      `SELECT order_id, count(*)::int AS n FROM ${schema}.order_events GROUP BY order_id ORDER BY order_id`,
    );
    assert.deepEqual(
      events.rows,
      orders.map((order_id) => ({ order_id, n: 1 })),
    );
    await stop(a);
    await stop(b);
    return 'exactly-once: 4 orders paid once each through the recipe, on 2 instances';
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

// Order ids unique to this run: the stores (the machine's Redis and PostgreSQL) outlive it, and an
// order with an open payment from an earlier run would get that payment's link back.
const RUN = Date.now().toString(36);
const figures = [];
try {
  for (const store of ['redis', 'postgres']) {
    writeEnv();
    const a = await start(PORT_A, { GUIDES_STORE: store });
    const b = await start(PORT_B, { GUIDES_STORE: store });
    targets = [a.url, b.url];
    const health = await (await fetch(`${a.url}/health`)).json();
    assert.equal(health.status, 'ok', JSON.stringify(health));
    assert.equal(health.info?.payments?.store, 'up', JSON.stringify(health));
    assert.equal(health.info?.payments?.service, 'up', JSON.stringify(health));
    const expected = [];
    for (let i = 0; i < 4; i++) {
      const account = i % 2 === 0 ? 'default' : 'outlet';
      const id = await pay(i < 2 ? a : b, account, String(1000 + i), `order-${RUN}-${store}-${i}`);
      expected.push(`${account}:${id}`);
    }
    await complete(expected.map((e) => e.split(':')[1]));
    await expectConfirmedOnce([a, b], expected);
    figures.push(`${store}: 4 payments on 2 accounts by webhook, each handler once`);

    if (store === 'redis') {
      // Rotation under live payments (docs/security.md): unpaid payments minted at every step.
      const step = async (instance, port, secret, previous) => {
        await stop(instance);
        return start(port, {
          GUIDES_STORE: store,
          PAYMENTS_WEBHOOK_SECRET: secret,
          PAYMENTS_WEBHOOK_PREVIOUS_SECRETS: previous,
          PAYMENTS_OUTLET_WEBHOOK_SECRET: secret,
          PAYMENTS_OUTLET_WEBHOOK_PREVIOUS_SECRETS: previous,
        });
      };
      let [x, y] = [a, b];
      const unpaid = [
        `default:${await pay(x, 'default', '2001', `rot-${RUN}-0`)}`,
        `outlet:${await pay(y, 'outlet', '2002', `rot-${RUN}-1`)}`,
      ];
      x = await step(x, PORT_A, OLD, NEW);
      targets = [x.url, y.url];
      unpaid.push(`default:${await pay(x, 'default', '2003', `rot-${RUN}-2`)}`);
      y = await step(y, PORT_B, OLD, NEW);
      targets = [x.url, y.url];
      x = await step(x, PORT_A, NEW, OLD);
      targets = [x.url, y.url];
      unpaid.push(
        `outlet:${await pay(x, 'outlet', '2004', `rot-${RUN}-3`)}`,
        `default:${await pay(y, 'default', '2005', `rot-${RUN}-4`)}`,
      );
      // Mid-deploy: x mints with the new secret, y with the old one; deliveries reach either.
      await complete(unpaid.slice(2).map((e) => e.split(':')[1]));
      y = await step(y, PORT_B, NEW, OLD);
      targets = [x.url, y.url];
      unpaid.push(`outlet:${await pay(y, 'outlet', '2006', `rot-${RUN}-5`)}`);
      await complete([...unpaid.slice(0, 2), unpaid[5]].map((e) => e.split(':')[1]));
      await expectConfirmedOnce([x, y], unpaid);
      figures.push('rotation: 6 payments minted across the 3 steps, all confirmed by webhook, once');
      await stop(x);
      await stop(y);

      // A global prefix the public URLs do not have: the start-up warning names both paths.
      const prefixed = await start(
        PORT_C,
        { GUIDES_STORE: store, GUIDES_GLOBAL_PREFIX: 'api' },
        async (url) => (await fetch(`${url}/api/health`)).status === 200,
      );
      assert.match(
        prefixed.output(),
        /webhook\.publicUrl of the default registration .*has the path '\/payments\/webhook' but its webhook route is served at '\/api\/payments\/webhook'/,
      );
      assert.match(
        prefixed.output(),
        /webhook\.publicUrl of registration 'outlet' .*'\/payments\/outlet\/webhook' but its webhook route is served at '\/api\/payments\/outlet\/webhook'/,
      );
      await stop(prefixed);
      figures.push('global prefix: the start-up warning');

      // The health module checks the merchant's store: unreachable, it says so.
      const down = await start(
        PORT_C,
        { GUIDES_STORE: store, REDIS_URL: `redis://127.0.0.1:${PORT_C + 1}` },
        async (url) => (await fetch(`${url}/health`)).status === 503,
      );
      const answer = await (await fetch(`${down.url}/health`)).json();
      assert.equal(answer.error?.payments?.reason, 'ECONNREFUSED', JSON.stringify(answer));
      await stop(down);
      figures.push('health: the merchant store down is ECONNREFUSED');
    } else {
      await stop(a);
      await stop(b);
    }
  }
  figures.push(await exactlyOnce());
  console.log(`${NAME}: ok (${figures.join('; ')})`);
} catch (error) {
  console.error(`${NAME}: FAIL ${error?.stack ?? error}`);
  for (const instance of running) console.error(`--- output of ${instance.url} ---\n${instance.output()}`);
  process.exitCode = 1;
} finally {
  for (const instance of [...running]) await stop(instance);
  balancer.close();
  await sandbox.close();
}
