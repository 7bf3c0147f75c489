// docs/troubleshooting.md quotes what a user sees; this test makes each mistake for real (against
// the sandbox, a closed port, a Redis that is not there) and checks that every message the guide
// quotes is one the plugin writes, and every message made here is quoted: the guide cannot drift
// from the code. In the guide, `<...>` stands for what varies (a payment id, a cause).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { PaymentsModule, PaymentsService, paymentsOptionsFromConfig } from '../../lib/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

const GUIDE = readFileSync(join(import.meta.dirname, '../../docs/troubleshooting.md'), 'utf8');
const SECRET = 'troubleshooting-webhook-secret-0123456789';
const LINKS = { successLink: 'https://shop.example.com/ok', failLink: 'https://shop.example.com/ko' };

/** The ```text blocks of the guide, as patterns: `<...>` matches anything. */
const QUOTED = [...GUIDE.matchAll(/^```text\n([\s\S]*?)\n^```$/gm)].map((m) => m[1]);
const patternOf = (quote: string): RegExp =>
  new RegExp(
    `^${quote
      .split(/<[^>]+>/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.+?')}$`,
  );

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : `not an error: ${String(error)}`;
const thrownBy = (f: () => unknown): string => {
  try {
    f();
  } catch (error) {
    return messageOf(error);
  }
  return 'nothing thrown';
};

let sandbox: PaymentsSandbox;
const clients: PaymentsClient[] = [];
const client = (options: Partial<Parameters<typeof createPaymentsClient>[0]> = {}): PaymentsClient => {
  const created = createPaymentsClient({ ...sandbox.options(), reconciliation: { enabled: false }, ...options });
  clients.push(created);
  return created;
};

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});

afterAll(async () => {
  for (const created of clients) await created.close();
  await sandbox.close();
});

describe('docs/troubleshooting.md', () => {
  /** Messages made here; each must match one quoted block. */
  const made: string[] = [];
  /** Webhook answers made here, as JSON; each must appear in the guide. */
  const answers: string[] = [];

  it('quotes the errors of wrong keys, missing options, a short or missing secret, an unreachable service, and dinars', async () => {
    made.push(
      messageOf(
        await client({ privateKey: 'not-the-key' })
          .generatePayment({ amount: '1000', ...LINKS })
          .catch((e: unknown) => e),
      ),
    );
    made.push(thrownBy(() => paymentsOptionsFromConfig({ get: () => undefined })));
    const base = { publicKey: 'pk', privateKey: 'sk', baseUrl: 'https://payments.example.com' };
    made.push(
      thrownBy(() =>
        client({ ...base, webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: 'too-short' } }),
      ),
    );
    made.push(thrownBy(() => client({ ...base, webhook: { publicUrl: 'https://shop.example.com/payments/webhook' } })));
    const env: Record<string, string> = {
      PAYMENTS_PUBLIC_KEY: 'pk',
      PAYMENTS_PRIVATE_KEY: 'sk',
      PAYMENTS_BASE_URL: 'https://payments.example.com',
      PAYMENTS_WEBHOOK_PUBLIC_URL: 'https://shop.example.com/payments/webhook',
      PAYMENTS_WEBHOOK_SECRET: 'too-short',
    };
    made.push(thrownBy(() => paymentsOptionsFromConfig({ get: (key) => env[key] })));
    const unreachable = client({ baseUrl: `http://127.0.0.1:${await closedPort()}`, maxRetries: 0 });
    made.push(messageOf(await unreachable.generatePayment({ amount: '1000', ...LINKS }).catch((e: unknown) => e)));
    made.push(
      messageOf(
        await client()
          .generatePayment({ amount: '12.5', ...LINKS })
          .catch((e: unknown) => e),
      ),
    );
  });

  it('quotes what an unreachable webhook URL, a proxy and a missing handler make the plugin and the sandbox say', async () => {
    // The service cannot reach the webhook URL.
    const lost = client({
      webhook: { publicUrl: `http://127.0.0.1:${await closedPort()}/payments/webhook`, secret: SECRET },
    });
    const { paymentId: lostId } = await lost.generatePayment({ amount: '1000', ...LINKS });
    made.push(messageOf(await sandbox.completePayment(lostId).catch((e: unknown) => e)));

    // What the route answers: a forged token, a token without a payment id, another payment's token, a large body.
    const signed = client({ webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: SECRET } });
    const first = await signed.generatePayment({ amount: '1000', ...LINKS });
    const second = await signed.generatePayment({ amount: '2000', ...LINKS });
    const tokenOf = (paymentId: string) => new URL(sandbox.getPayment(paymentId)!.webhook!).pathname.split('/').pop()!;
    const answer = async (request: Parameters<PaymentsClient['webhooks']['handle']>[0], on = signed) => {
      const { status, body } = await on.webhooks.handle(request);
      answers.push(JSON.stringify(body));
      return status;
    };
    expect(await answer({ query: {}, body: { payment_id: first.paymentId }, pathToken: 'forged.token' })).toBe(401);
    expect(await answer({ query: {}, body: {}, pathToken: tokenOf(first.paymentId) })).toBe(400);
    expect(second.paymentId).not.toBe(first.paymentId);
    expect(await answer({ query: {}, body: {}, contentLength: '10000000', pathToken: tokenOf(first.paymentId) })).toBe(
      413,
    );
    expect(await answer({ query: {}, body: { payment_id: first.paymentId } }, client())).toBe(404);

    // A handler that throws: the webhook answers 500.
    const app = express();
    const failing = client({ webhook: { publicUrl: 'http://127.0.0.1:1/payments/webhook', secret: SECRET } });
    app.use(
      '/payments/webhook',
      createWebhookRouter({
        client: failing,
        onPaymentConfirmed: () => Promise.reject(new Error('orders database down')),
      }),
    );
    const server: Server = app.listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { paymentId } = await failing.generatePayment({ amount: '3000', ...LINKS });
      await sandbox.completePayment(paymentId, { requireDelivery: false });
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/payments/webhook/${tokenOf(paymentId)}`;
      const delivery = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payment_id: paymentId }),
      });
      expect(delivery.status).toBe(500);
      answers.push(JSON.stringify(await delivery.json()));
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }

    // No payment.confirmed handler at all: never marked done, and the record says why, in Nest
    // (a module with no @OnPaymentConfirmed provider) and on a client whose router was never made.
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot(sandbox.options({ reconciliation: { enabled: false } }))],
    }).compile();
    const nest = moduleRef.createNestApplication({ logger: false });
    await nest.init();
    try {
      for (const payments of [nest.get(PaymentsService), client()]) {
        const { paymentId } = await payments.generatePayment({ amount: '4000', ...LINKS });
        await sandbox.completePayment(paymentId);
        expect(await payments.reconcilePayment(paymentId)).toMatchObject({ outcome: 'confirmed', handled: false });
        const { lastError } = (await payments.getOutcome(paymentId)) ?? {};
        expect(GUIDE).toContain(`\`${lastError}\``);
      }
    } finally {
      await nest.close();
    }
  });

  it('quotes the start-up warning of a public URL missing the global prefix, and the 421 of a misrouted token', async () => {
    const warnings: string[] = [];
    const logger = {
      log: () => undefined,
      error: () => undefined,
      warn: (message: string) => void warnings.push(message),
    };
    const moduleRef = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot(
          sandbox.options({
            logger,
            reconciliation: { enabled: false },
            webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: SECRET },
          }),
        ),
      ],
    }).compile();
    const nest = moduleRef.createNestApplication({
      logger: { log() {}, error() {}, warn: (message: string) => void warnings.push(message) },
    });
    nest.setGlobalPrefix('api');
    await nest.init();
    await nest.close();
    made.push(warnings.find((w) => w.startsWith('webhook.publicUrl of'))!);

    // The default account's token on the outlet's route (one secret for both, as the guide's snippet has it).
    const shop = client({ webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: SECRET } });
    const outlet = client({
      name: 'outlet',
      logger,
      webhook: {
        path: 'payments/outlet/webhook',
        publicUrl: 'https://shop.example.com/payments/outlet/webhook',
        secret: SECRET,
      },
    });
    const { paymentId } = await shop.generatePayment({ amount: '1000', ...LINKS });
    const token = new URL(sandbox.getPayment(paymentId)!.webhook!).pathname.split('/').pop()!;
    const { status, body } = await outlet.webhooks.handle({
      query: {},
      body: { payment_id: paymentId },
      pathToken: token,
    });
    expect(status).toBe(421);
    answers.push(JSON.stringify(body));
    made.push(warnings.find((w) => w.startsWith('webhook: refused'))!);
  });

  it('quotes what a store that is down makes the plugin log and throw', async () => {
    const logged: string[] = [];
    const warned: string[] = [];
    const logger = {
      log: () => undefined,
      warn: (message: string) => void warned.push(message),
      error: (message: string) => void logged.push(message),
    };
    const store = new RedisPaymentsStore(`redis://127.0.0.1:${await closedPort()}`, {
      operationTimeoutMs: 300,
      logger,
    });
    const down = client({
      store,
      logger,
      webhook: { publicUrl: 'https://shop.example.com/payments/webhook', secret: SECRET },
    });
    try {
      // The payment is created at the service: its link is answered, the store write retried.
      const created = await down.generatePayment({ amount: '1000', ...LINKS });
      made.push(warned.find((line) => line.startsWith(`payment ${created.paymentId} was created`))!);
      const { paymentId } = await client().generatePayment({ amount: '1000', ...LINKS });
      made.push(messageOf(await down.reconcilePayment(paymentId).catch((e: unknown) => e)));
      made.push(logged.find((line) => line.startsWith('Redis store connection'))!);
      // Closed before the store came back: the payment is named, with what to do.
      await down.close();
      made.push(logged.find((line) => line.startsWith(`payment ${created.paymentId} was created`))!);
    } finally {
      await down.close();
      await store.close();
    }
  });

  it('quotes every message above, and nothing the plugin does not write', () => {
    const patterns = QUOTED.filter((quote) => !quote.startsWith('{')).map(patternOf);
    expect(made.filter((message) => !patterns.some((pattern) => pattern.test(message)))).toEqual([]);
    expect(
      QUOTED.filter((quote) => !quote.startsWith('{') && !made.some((message) => patternOf(quote).test(message))),
    ).toEqual([]);
    // The webhook answers are quoted as JSON, in code spans or blocks.
    expect(answers.filter((body) => !GUIDE.includes(body))).toEqual([]);
    const quotedAnswers = [...GUIDE.matchAll(/\{"received":false,"error":"[^"]+"\}/g)].map((m) => m[0]);
    expect(quotedAnswers.filter((body) => !answers.includes(body))).toEqual([]);
  });
});
