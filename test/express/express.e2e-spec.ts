import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPaymentsClient, createWebhookRouter, PaymentsClient, PaymentsValidationError, RefundNotAllowedError, type PaymentConfirmedEvent } from '../../lib/express/index.js';
import { WEBHOOK_TOKEN_PARAM } from '../../lib/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';

const SECRET = 'express-webhook-secret-0123456789abcdef';

describe('nestjs-payments/express', () => {
  let fake: FakeService;
  let client: PaymentsClient;
  let server: Server;
  let base: string;
  const events: PaymentConfirmedEvent[] = [];
  let failNext = false;
  let n = 0;

  beforeAll(async () => {
    fake = await FakeService.start();
    client = createPaymentsClient({
      publicKey: 'pk_x',
      privateKey: 'sk_x_hidden',
      baseUrl: fake.url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/hooks/pay', secret: SECRET, maxBodyBytes: 4096 },
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

  async function generate() {
    const paymentId = `pay_x${++n}`;
    fake.reply(PATHS.generate, OK.generate(paymentId));
    await client.generatePayment({ amount: '3000', developerTrackingId: `o${n}` });
    const url = new URL(JSON.parse(fake.requests.at(-1)!.body).webhook as string);
    expect(`${url.origin}${url.pathname}`).toBe('https://shop.example/hooks/pay');
    return { paymentId, token: url.searchParams.get(WEBHOOK_TOKEN_PARAM)! };
  }

  const hook = (token: string, extra = '') => `${base}?${WEBHOOK_TOKEN_PARAM}=${encodeURIComponent(token)}${extra}`;
  const post = (url: string, body: unknown, type = 'application/json') =>
    fetch(url, { method: 'POST', headers: { 'content-type': type }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  it('the client has the same operations, validation and errors', async () => {
    await expect(client.generatePayment({ amount: '1.5' })).rejects.toBeInstanceOf(PaymentsValidationError);
    fake.reply(PATHS.refund, { status: 400, body: { status: 'error', message: 'no', code: 'REFUND_NOT_ALLOWED' } });
    await expect(client.refundPayment('pay_1')).rejects.toBeInstanceOf(RefundNotAllowedError);
    fake.reply(PATHS.bindings, OK.bindings('c9'));
    await expect(client.listBindings('c9')).resolves.toHaveLength(1);
  });

  it('a genuine confirmation runs the callback once; a duplicate runs nothing', async () => {
    const { paymentId, token } = await generate();
    const first = await post(hook(token), { payment_id: paymentId });
    expect([first.status, await first.json()]).toEqual([200, { received: true }]);
    const again = await post(hook(token), { payment_id: paymentId });
    expect([again.status, await again.json()]).toEqual([200, { received: true, duplicate: true }]);
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ paymentId, amount: '3000', developerTrackingId: `o${n}` });
  });

  it('GET and form bodies work', async () => {
    const a = await generate();
    expect((await fetch(hook(a.token, `&payment_id=${a.paymentId}`))).status).toBe(200);
    const b = await generate();
    expect((await post(hook(b.token), `payment_id=${b.paymentId}`, 'application/x-www-form-urlencoded')).status).toBe(200);
    expect(events.at(-1)?.payload).toEqual({ payment_id: b.paymentId });
  });

  it('401 for missing, forged and foreign tokens; 413 over the limit; 400 for broken JSON; nothing emitted', async () => {
    const before = events.length;
    const a = await generate();
    const b = await generate();
    const answers = await Promise.all([
      post(base, { payment_id: a.paymentId }),
      post(hook(`${a.token.slice(0, -2)}AA`), { payment_id: a.paymentId }),
      post(hook(a.token), { payment_id: b.paymentId }),
      post(hook(a.token), { payment_id: a.paymentId, pad: 'x'.repeat(5000) }),
      post(hook(a.token), '{"payment_id":', 'application/json'),
    ]);
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 413, 400]);
    expect(await answers[3].json()).toEqual({ received: false, error: 'payload too large' });
    expect(events.length).toBe(before);
  });

  it('a failing callback answers 500 and the redelivery runs it; concurrent duplicates run it once', async () => {
    const { paymentId, token } = await generate();
    failNext = true;
    expect((await post(hook(token), { payment_id: paymentId })).status).toBe(500);
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(hook(token), { payment_id: paymentId })));
    expect(answers.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(events.filter((e) => e.paymentId === paymentId)).toHaveLength(1);
  });

  it('refuses a router without a callback', () => {
    expect(() => createWebhookRouter({ client } as never)).toThrow('onPaymentConfirmed must be a function');
  });
});
