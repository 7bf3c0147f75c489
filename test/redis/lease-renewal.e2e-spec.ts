import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createPaymentsClient, type PaymentsClient } from '../../lib/express/index.js';
import { MemoryPaymentsStore, type PaymentsStore } from '../../lib/store/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import { answerVerify, generateVia, postJson, quietLogger, startRouter, verifyCount } from '../support/outcome-kit.js';
import { REDIS_URL, redisAvailable } from '../support/services.js';

// A handler slower than webhook.leaseMs: the claim is renewed while it runs (a same-owner claim
// every third of the lease), so a redelivery meanwhile is told busy instead of running the
// handlers a second time, concurrently; a renewal that finds the claim taken is logged.

const SECRET = 'whsec_lease_renewal_0123456789abcdef01234';
const LEASE_MS = 300;
const redisUp = await redisAvailable();
let fake: FakeService;
let admin: Redis | undefined;

beforeAll(async () => {
  fake = await FakeService.start();
  if (redisUp || process.env.CI) admin = new Redis(REDIS_URL);
});
afterAll(async () => {
  await fake.close();
  await admin?.quit();
});

function newClient(store: PaymentsStore, logged: string[]): PaymentsClient {
  return createPaymentsClient({
    publicKey: 'pk_lease',
    privateKey: 'sk_lease_private',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    maxRetries: 0,
    webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET, leaseMs: LEASE_MS },
    reconciliation: { enabled: false },
    logger: quietLogger(logged),
    store,
  });
}

/**
 * One payment whose confirmed handler runs for `handlerMs` (over several leases); `during` runs
 * once the handler has started. Returns what the handler saw and the first delivery's answer.
 */
async function slowConfirmation(
  store: PaymentsStore,
  handlerMs: number,
  during: (deliver: () => Promise<number>, paymentId: string) => Promise<void>,
) {
  const logged: string[] = [];
  const client = newClient(store, logged);
  let active = 0;
  let overlapped = false;
  let runs = 0;
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const router = await startRouter({
    client,
    onPaymentConfirmed: async () => {
      runs++;
      overlapped ||= active > 0;
      active++;
      started();
      await new Promise((r) => setTimeout(r, handlerMs));
      active--;
    },
  });
  try {
    const p = await generateVia(client, fake, `pay_lease_${randomUUID()}`, { amount: '2500' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 2500 }, { status: 'SUCCESS', amount: 2500 });
    const deliver = async () => (await postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId })).status;
    const first = deliver();
    await running;
    await during(deliver, p.paymentId);
    return { first: await first, runs, overlapped, logged, paymentId: p.paymentId, after: await deliver() };
  } finally {
    await router.close();
    await client.close();
  }
}

/** Redeliveries every 100 ms while the handler runs: each must be told busy. */
async function redeliverMeanwhile(deliver: () => Promise<number>, forMs: number): Promise<number[]> {
  const answers: number[] = [];
  for (const until = Date.now() + forMs; Date.now() < until;) {
    answers.push(await deliver());
    await new Promise((r) => setTimeout(r, 100));
  }
  return answers;
}

describe.each([
  ['memory', async () => ({ store: new MemoryPaymentsStore(), close: async () => {} })],
  [
    'Redis',
    async () => {
      const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix: `lease:${randomUUID()}:` });
      return { store, close: () => store.close() };
    },
  ],
])('lease renewal while handlers run (%s store)', (name, make) => {
  const run = name === 'Redis' && !redisUp && !process.env.CI ? it.skip : it;

  run(
    `a handler of ${LEASE_MS * 4} ms with a ${LEASE_MS} ms lease: redeliveries meanwhile are busy, the handler runs once`,
    async () => {
      const { store, close } = await make();
      try {
        let meanwhile: number[] = [];
        const result = await slowConfirmation(store, LEASE_MS * 4, async (deliver) => {
          meanwhile = await redeliverMeanwhile(deliver, LEASE_MS * 3);
        });
        expect(meanwhile.length).toBeGreaterThanOrEqual(5);
        expect(new Set(meanwhile)).toEqual(new Set([409]));
        expect(result).toMatchObject({ first: 200, runs: 1, overlapped: false, after: 200 });
        expect(verifyCount(fake, result.paymentId)).toBe(1);
        expect(result.logged.filter((l) => l.includes('claim'))).toEqual([]);
      } finally {
        await close();
      }
    },
  );
});

describe('a renewal that finds the claim taken (Redis)', () => {
  const run = !redisUp && !process.env.CI ? it.skip : it;

  run('is logged as an error; the handlers end, and the done marker is not written over the new holder', async () => {
    const keyPrefix = `lease:${randomUUID()}:`;
    const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
    try {
      const result = await slowConfirmation(store, LEASE_MS * 3, async (_deliver, paymentId) => {
        // Another instance holds it now (as after a lease that ran out while this one was stalled).
        await admin!.set(`${keyPrefix}event:outcome:${paymentId}`, 'claimed:intruder', 'PX', 60_000);
        await new Promise((r) => setTimeout(r, LEASE_MS));
      });
      expect(result).toMatchObject({ first: 200, runs: 1, after: 409 });
      expect(
        result.logged.filter((l) => l.includes(`the claim on ${result.paymentId} was lost while its handlers ran`)),
      ).toHaveLength(1);
      expect(await admin!.get(`${keyPrefix}event:outcome:${result.paymentId}`)).toBe('claimed:intruder');
    } finally {
      await store.close();
    }
  });
});
