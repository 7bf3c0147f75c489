import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, type PaymentConfirmedEvent } from '../../lib/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import { answerVerify, verifyCalls } from '../support/nest-app.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';

const available = await redisAvailable();
const SECRET = 'shared-webhook-secret-0123456789abcdef';

/** Every handler run of every instance, in one place, to count runs per payment across instances. */
const runs: Array<{ instance: string; paymentId: string }> = [];
/** Payment ids whose first handler run fails, on whichever instance (a failure must be redelivered, not lost). */
const failOnce = new Set<string>();

function handlerFor(instance: string) {
  @Injectable()
  class Handler {
    @OnPaymentConfirmed()
    async onConfirmed(event: PaymentConfirmedEvent) {
      // A little work, so that concurrent duplicates overlap.
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 25));
      if (failOnce.delete(event.paymentId)) throw new Error('transient failure');
      runs.push({ instance, paymentId: event.paymentId });
    }
  }
  return Handler;
}

describeWithService(available, `Redis not reachable at ${REDIS_URL}`)('two app instances sharing one Redis', () => {
  const prefix = `test:multi:${randomUUID()}:`;
  let fake: FakeService;
  const apps: Record<'A' | 'B', { app: INestApplication; url: string }> = {} as never;

  beforeAll(async () => {
    fake = await FakeService.start();
    for (const name of ['A', 'B'] as const) {
      const moduleRef = await Test.createTestingModule({
        imports: [
          PaymentsModule.forRoot({
            publicKey: 'pk',
            privateKey: 'sk',
            baseUrl: fake.url,
            successLink: 'https://shop.example/ok',
            failLink: 'https://shop.example/ko',
            webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
            reconciliation: { enabled: false },
            store: new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix }),
          }),
        ],
        providers: [handlerFor(name)],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      apps[name] = { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
    }
  });

  afterAll(async () => {
    await Promise.all(Object.values(apps).map(({ app }) => app.close()));
    await fake.close();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('runs each payment’s handlers exactly once in total, under concurrent duplicates split between instances', async () => {
    const PAYMENTS = 40;
    const DUPLICATES_PER_INSTANCE = 3;
    const payments: Array<{ paymentId: string; token: string; generatedOn: 'A' | 'B' }> = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const generatedOn = i % 2 === 0 ? 'A' : 'B';
      const paymentId = `pay_multi_${i}`;
      fake.reply(PATHS.generate, OK.generate(paymentId));
      await apps[generatedOn].app
        .get(PaymentsService)
        .generatePayment({ amount: String(1000 + i), developerTrackingId: `order-${i}` });
      const webhook = new URL(JSON.parse(fake.requests.at(-1)!.body).webhook as string);
      payments.push({ paymentId, token: webhook.pathname.split('/').at(-1)!, generatedOn });
      answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 1000 + i, trackingId: `order-${i}` });
    }
    const FAILING = 8;
    const failing = new Set(payments.slice(0, FAILING).map((p) => p.paymentId));
    for (const id of failing) failOnce.add(id);

    const deliver = (instance: 'A' | 'B', p: (typeof payments)[number]) =>
      fetch(`${apps[instance].url}/payments/webhook/${p.token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payment_id: p.paymentId, status: 'completed' }),
      }).then((r) => r.status);

    // Round 1: every payment delivered several times to both instances at once.
    const first = await Promise.all(
      payments.flatMap((p) =>
        Array.from({ length: DUPLICATES_PER_INSTANCE }, () => [deliver('A', p), deliver('B', p)]).flat(),
      ),
    );
    expect(first.every((s) => [200, 409, 500].includes(s))).toBe(true);
    // Each failing payment's first run fails exactly once, whichever instance claimed it.
    expect(first.filter((s) => s === 500)).toHaveLength(FAILING);

    // Like the service would: redeliver until every payment has been acknowledged with a 200,
    // alternating instances (bounded: this must converge quickly).
    const pending = new Set(payments.map((p) => p.paymentId));
    for (let round = 0; round < 20 && pending.size > 0; round++) {
      const statuses = await Promise.all(
        payments
          .filter((p) => pending.has(p.paymentId))
          .map(async (p) => [p.paymentId, await deliver(round % 2 ? 'A' : 'B', p)] as const),
      );
      for (const [id, status] of statuses) if (status === 200) pending.delete(id);
      if (pending.size) await new Promise((r) => setTimeout(r, 50));
    }
    expect(pending.size).toBe(0);

    const perPayment = new Map<string, number>();
    for (const run of runs) perPayment.set(run.paymentId, (perPayment.get(run.paymentId) ?? 0) + 1);
    // Listed as "id: instances that ran it", so a failure shows where the duplicate ran.
    const notOnce = payments.filter((p) => perPayment.get(p.paymentId) !== 1);
    expect(
      notOnce.map(
        (p) =>
          `${p.paymentId}: ${runs
            .filter((r) => r.paymentId === p.paymentId)
            .map((r) => r.instance)
            .join('')}`,
      ),
    ).toEqual([]);
    expect(runs).toHaveLength(PAYMENTS);
    expect(failOnce.size).toBe(0);
    // The verify budget across both instances: one call per payment, whatever the duplicates
    // (they find it busy or done); two for a payment whose first handler run failed (released,
    // then verified again by the redelivery that ran it).
    const calls = payments.map((p) => [p.paymentId, verifyCalls(fake, p.paymentId)]);
    expect(calls).toEqual(payments.map((p) => [p.paymentId, failing.has(p.paymentId) ? 2 : 1]));
    // Both instances did work, and payments generated on one were confirmed on the other.
    const byInstance = new Set(runs.map((r) => r.instance));
    expect(byInstance).toEqual(new Set(['A', 'B']));
    expect(payments.some((p) => runs.find((r) => r.paymentId === p.paymentId)!.instance !== p.generatedOn)).toBe(true);
  });
});
