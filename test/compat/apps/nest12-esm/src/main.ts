// Compatibility app: Nest 12 in an ES-module project. Generates a payment on a PaymentsSandbox,
// has the sandbox deliver the signed confirmation webhook to this app, then refunds it.
// Prints `nest12-esm: ok (...)` and exits 0, or prints why and exits 1.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { PaymentsService } from 'nestjs-payments';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { Orders, ShopModule } from './shop.module.js';

const NAME = 'nest12-esm';
const SECRET = 'compat-webhook-secret-7f3a9c1e5b2d4f60a8c7'; // at least 32 characters
const AMOUNT = '12500';
const require = createRequire(import.meta.url);

function checkModuleSystem(): string {
  // This file really is an ES module, and the package came in through import.
  assert.equal(typeof module, 'undefined', 'not running as an ES module');
  // Everything comes from this app's own install (the packed tarball), nothing from elsewhere.
  const own = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'node_modules') + path.sep;
  for (const id of ['nestjs-payments', 'nestjs-payments/testing', '@nestjs/core', '@nestjs/event-emitter']) {
    const file = fileURLToPath(import.meta.resolve(id));
    assert.ok(file.startsWith(own), `${id} resolved outside this app: ${file}`);
  }
  // A CommonJS dependency of the app that require()s the package gets the same copy.
  assert.equal(require('nestjs-payments').PaymentsService, PaymentsService, 'require() gave another copy of the package');
  const nest = require('@nestjs/core/package.json').version as string;
  assert.match(nest, /^12\./, `expected @nestjs/core 12, got ${nest}`);
  return nest;
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

async function main(): Promise<string> {
  const nest = checkModuleSystem();
  const sandbox = await PaymentsSandbox.start({ port: 0 });
  // The app's own HTTP server listens first (port 0), so the webhook URL can name its real port.
  const server = http.createServer();
  const url = await listen(server);
  const app = await NestFactory.create(
    ShopModule.register(sandbox.options({ webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET } })),
    new ExpressAdapter(),
    { logger: ['error', 'warn'] },
  );
  try {
    await app.init();
    server.on('request', app.getHttpAdapter().getInstance());

    const payments = app.get(PaymentsService);
    const orders = app.get(Orders);
    const { paymentId, link } = await payments.generatePayment({ amount: AMOUNT, developerTrackingId: 'order-12' });
    assert.ok(paymentId && link.startsWith(sandbox.url), `unexpected payment: ${paymentId} ${link}`);
    const webhookUrl = sandbox.getPayment(paymentId)?.webhook ?? '';
    assert.ok(webhookUrl.startsWith(`${url}/payments/webhook?`), `the payment's webhook is not this app's signed URL: ${webhookUrl}`);

    const settlement = await sandbox.completePayment(paymentId);
    assert.equal(settlement.webhook?.status, 200, `the sandbox's webhook got ${JSON.stringify(settlement.webhook)}`);
    assert.equal(settlement.webhook?.attempts, 1, `webhook needed ${settlement.webhook?.attempts} attempts`);
    assert.equal(orders.confirmed.length, 1, `@OnPaymentConfirmed ran ${orders.confirmed.length} times`);
    assert.equal(orders.confirmed[0].paymentId, paymentId);
    assert.equal(orders.confirmed[0].amount, AMOUNT);
    assert.equal(orders.confirmed[0].developerTrackingId, 'order-12');

    const refund = await payments.refundPayment(paymentId);
    assert.equal(refund.paymentId, paymentId);
    assert.equal(refund.status, 'success');
    assert.ok(refund.refundId, 'no refundId');
    assert.equal(sandbox.getPayment(paymentId)?.state, 'refunded');
    assert.equal(orders.refunded.length, 1, `payment.refunded ran ${orders.refunded.length} times`);
  } finally {
    await app.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await sandbox.close();
  }
  return `node ${process.version}, @nestjs/core ${nest}, express adapter, esm (import)`;
}

main().then(
  (details) => {
    console.log(`${NAME}: ok (generate, webhook, refund) [${details}]`);
    // Everything is closed: the process must now end on its own. If a handle stays open, say so.
    setTimeout(() => {
      console.error(`${NAME}: FAIL: the process did not exit after everything was closed (open handles)`);
      process.exit(1);
    }, 5000).unref();
  },
  (error: unknown) => {
    console.error(`${NAME}: FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
