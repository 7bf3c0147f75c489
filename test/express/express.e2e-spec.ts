import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createPaymentsClient,
  createWebhookRouter,
  PaymentsClient,
  PaymentsValidationError,
  RefundNotAllowedError,
  type PaymentConfirmedEvent,
} from '../../lib/express/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import { postChunked, quietLogger, tokenOf, verifyCount } from '../support/outcome-kit.js';
import { AheadClock } from '../support/clock-ahead.js';
import { forgeSignature } from '../support/tokens.js';

const SECRET = 'express-webhook-secret-0123456789abcdef';

describe('nestjs-payments/express', () => {
  let fake: FakeService;
  let client: PaymentsClient;
  let server: Server;
  let base: string;
  const events: PaymentConfirmedEvent[] = [];
  let failNext = false;
  let n = 0;
  const clock = new AheadClock();

  beforeAll(async () => {
    fake = await FakeService.start();
    client = createPaymentsClient({
      publicKey: 'pk_x',
      privateKey: 'sk_x_hidden',
      baseUrl: fake.url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/hooks/pay', secret: SECRET, maxBodyBytes: 4096 },
      logger: quietLogger(),
      clock,
    });
    const app = express();
    // An app-wide JSON parser with another limit must not change the router's own rules.
    app.use(express.json({ limit: '5mb' }));
    app.use(
      '/hooks/pay',
      createWebhookRouter({
        client,
        onPaymentConfirmed: async (event) => {
          await new Promise((r) => setTimeout(r, 20));
          if (failNext) {
            failNext = false;
            throw new Error('handler down');
          }
          events.push(event);
        },
      }),
    );
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/pay`;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await client.close();
    await fake.close();
  });

  /** A payment generated for 3000 millimes with tracking id o<n>; the service (the fake) verifies it as paid, as often as asked. */
  async function generate() {
    const paymentId = `pay_x${++n}`;
    fake.reply(PATHS.generate, OK.generate(paymentId));
    await client.generatePayment({ amount: '3000', developerTrackingId: `o${n}` });
    const webhook = JSON.parse(fake.requests.at(-1)!.body).webhook as string;
    const token = tokenOf(webhook);
    // The token is the last path segment of the public URL; no query of ours.
    expect(webhook).toBe(`https://shop.example/hooks/pay/${token}`);
    fake.always(`/api/v2/verify_payment/${paymentId}`, { status: 200, body: verifyAnswerOf('SUCCESS', n) });
    return { paymentId, token, tracking: `o${n}` };
  }
  const verifyAnswerOf = (status: string, i: number) => ({
    success: true,
    result: { type: 'card', amount: 3000, status, developer_tracking_id: `o${i}` },
  });

  const hook = (token: string, extra = '') =>
    `${base}/${encodeURIComponent(token)}${extra ? `?${extra.replace(/^&/, '')}` : ''}`;
  const post = (url: string, body: unknown, type = 'application/json') =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': type },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('the client has the same operations, validation and errors', async () => {
    await expect(client.generatePayment({ amount: '1.5' })).rejects.toBeInstanceOf(PaymentsValidationError);
    fake.reply(PATHS.refund, { status: 400, body: { status: 'error', message: 'no', code: 'REFUND_NOT_ALLOWED' } });
    await expect(client.refundPayment('pay_1')).rejects.toBeInstanceOf(RefundNotAllowedError);
    fake.reply(PATHS.bindings, OK.bindings('c9'));
    await expect(client.listBindings('c9')).resolves.toHaveLength(1);
  });

  // New semantics: a delivery is only a hint; the callback runs once the service's verify answer
  // says SUCCESS (with the amount and tracking id that were sent), and a duplicate costs no verify call.
  it('a genuine delivery, verified as SUCCESS, runs the callback once; a duplicate runs nothing and costs no verify call', async () => {
    const { paymentId, token, tracking } = await generate();
    const first = await post(hook(token), { payment_id: paymentId });
    expect([first.status, await first.json()]).toEqual([200, { received: true }]);
    expect(verifyCount(fake, paymentId)).toBe(1);
    const again = await post(hook(token), { payment_id: paymentId });
    expect([again.status, await again.json()]).toEqual([200, { received: true, duplicate: true }]);
    expect(verifyCount(fake, paymentId)).toBe(1);
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      paymentId,
      amount: '3000',
      developerTrackingId: tracking,
      status: 'SUCCESS',
      source: 'webhook',
    });
    await expect(client.getOutcome(paymentId)).resolves.toMatchObject({
      outcome: 'confirmed',
      handlers: 'succeeded',
      source: 'webhook',
      attempts: 1,
    });
  });

  it('GET and form bodies work', async () => {
    const a = await generate();
    expect((await fetch(hook(a.token, `&payment_id=${a.paymentId}`))).status).toBe(200);
    const b = await generate();
    expect((await post(hook(b.token), `payment_id=${b.paymentId}`, 'application/x-www-form-urlencoded')).status).toBe(
      200,
    );
    // Events no longer carry the delivery's payload: they carry what the service verified.
    expect(events.slice(-2).map((e) => [e.paymentId, e.status])).toEqual([
      [a.paymentId, 'SUCCESS'],
      [b.paymentId, 'SUCCESS'],
    ]);
  });

  it('a body claiming success is not proof: a delivery the service verifies as PENDING answers 202 and runs nothing', async () => {
    const { paymentId, token } = await generate();
    fake.reply(`/api/v2/verify_payment/${paymentId}`, { status: 200, body: verifyAnswerOf('PENDING', n) });
    const res = await post(hook(token), { payment_id: paymentId, status: 'SUCCESS', amount: 3000 });
    expect([res.status, await res.json()]).toEqual([202, { received: true, pending: true }]);
    expect(events.some((e) => e.paymentId === paymentId)).toBe(false);
    // The service's next answer (the fake's default, SUCCESS) settles it on the redelivery, once the
    // verify budget's interval for a payment still pending passed (webhook.unsignedIntervalSecs).
    clock.ahead(31_000);
    try {
      expect((await post(hook(token), { payment_id: paymentId })).status).toBe(200);
    } finally {
      clock.real();
    }
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
  });

  it('401 for missing, forged and foreign tokens; 413 over the limit; 400 for broken JSON; nothing emitted, no verify call', async () => {
    const before = events.length;
    const a = await generate();
    const b = await generate();
    const verifiesBefore = fake.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/')).length;
    const answers = await Promise.all([
      post(base, { payment_id: a.paymentId }),
      post(hook(forgeSignature(a.token)), { payment_id: a.paymentId }),
      post(hook(a.token), { payment_id: b.paymentId }),
      post(hook(a.token), { payment_id: a.paymentId, pad: 'x'.repeat(5000) }),
      post(hook(a.token), '{"payment_id":', 'application/json'),
    ]);
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 413, 400]);
    expect(await answers[3].json()).toEqual({ received: false, error: 'payload too large' });
    expect(events.length).toBe(before);
    expect(fake.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/')).length).toBe(verifiesBefore);
  });

  it('413 for chunked bodies over maxBodyBytes (no Content-Length), whatever the type, also past an app-wide JSON parser; no verify call', async () => {
    const { paymentId, token } = await generate();
    for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const res = await postChunked(hook(token), 6_000, { contentType, paymentId });
      expect([contentType, res.status, res.chunked, JSON.parse(res.body)]).toEqual([
        contentType,
        413,
        true,
        { received: false, error: expect.stringContaining('payload too large') },
      ]);
    }
    expect(verifyCount(fake, paymentId)).toBe(0);
    // Under the limit, a chunked delivery is an ordinary one.
    expect((await postChunked(hook(token), 1_000, { contentType: 'application/json', paymentId })).status).toBe(200);
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
  });

  it('a failing callback answers 500 and the redelivery runs it; concurrent duplicates run it once', async () => {
    const { paymentId, token } = await generate();
    failNext = true;
    expect((await post(hook(token), { payment_id: paymentId })).status).toBe(500);
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(hook(token), { payment_id: paymentId })));
    expect(answers.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
    // Busy (409) and duplicate deliveries cost no verify call: one for the failed attempt, one for the run that succeeded.
    expect(verifyCount(fake, paymentId)).toBe(2);
  });

  it('refuses a router without a callback', () => {
    expect(() => createWebhookRouter({ client } as never)).toThrow('onPaymentConfirmed must be a function');
  });
});
