// The scenario of the e2e compatibility apps (test/compat/apps/*, those with a test/): run.sh
// copies this file into each one's test/, where its e2e spec (Jest, Vitest...) calls it. Written
// with the package's public API only (generatePayment, @OnPaymentConfirmed, refundPayment,
// PaymentsSandbox.start, completePayment, close), so it holds whatever happens between the
// sandbox completing a payment and the handler running (webhook, verify call...): it waits for
// the handler instead of assuming when it runs. No relative imports, no import.meta, __dirname
// or require: compiled as CommonJS (ts-jest) and as an ES module (Vitest).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { INestApplication, Type } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { PaymentsService, type PaymentConfirmedEvent } from 'nestjs-payments';
import { PaymentsSandbox } from 'nestjs-payments/testing';

const PUBLIC_KEY = 'compat_e2e_public_key';
const PRIVATE_KEY = 'compat_e2e_private_key';
const SECRET = 'compat-e2e-webhook-secret-3c9e1f7a5b2d8e40'; // at least 32 characters
const AMOUNT = '42500';
const ORDER = 'order-e2e-1';

export interface PaymentsScenario {
  /** The app's root module (its PaymentsModule reads the PAYMENTS_* variables). */
  readonly app: Type<unknown>;
  /** The app's provider with the `@OnPaymentConfirmed()` handler; `paid` lists the events it got. */
  readonly orders: Type<{ readonly paid: readonly PaymentConfirmedEvent[] }>;
  /** What ran the test (runner, module system, versions), for the app's ok line. */
  readonly runner: string;
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

async function until(what: string, done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Starts a sandbox and the app (on its own HTTP server, so the webhook URL names its real port),
 * creates a payment through PaymentsService, has the sandbox complete it, waits for the
 * `@OnPaymentConfirmed()` handler, refunds the payment, and closes everything. On success, writes
 * `.compat-result.json` in the current directory for the app's report.
 */
export async function runPaymentsScenario({
  app: appModule,
  orders: ordersClass,
  runner,
}: PaymentsScenario): Promise<void> {
  const sandbox = await PaymentsSandbox.start({ publicKey: PUBLIC_KEY, privateKey: PRIVATE_KEY, port: 0 });
  const server = http.createServer();
  let app: INestApplication | undefined;
  try {
    const url = await listen(server);
    Object.assign(process.env, {
      PAYMENTS_PUBLIC_KEY: PUBLIC_KEY,
      PAYMENTS_PRIVATE_KEY: PRIVATE_KEY,
      PAYMENTS_BASE_URL: sandbox.url,
      PAYMENTS_WEBHOOK_PUBLIC_URL: `${url}/payments/webhook`,
      PAYMENTS_WEBHOOK_SECRET: SECRET,
    });
    const moduleRef = await Test.createTestingModule({ imports: [appModule] }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: ['error', 'warn'] });
    await app.init();
    server.on('request', app.getHttpAdapter().getInstance() as http.RequestListener);

    const payments = app.get(PaymentsService);
    const orders = app.get(ordersClass);
    const { paymentId, link } = await payments.generatePayment({ amount: AMOUNT, developerTrackingId: ORDER });
    assert.ok(paymentId, 'no paymentId');
    assert.ok(link.startsWith(sandbox.url), `the payment link is not the sandbox's: ${link}`);

    // The customer pays; the handler runs once the plugin has the service's confirmation.
    await sandbox.completePayment(paymentId);
    await until('@OnPaymentConfirmed()', () => orders.paid.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 100)); // a duplicate would show up by now
    assert.equal(orders.paid.length, 1, `@OnPaymentConfirmed() ran ${orders.paid.length} times`);
    assert.equal(orders.paid[0].paymentId, paymentId);
    assert.equal(orders.paid[0].amount, AMOUNT);
    assert.equal(orders.paid[0].developerTrackingId, ORDER);

    const refund = await payments.refundPayment(paymentId);
    assert.equal(refund.paymentId, paymentId);
    assert.ok(refund.refundId, 'no refundId');
  } finally {
    await app?.close();
    server.closeAllConnections();
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await sandbox.close();
  }
  writeFileSync(
    path.join(process.cwd(), '.compat-result.json'),
    JSON.stringify({ details: `node ${process.version}, ${runner}` }),
  );
}
