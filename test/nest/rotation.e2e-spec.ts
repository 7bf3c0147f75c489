// Rotating webhook.secret in a rolling deploy loses no payment: mid-deploy, one instance mints
// with the old secret (the new one already accepted as previous), the other with the new one (the
// old one accepted as previous); a load balancer sends each delivery to either; they share a
// Redis store. Every payment is confirmed by its webhook, once; a token signed by neither secret
// is refused.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, type PaymentConfirmedEvent } from '../../lib/index.js';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';

const OLD = 'whsec_old_secret_before_the_rotation_0001';
const NEW = 'whsec_new_secret_after_the_rotation_00002';
const NEITHER = 'whsec_a_secret_neither_instance_knows_0003';
const PAYMENTS = 8;

@Injectable()
class Ledger {
  readonly confirmed: string[] = [];
  @OnPaymentConfirmed()
  onConfirmed(event: PaymentConfirmedEvent): void {
    this.confirmed.push(event.paymentId);
  }
}

/** A round-robin load balancer on loopback: delivery n goes to instance n mod 2. */
function balancer(targets: () => string[]): Promise<Server> {
  let n = 0;
  const server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', targets()[n++ % targets().length]);
    const upstream = request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const describeRedis = describeWithService(await redisAvailable(), `no Redis at ${REDIS_URL}`);

describeRedis('a webhook secret rotated in a rolling deploy', () => {
  let sandbox: PaymentsSandbox;
  let lb: Server;
  let instances: string[] = [];
  const apps: INestApplication[] = [];
  const stores: RedisPaymentsStore[] = [];
  const keyPrefix = `test-rotation-${process.pid}-${Date.now()}:`;

  async function instance(secret: string, previousSecrets: string[], publicUrl: string): Promise<INestApplication> {
    // One store shared by both instances: the same Redis, the same prefix.
    const store = new RedisPaymentsStore(REDIS_URL, { keyPrefix });
    stores.push(store);
    const moduleRef = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot({
          ...sandbox.options(),
          store,
          reconciliation: { enabled: false },
          webhook: { publicUrl, secret, previousSecrets },
        }),
      ],
      providers: [Ledger],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    apps.push(app);
    return app;
  }

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
    lb = await balancer(() => instances);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const store of stores) await store.close();
    lb.close();
    await sandbox.close();
  });

  it('confirms every payment by webhook, once, whichever instance minted and whichever receives; refuses a token of neither secret', async () => {
    const publicUrl = `http://127.0.0.1:${(lb.address() as AddressInfo).port}/payments/webhook`;
    // Mid-deploy: one instance still mints with the old secret (the new one already accepted),
    // the other already mints with the new one (the old one still accepted).
    const notYet = await instance(OLD, [NEW], publicUrl);
    const already = await instance(NEW, [OLD], publicUrl);
    instances = await Promise.all(
      [notYet, already].map(async (app) =>
        (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'),
      ),
    );

    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      // Minted A, A, B, B, ... and delivered A, B, A, B, ...: every pair of minter and receiver.
      const minter = (i >> 1) % 2 === 0 ? notYet : already;
      ids.push(
        (
          await minter
            .get(PaymentsService)
            .generatePayment({ amount: String(1000 + i), developerTrackingId: `order-${i}` })
        ).paymentId,
      );
    }
    const statuses = [];
    for (const id of ids) statuses.push((await sandbox.completePayment(id, { requireDelivery: false })).lastStatus);
    expect(statuses).toEqual(ids.map(() => 200));
    const confirmed = [...notYet.get(Ledger).confirmed, ...already.get(Ledger).confirmed].sort();
    expect(confirmed).toEqual([...ids].sort());

    const { token } = new WebhookTokenSigner(NEITHER).issue('1000', undefined, 60_000);
    for (const base of instances) {
      const answer = await fetch(`${base}/payments/webhook/${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payment_id: ids[0] }),
      });
      expect(answer.status).toBe(401);
    }
  });
});
