// The scenario every Nest compatibility app (test/compat/apps/nest*) runs; run.sh copies this
// file into each app's src/. An app's own main.ts keeps what is its own: its module-system and
// version checks, its HTTP adapter, its name; it hands them to `runNestScenario`.
//
// Starts a PaymentsSandbox, generates a payment, has the sandbox deliver the signed confirmation
// webhook to the app, then refunds it. Prints `<name>: ok (...)` and exits 0, or prints why and
// exits 1. No import.meta, __dirname or require here: this file is compiled as CommonJS (node16)
// and as an ES module (nodenext, bundler).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { DynamicModule, INestApplication, NestApplicationOptions } from '@nestjs/common';
import { PaymentsService } from 'nestjs-payments';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { Orders, ShopModule, type ShopOptions } from './shop.module.js';

const SECRET = 'compat-webhook-secret-7f3a9c1e5b2d4f60a8c7'; // at least 32 characters

export interface NestCompatApp<App extends INestApplication> {
  /** The app's folder name: it prints `<name>: ok (...)`. */
  readonly name: string;
  readonly amount: string;
  readonly developerTrackingId: string;
  /** How the shop configures the plugin and handles the confirmation. */
  readonly shop: Omit<ShopOptions, 'payments'>;
  /** Module-system and version checks, run before anything starts; returns what the ok line reports after node's version. */
  check(): string | Promise<string>;
  /** Creates the Nest application of `module` on the app's HTTP adapter; `server` is already listening. */
  create(module: DynamicModule, server: http.Server, options: NestApplicationOptions): Promise<App>;
  /** Once the application is initialised: makes it answer the requests `server` receives. */
  serve(app: App, server: http.Server): void | Promise<void>;
}

/** Everything comes from the app's own install (the packed tarball), nothing from elsewhere. */
export function assertOwnInstall(appDir: string, resolve: (id: string) => string): void {
  const own = path.join(appDir, 'node_modules') + path.sep;
  for (const id of ['nestjs-payments', 'nestjs-payments/testing', '@nestjs/core', '@nestjs/event-emitter']) {
    const file = resolve(id);
    assert.ok(file.startsWith(own), `${id} resolved outside this app: ${file}`);
  }
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

async function scenario<App extends INestApplication>(compat: NestCompatApp<App>): Promise<string> {
  const details = await compat.check();
  const sandbox = await PaymentsSandbox.start({ port: 0 });
  // The app's own HTTP server listens first (port 0), so the webhook URL can name its real port.
  const server = http.createServer();
  const url = await listen(server);
  const module = ShopModule.register({
    ...compat.shop,
    payments: () => sandbox.options({ webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET } }),
  });
  const app = await compat.create(module, server, { logger: ['error', 'warn'] });
  try {
    await app.init();
    await compat.serve(app, server);

    const payments = app.get(PaymentsService);
    const orders = app.get(Orders);
    const { paymentId, link } = await payments.generatePayment({
      amount: compat.amount,
      developerTrackingId: compat.developerTrackingId,
    });
    assert.ok(paymentId && link.startsWith(sandbox.url), `unexpected payment: ${paymentId} ${link}`);
    const webhookUrl = sandbox.getPayment(paymentId)?.webhook ?? '';
    assert.ok(
      webhookUrl.startsWith(`${url}/payments/webhook`),
      `the payment's webhook is not this app's signed URL: ${webhookUrl}`,
    );

    const settlement = await sandbox.completePayment(paymentId);
    assert.equal(settlement.webhook?.status, 200, `the sandbox's webhook got ${JSON.stringify(settlement.webhook)}`);
    assert.equal(settlement.webhook?.attempts, 1, `webhook needed ${settlement.webhook?.attempts} attempts`);
    assert.equal(orders.confirmed.length, 1, `@OnPaymentConfirmed ran ${orders.confirmed.length} times`);
    assert.equal(orders.confirmed[0].paymentId, paymentId);
    assert.equal(orders.confirmed[0].amount, compat.amount);
    assert.equal(orders.confirmed[0].developerTrackingId, compat.developerTrackingId);

    const refund = await payments.refundPayment(paymentId);
    assert.equal(refund.paymentId, paymentId);
    assert.equal(refund.status, 'success');
    assert.ok(refund.refundId, 'no refundId');
    assert.equal(sandbox.getPayment(paymentId)?.state, 'refunded');
    assert.equal(orders.refunded.length, 1, `payment.refunded ran ${orders.refunded.length} times`);
  } finally {
    await app.close();
    // Express leaves `server` open; Fastify, given it through `serverFactory`, has closed it.
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await sandbox.close();
  }
  return `node ${process.version}, ${details}`;
}

/** Runs the scenario for `compat`, prints its line, and checks that the process then ends by itself. */
export function runNestScenario<App extends INestApplication>(compat: NestCompatApp<App>): void {
  const { name } = compat;
  scenario(compat).then(
    (details) => {
      console.log(`${name}: ok (generate, webhook, refund) [${details}]`);
      // Everything is closed: the process must now end on its own. If a handle stays open, say so.
      setTimeout(() => {
        console.error(`${name}: FAIL: the process did not exit after everything was closed (open handles)`);
        process.exit(1);
      }, 5000).unref();
    },
    (error: unknown) => {
      console.error(`${name}: FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
}
