import { expect, it } from '@jest/globals';
import type { Cluster, Redis } from 'ioredis';
import type { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import type { FakeService } from './fake-service.js';
import { fakeServiceClient, generateVia, postJson, startRouter, type RunningRouter } from './outcome-kit.js';
import { verifyAnswer, verifyPath } from './verify-answers.js';

// The duplicate scenarios that ran handlers twice on a Redis Cluster (a late redelivery after the
// lease; two return visits further apart than the lease), and a run of payments during which a
// test-supplied fault (a master SIGKILLed) strikes. Two app instances, each with a store on its own
// client of the Redis under test, handle the same payments; each handler run is counted.

const SECRET = 'whsec_redis_setups_0123456789abcdef012345';
const LEASE_MS = 800;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One app instance: a client on a RedisPaymentsStore, its webhook router, and its own Redis client. */
export interface Instance {
  client: PaymentsClient;
  router: RunningRouter;
  store: RedisPaymentsStore;
  close(): Promise<void>;
}

/** Counts of handler runs by payment id, shared by the instances of a run. */
export type RunCounts = Map<string, number>;

/** Starts an instance on `redis` (closed with the instance). */
export async function startInstance(
  fake: FakeService,
  redis: Redis | Cluster,
  keyPrefix: string,
  runs: RunCounts,
): Promise<Instance> {
  const store = new RedisPaymentsStore(redis, { keyPrefix });
  const client = fakeServiceClient(fake, SECRET, {
    store,
    webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET, leaseMs: LEASE_MS },
  });
  const router = await startRouter({
    client,
    onPaymentConfirmed: (event) => {
      runs.set(event.paymentId, (runs.get(event.paymentId) ?? 0) + 1);
    },
  });
  return {
    client,
    router,
    store,
    close: async () => {
      await router.close();
      await client.close();
      redis.disconnect();
    },
  };
}

/** Generates a payment through `instance`, with the service answering SUCCESS to every verify. */
export async function paidPayment(
  instance: Instance,
  fake: FakeService,
  paymentId: string,
): Promise<{ paymentId: string; token: string }> {
  const p = await generateVia(instance.client, fake, paymentId, { amount: '4200' });
  fake.always(verifyPath(paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 4200 }) });
  return p;
}

/** Delivers the webhook of `p` to `instance` once. */
export function deliver(
  instance: Instance,
  p: { paymentId: string; token: string },
): Promise<{ status: number; body: unknown }> {
  return postJson(`${instance.router.url}/${p.token}`, { payment_id: p.paymentId }).catch((e: unknown) => ({
    status: 0,
    body: String(e),
  }));
}

/**
 * Delivers until a 200, as the service does (a 503 while the store is failing over, a 409 while a
 * lease runs); the statuses refused on the way are pushed to `refused`.
 */
export async function deliverUntilAccepted(
  instance: Instance,
  p: { paymentId: string; token: string },
  refused: number[] = [],
  tries = 300,
): Promise<{ status: number; body: unknown }> {
  let answer = await deliver(instance, p);
  for (let i = 0; i < tries && answer.status !== 200; i++) {
    refused.push(answer.status);
    await sleep(100);
    answer = await deliver(instance, p);
  }
  return answer;
}

/**
 * The duplicate scenarios as `it`s, on two instances made by `instances()` (fresh key prefix each).
 * `label` names the setup in the test names.
 */
export function itRunsHandlersOnce(
  label: string,
  fake: () => FakeService,
  instances: (runs: RunCounts) => Promise<[Instance, Instance]>,
): void {
  it(`${label}: a late redelivery (after the lease) to the other instance is a duplicate: handlers once for each of 10 payments`, async () => {
    const runs: RunCounts = new Map();
    const [a, b] = await instances(runs);
    try {
      const payments = [];
      for (let i = 0; i < 10; i++)
        payments.push(await paidPayment(a, fake(), `pay_late_${process.pid}_${Date.now()}_${i}`));
      for (const p of payments) expect(await deliver(a, p)).toEqual({ status: 200, body: { received: true } });
      await sleep(LEASE_MS * 2);
      for (const p of payments)
        expect(await deliver(b, p)).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(payments.map((p) => runs.get(p.paymentId))).toEqual(payments.map(() => 1));
      for (const p of payments)
        expect(await b.client.getOutcome(p.paymentId)).toMatchObject({ outcome: 'confirmed', attempts: 1 });
      expect(await b.client.countPending()).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it(`${label}: two return visits further apart than the lease, then the webhook: handlers once`, async () => {
    const runs: RunCounts = new Map();
    const [a, b] = await instances(runs);
    try {
      const p = await paidPayment(a, fake(), `pay_return_${process.pid}_${Date.now()}`);
      expect(await a.client.reconcilePayment(p.paymentId)).toMatchObject({ outcome: 'confirmed', handled: true });
      await sleep(LEASE_MS * 2);
      expect(await b.client.reconcilePayment(p.paymentId)).toMatchObject({ outcome: 'confirmed', handled: false });
      expect(await deliver(b, p)).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(runs.get(p.paymentId)).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
}

/**
 * 30 payments generated, then each delivered (to either instance, alternately, with redelivery
 * until accepted, as the service does) while `fault` strikes after the 10th (it returns at once:
 * the deliveries go on through the outage); then every payment delivered once more to the other
 * instance. Every handler ran exactly once, every payment is confirmed: nothing lost, nothing
 * twice. Returns the statuses refused during the outage.
 */
export async function runThroughFault(
  fake: FakeService,
  pair: [Instance, Instance],
  runs: RunCounts,
  fault: () => void,
): Promise<number[]> {
  const [a, b] = pair;
  const refused: number[] = [];
  const payments = [];
  for (let i = 0; i < 30; i++)
    payments.push(await paidPayment(i % 2 ? b : a, fake, `pay_fault_${process.pid}_${Date.now()}_${i}`));
  for (const [i, p] of payments.entries()) {
    if (i === 10) fault();
    expect((await deliverUntilAccepted(i % 2 ? a : b, p, refused)).status).toBe(200);
  }
  for (const [i, p] of payments.entries())
    expect(await deliverUntilAccepted(i % 2 ? b : a, p)).toEqual({
      status: 200,
      body: { received: true, duplicate: true },
    });
  expect(payments.map((p) => runs.get(p.paymentId))).toEqual(payments.map(() => 1));
  // A record whose slot was failing over when its attempt ended is written again once it is back.
  for (const p of payments) {
    let record = await a.client.getOutcome(p.paymentId);
    for (let i = 0; i < 100 && !record; i++) {
      await sleep(200);
      record = await a.client.getOutcome(p.paymentId);
    }
    expect(record).toMatchObject({ outcome: 'confirmed' });
  }
  return refused;
}
