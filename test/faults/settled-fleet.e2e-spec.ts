import { afterAll, beforeAll, describe, expect, jest } from '@jest/globals';
import { createPaymentsClient } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { postJson, quietLogger, tokenOf } from '../support/outcome-kit.js';
import { itWithService, POSTGRES_URL, postgresAvailable, REDIS_URL, redisAvailable } from '../support/services.js';
import { Fleet, type FleetInstance, type FleetStore } from './support/fleet.js';
import { freePort } from './support/own-servers.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { RECHECK_WAITS_MS } from '../../lib/core/settlement/settlement.rechecks.js';

// Issue 39 item 3: what a settled payment costs in verify calls, in a fleet with everything that
// makes it cost more. Measured from outside, 2.02 calls per settled payment (max 6); the budget in
// docs/confirmations.md is 1.5. Here three instances as real processes on one Redis and on one
// PostgreSQL store, 30 paid payments: for half of them the webhook comes while the service's verify
// still says PENDING (the payment completes 0-5 s later, as a lagging service does), the customers of
// a third come back to the return page at a random moment, a delivery answered with a refusal is
// delivered again after its Retry-After (as the service does), and one instance is SIGKILLed in the
// middle and started again.

jest.setTimeout(180_000);
const fleet = new Fleet('settled');
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
const COUNT = 30;
const SECRET = 'whsec_settled_fleet_0123456789abcdef0123';

beforeAll(() => fleet.bundle(), 60_000);
afterAll(() => fleet.cleanup({ redis: redisUp, postgres: postgresUp }));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the kill of an instance may add: one call for each payment its claims held, at most. */
const KILL_ALLOWANCE = 3;

/**
 * The verify calls docs/confirmations.md states for a settled payment whose verify lagged its
 * webhook by `lagMs`: one when the first answer is final; else that first one and one per check of
 * the pending lane (RECHECK_WAITS_MS after the first) until one comes after the lag.
 */
function statedCost(lagMs: number): number {
  if (lagMs <= 0) return 1;
  let at = 0;
  for (const [i, wait] of RECHECK_WAITS_MS.entries()) {
    at += wait;
    if (at >= lagMs) return 2 + i;
  }
  return 1 + RECHECK_WAITS_MS.length;
}

/** A seeded random stream, so that a failing run can be told apart from another by its seed. */
function randomOf(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

interface Running {
  url: string;
  process: FleetInstance;
}

async function settled(store: FleetStore): Promise<void> {
  const sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
  const seed = Date.now() % 100_000;
  const random = randomOf(seed);
  const base = { ...fleet.storeEnv(store), SANDBOX_OPTIONS: JSON.stringify(sandbox.options()), WEBHOOK_SECRET: SECRET };
  const handled = new Map<string, number>();
  const all: FleetInstance[] = [];
  const count = (output: string) => {
    for (const [, id] of output.matchAll(/HANDLED (\S+)/g)) handled.set(id, (handled.get(id) ?? 0) + 1);
  };
  const start = async (): Promise<Running> => {
    const port = await freePort();
    const instance = fleet.start('settled.mjs', { ...base, PORT: String(port) });
    all.push(instance);
    for (let i = 0; i < 200 && !instance.output().includes('READY'); i++) await sleep(50);
    if (!instance.output().includes('READY')) throw new Error(`an instance did not start: ${instance.output()}`);
    return { url: `http://127.0.0.1:${port}`, process: instance };
  };
  // The payments, made on the fleet's store by an app that only makes them.
  const maker = createPaymentsClient({
    ...sandbox.options(),
    store:
      store === 'redis'
        ? new RedisPaymentsStore(REDIS_URL, { keyPrefix: `${fleet.run}:` })
        : new PostgresPaymentsStore(POSTGRES_URL, { schema: fleet.run }),
    webhook: { publicUrl: 'http://127.0.0.1:9/hook', secret: SECRET },
    reconciliation: { enabled: false },
    logger: quietLogger(),
  });
  try {
    const instances = [await start(), await start(), await start()];
    const ids: string[] = [];
    for (let k = 0; k < COUNT; k++)
      ids.push((await maker.generatePayment({ amount: '8000', developerTrackingId: `order-${k}` })).paymentId);
    const pick = () => instances[Math.floor(random() * instances.length)];
    /** The service's delivery: again after each refusal's Retry-After (at most 5 s here), 6 attempts. */
    const deliver = async (id: string) => {
      const token = tokenOf(sandbox.getPayment(id)!.webhook!);
      for (let attempt = 0; attempt < 6; attempt++) {
        const answer = await postJson(`${pick().url}/hook/${token}`, { payment_id: id }).catch(() => undefined);
        if (answer !== undefined && answer.status < 300) return;
        await sleep(2_000 + random() * 3_000);
      }
    };
    /** How long each payment's verify lagged its first delivery, ms (0: paid before it). */
    const lags = new Map<string, number>();
    const journeys = ids.map(async (id, k) => {
      await sleep(random() * 4_000);
      const lagging = k % 2 === 0;
      const delivered = Date.now();
      const completion = async () => {
        if (lagging) await sleep(random() * 5_000);
        await sandbox.completePayment(id, { requireDelivery: false });
        lags.set(id, lagging ? Date.now() - delivered : 0);
      };
      const comeBack = async () => {
        if (k % 3 !== 0) return;
        await sleep(random() * 6_000);
        await fetch(`${pick().url}/return/${id}`).catch(() => undefined);
      };
      if (lagging) await Promise.all([deliver(id), completion(), comeBack()]);
      else {
        await completion();
        await Promise.all([deliver(id), comeBack()]);
      }
    });
    // One instance killed in the middle of it all, and started again a second later.
    const restart = (async () => {
      await sleep(3_000);
      instances[1].process.child.kill('SIGKILL');
      await sleep(1_000);
      instances[1] = await start();
    })();
    await Promise.all([...journeys, restart]);
    // Until every payment is handled (the pending lanes and reconciliation finish what lagged).
    for (let i = 0; i < 600 && handled.size < COUNT; i++) {
      handled.clear();
      for (const p of all) count(p.output());
      await sleep(100);
    }
    // A while more: what an instance still spends after it settled counts too.
    await sleep(5_000);
    handled.clear();
    for (const p of all) count(p.output());
    const calls = ids.map((id) => sandbox.verifyCalls(id));
    const total = calls.reduce((a, b) => a + b, 0);
    const budget = ids.reduce((sum, id) => sum + statedCost(lags.get(id) ?? 0), 0);
    const lagging = ids.filter((id) => (lags.get(id) ?? 0) > 0);
    const spentLagging = lagging.reduce((sum, id) => sum + sandbox.verifyCalls(id), 0);
    process.stdout.write(
      `\n${store} (seed ${seed}): ${COUNT} settled payments on 3 processes (one killed): ${total} verify calls ` +
        `(${(total / COUNT).toFixed(2)} each, max ${Math.max(...calls)}; the ${COUNT - lagging.length} paid before ` +
        `their webhook ${((total - spentLagging) / (COUNT - lagging.length)).toFixed(2)} each, the ${lagging.length} ` +
        `lagging ${(spentLagging / lagging.length).toFixed(2)} each); the stated cost of this mix: ${budget}\n`,
    );
    expect({ handled: ids.filter((id) => handled.has(id)).length, seed }).toEqual({ handled: COUNT, seed });
    // The kill may cost the payments its instance held one call each (their claims' leases run out).
    expect(total).toBeLessThanOrEqual(budget + KILL_ALLOWANCE);
  } finally {
    for (const p of all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
    await Promise.all(all.map((p) => p.done.catch(() => undefined)));
    await maker.close();
    await sandbox.close();
  }
}

describe('a settled payment costs at most 1.5 verify calls in a fleet with lag, returns, redeliveries and a kill', () => {
  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis', () => settled('redis'));
  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL', () => settled('postgres'));
});
