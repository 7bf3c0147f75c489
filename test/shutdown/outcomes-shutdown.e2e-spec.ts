import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { PaymentConfirmedEvent } from '../../lib/index.js';
import { MemoryPaymentsStore, type PaymentsStore } from '../../lib/store/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { generateVia, quietLogger, verifyCount } from '../support/outcome-kit.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { settle, useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// close() lets every outcome in flight finish, whatever path started it: a return
// (reconcilePayment) and a reconciliation pass as well as a webhook. Their handlers complete and
// the outcome is marked done before the store closes, so a new client on the same store runs
// nothing again (and spends no verify call on it).

const SECRET = 'whsec_outcome_shutdown_0123456789abcdef01';
const fakeService = useFakeServiceWithoutUnhandledRejections();
let counter = 0;

function options(store: PaymentsStore) {
  return {
    publicKey: 'pk',
    privateKey: 'sk_outcome_shutdown',
    baseUrl: fakeService().url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET },
    reconciliation: { enabled: false },
    logger: quietLogger(),
    store,
  };
}

/** A client whose confirmation handler waits for `release()` before it finishes. */
function slowClient(store: PaymentsStore, journal: string[]) {
  const client = createPaymentsClient(options(store));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  createWebhookRouter({
    client,
    onPaymentConfirmed: async (e: PaymentConfirmedEvent) => {
      journal.push(`start ${e.paymentId} ${e.source}`);
      await gate;
      journal.push(`done ${e.paymentId}`);
    },
  });
  return { client, release };
}

async function until(predicate: () => boolean) {
  for (let i = 0; i < 600 && !predicate(); i++) await settle(5);
  expect(predicate()).toBe(true);
}

function scenarios(
  makeStores: () => Promise<{ first: PaymentsStore; second: PaymentsStore; cleanup(): Promise<void> }>,
) {
  it.each(['return', 'reconciliation'] as const)(
    'a %s in flight at close(): its handler finishes and is marked done before close() resolves; a new client runs nothing again',
    async (path) => {
      const stores = await makeStores();
      const journal: string[] = [];
      const first = slowClient(stores.first, journal);
      let second: PaymentsClient | undefined;
      try {
        const p = await generateVia(first.client, fakeService(), `pay_outcome_shutdown_${++counter}`, {
          amount: '700',
          sessionTimeoutSecs: 60,
        });
        fakeService().always(verifyPath(p.paymentId), {
          status: 200,
          body: verifyAnswer({ status: 'SUCCESS', amount: 700 }),
        });

        const running =
          path === 'return'
            ? first.client.reconcilePayment(p.paymentId)
            : first.client.runReconciliation(Date.now() + 3_600_000);
        await until(() => journal.includes(`start ${p.paymentId} ${path}`));
        const closing = first.client.close().then(() => journal.push('closed'));
        await settle(30);
        expect(journal).not.toContain('closed');
        first.release();
        const result = await running;
        await closing;
        if (path === 'return') expect(result).toMatchObject({ outcome: 'confirmed', handled: true });
        else expect(result).toEqual({ checked: 1, settled: 1 });
        expect(journal).toEqual([`start ${p.paymentId} ${path}`, `done ${p.paymentId}`, 'closed']);

        // A new client on the same store: the webhook, the return and reconciliation all find it done.
        const again: string[] = [];
        second = createPaymentsClient(options(stores.second));
        createWebhookRouter({ client: second, onPaymentConfirmed: (e) => void again.push(e.paymentId) });
        await expect(second.reconcilePayment(p.paymentId)).resolves.toMatchObject({
          outcome: 'confirmed',
          handled: false,
        });
        await expect(second.runReconciliation(Date.now() + 7_200_000)).resolves.toEqual({ checked: 0, settled: 0 });
        await expect(
          second.webhooks.handle({ query: {}, body: { payment_id: p.paymentId }, pathToken: p.token }),
        ).resolves.toMatchObject({
          status: 200,
          body: { received: true, duplicate: true },
        });
        expect(again).toEqual([]);
        expect(verifyCount(fakeService(), p.paymentId)).toBe(1);
      } finally {
        first.release();
        await first.client.close();
        await second?.close();
        await stores.cleanup();
      }
    },
  );
}

describe('outcomes in flight at shutdown, memory store shared by both clients', () => {
  scenarios(async () => {
    const store = new MemoryPaymentsStore();
    return { first: store, second: store, cleanup: async () => undefined };
  });
});

const redisUp = await redisAvailable();
describeWithService(redisUp, `no Redis at ${REDIS_URL}`)(
  'outcomes in flight at shutdown, one Redis, each client its own connection',
  () => {
    scenarios(async () => {
      const keyPrefix = `nestjs-payments-outcome-shutdown:${process.pid}:${++counter}:`;
      const first = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
      const second = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
      return {
        first,
        second,
        cleanup: async () => {
          await Promise.all([first.close(), second.close()]);
          const redis = new Redis(REDIS_URL);
          const keys = await redis.keys(`${keyPrefix}*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        },
      };
    });
  },
);
