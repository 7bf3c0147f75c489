import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { bundleInstances, ok, startInstance, type AppInstance } from '../support/app-instances.js';
import { ownServersMissing, startPgBouncer, type OwnPgBouncer } from '../support/pg-servers.js';
import { RedisServers, redisServerInstalled } from '../support/redis-servers.js';
import { describeWithService, POSTGRES_URL, postgresAvailable } from '../support/services.js';

// superseded.e2e-spec.ts's two tabs of one order, raced, with real processes on the stores of
// production: two app instances (child processes, fixtures/instance.app.ts) share a PostgreSQL
// store behind PgBouncer in transaction mode (plain, then transactional) or a Redis Cluster of the
// test's own, with duplicates: { refund: true }. For each order, tab 1 opens a payment for the
// cart at 1000 on one instance, tab 2 one for the changed cart (2000 and more) on the other; the
// sandbox then completes both, the old cart's first (at once, or up to 250 ms ahead), and their
// webhooks race to the two instances. Whichever is verified first: no payment.confirmed for the old cart (a mismatch for a
// person, or a duplicate of the current one), the current cart's payment confirmed once, and
// never refunded.
//
// Ports: the instances 27000-27005, the cluster 27010-27015 (its bus 27110-27115); PgBouncer on a
// free port of pg-servers.ts's range, in front of the PostgreSQL at POSTGRES_URL.

const SECRET = 'whsec_superseded_processes_0123456789abcd';
const ORDERS = 8;
/** How long after the old cart's payment each order's current one is completed: a race, then the old one ahead. */
const LAGS_MS = [0, 0, 10, 20, 40, 80, 150, 250];
const CLUSTER_PORTS = [27010, 27011, 27012, 27013, 27014, 27015];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pgMissing = ownServersMissing() ?? ((await postgresAvailable()) ? undefined : `no PostgreSQL at ${POSTGRES_URL}`);
const redisMissing = redisServerInstalled()
  ? undefined
  : 'redis-server/redis-cli not installed (apt-get install redis-server redis-tools)';

const children: ChildProcess[] = [];
let sandbox: PaymentsSandbox;
let bundle: ReturnType<typeof bundleInstances>;

beforeAll(async () => {
  if (pgMissing && redisMissing && !process.env.CI) return;
  bundle = bundleInstances('superseded');
  sandbox = await PaymentsSandbox.start();
}, 60_000);

afterAll(async () => {
  // Only the processes this file started, by their handle.
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sandbox?.close();
  bundle?.remove();
});

const FINAL = ['confirmed', 'mismatch', 'duplicate'];

/** How one order's race ended, and what broke the promises (empty when nothing did). */
interface Raced {
  oldOutcome: string | undefined;
  violations: string[];
}

/**
 * One order: the old tab's payment (1000) through `one`, the current one (`amount`) through `two`,
 * the old one completed first and the current one `lagMs` later; then returns, old first, until
 * both have a final outcome.
 */
async function raceOrder(one: AppInstance, two: AppInstance, amount: string, lagMs: number): Promise<Raced> {
  const order = `order-${randomUUID()}`;
  const old = ok(
    await one.call<{ paymentId: string }>('generatePayment', { amount: '1000', developerTrackingId: order }),
    one,
  );
  const current = ok(
    await two.call<{ paymentId: string }>('generatePayment', { amount, developerTrackingId: order }),
    two,
  );
  expect(current.paymentId).not.toBe(old.paymentId);

  const complete = (paymentId: string) => sandbox.completePayment(paymentId, { requireDelivery: false });
  await Promise.all([complete(old.paymentId), sleep(lagMs).then(() => complete(current.paymentId))]);
  const outcomeOf = async (paymentId: string) =>
    ok(await one.call<{ outcome: string } | null>('getOutcome', paymentId), one)?.outcome;
  let outcomes: Array<string | undefined> = [];
  for (let i = 0; i < 50; i++) {
    outcomes = [await outcomeOf(old.paymentId), await outcomeOf(current.paymentId)];
    if (outcomes.every((o) => o !== undefined && FINAL.includes(o))) break;
    // A webhook refused on the way (a lease, a slow store): the customer's returns settle it.
    await two.call('reconcilePayment', old.paymentId);
    await one.call('reconcilePayment', current.paymentId);
    await sleep(100);
  }
  // A duplicate's refund goes on after its outcome is recorded: let it end.
  for (let i = 0; i < 50; i++) {
    const pending = [old, current].filter(
      (p, k) => outcomes[k] === 'duplicate' && sandbox.getPayment(p.paymentId)?.state === 'paid',
    );
    if (pending.length === 0) break;
    await sleep(100);
  }
  // The events' lines come on the processes' stdout: give them a moment.
  await sleep(200);

  const events = [...one.events, ...two.events].filter(
    (e) => e.paymentId === old.paymentId || e.paymentId === current.paymentId,
  );
  const named = (name: string, paymentId: string) => events.filter((e) => e.name === name && e.paymentId === paymentId);
  const violations: string[] = [];
  const say = (what: string) =>
    violations.push(`${order} (old ${old.paymentId}, current ${current.paymentId}): ${what}`);
  for (const e of events.filter((e) => e.name === 'payment.confirmed'))
    if (e.paymentId === old.paymentId || e.amount === '1000')
      say(`payment.confirmed for the old cart (${e.paymentId}, amount ${e.amount})`);
  const confirmed = named('payment.confirmed', current.paymentId).length;
  if (confirmed !== 1) say(`the current cart's payment confirmed ${confirmed} times`);
  if (outcomes[1] !== 'confirmed') say(`the current cart's payment is ${outcomes[1]}`);
  if (
    named('payment.refunded', current.paymentId).length > 0 ||
    sandbox.getPayment(current.paymentId)?.state !== 'paid'
  )
    say(`the current cart's payment was refunded (${sandbox.getPayment(current.paymentId)?.state})`);
  if (outcomes[0] === 'mismatch') {
    const mismatches = named('payment.mismatch', old.paymentId);
    if (mismatches.length !== 1) say(`${mismatches.length} payment.mismatch for the old cart's payment`);
    else if (!(mismatches[0].problems ?? []).join(' ').includes(current.paymentId))
      say(`the mismatch does not name the current payment: ${String(mismatches[0].problems)}`);
  } else if (outcomes[0] === 'duplicate') {
    const settledBy = named('payment.duplicate', old.paymentId).map((e) => e.settledBy?.paymentId);
    if (settledBy.join() !== current.paymentId) say(`the old cart's duplicate names ${settledBy.join()}`);
  } else say(`the old cart's payment is ${outcomes[0]}`);
  return { oldOutcome: outcomes[0], violations };
}

interface Kind {
  name: string;
  missing: string | undefined;
  /** Starts the kind's servers; the store's environment for the instances, and the cleanup. */
  start(): Promise<{ store: Record<string, string>; cleanup(): Promise<void> }>;
}

const pgKind = (transactional: boolean): Kind => ({
  name: `PgBouncer in transaction mode, ${transactional ? 'transactional ' : ''}PostgreSQL store`,
  missing: pgMissing,
  start: async () => {
    const target = new URL(POSTGRES_URL);
    const bouncer: OwnPgBouncer = await startPgBouncer({
      host: target.hostname || '127.0.0.1',
      port: Number(target.port || 5432),
    });
    const tablePrefix = `sup_${randomUUID().slice(0, 8)}_`;
    return {
      store: {
        STORE: 'postgres',
        STORE_URL: bouncer.url(target.pathname.slice(1) || 'postgres'),
        PREFIX: tablePrefix,
        TRANSACTIONAL: transactional ? '1' : '0',
      },
      cleanup: async () => {
        await bouncer.stop();
        const pool = new pg.Pool({ connectionString: POSTGRES_URL });
        const { rows } = await pool.query<{ t: string }>(
          `SELECT tablename AS t FROM pg_tables WHERE tablename LIKE $1`,
          [`${tablePrefix}%`],
        );
        for (const { t } of rows) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
        await pool.end();
      },
    };
  },
});

const KINDS: Kind[] = [
  pgKind(false),
  pgKind(true),
  {
    name: 'Redis Cluster (3 masters + 3 replicas)',
    missing: redisMissing,
    start: async () => {
      const servers = new RedisServers();
      try {
        await servers.startCluster(CLUSTER_PORTS, 3);
      } catch (error) {
        await servers.stop();
        throw error;
      }
      return {
        store: {
          STORE: 'redis-cluster',
          CLUSTER_PORTS: CLUSTER_PORTS.slice(0, 3).join(','),
          PREFIX: `np-superseded:${randomUUID()}:`,
        },
        cleanup: () => servers.stop(),
      };
    },
  },
];

for (const [k, kind] of KINDS.entries()) {
  describeWithService(!kind.missing, kind.missing ?? '')(
    `two tabs of one order raced across two processes (${kind.name}, duplicates refunded)`,
    () => {
      let instances: AppInstance[] = [];
      let cleanup: () => Promise<void> = async () => undefined;

      beforeAll(async () => {
        const started = await kind.start();
        cleanup = started.cleanup;
        for (const port of [27000 + 2 * k, 27001 + 2 * k])
          instances.push(
            await startInstance(
              bundle.file,
              { service: sandbox.options(), secret: SECRET, port, store: started.store, refund: true },
              children,
            ),
          );
      }, 60_000);

      afterAll(async () => {
        for (const i of instances) await i.stop();
        instances = [];
        await cleanup();
      }, 30_000);

      it(`${ORDERS} raced orders: never payment.confirmed for the old cart (a mismatch, or a duplicate of the current one); the current cart's payment confirmed once, never refunded`, async () => {
        const [one, two] = instances;
        const raced = await Promise.all(
          Array.from({ length: ORDERS }, (_, i) =>
            raceOrder(one, two, String(2000 + 100 * i), LAGS_MS[i % LAGS_MS.length]),
          ),
        );
        const violations = raced.flatMap((r) => r.violations);
        const tally = raced.reduce<Record<string, number>>((t, r) => {
          const key = String(r.oldOutcome);
          t[key] = (t[key] ?? 0) + 1;
          return t;
        }, {});
        process.stderr.write(`superseded (${kind.name}): the old cart's payments ended ${JSON.stringify(tally)}\n`);
        // What the instances said (a checkout lookup given up on, a write retried late) is what tells why.
        if (violations.length > 0)
          for (const [n, instance] of instances.entries())
            process.stderr.write(`instance ${n + 1}'s stderr (end):\n${instance.process.stderr().slice(-4000)}\n`);
        expect(violations).toEqual([]);
      }, 60_000);
    },
  );
}
