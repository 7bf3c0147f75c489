// Compatibility app: plain Express, no Nest, ES-module JavaScript. A checkout route creates a
// payment with the client of `nestjs-payments/express` and redirects to it; the PaymentsSandbox
// delivers the signed confirmation to the webhook router; then the payment is refunded.
// Prints `express5: ok (...)` and exits 0, or prints why and exits 1.
// The express4 app is this very file (a link) with Express 4: the name and the Express major
// come from the package.json beside it.
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { createPaymentsClient, createWebhookRouter, PaymentsError } from 'nestjs-payments/express';
import { PaymentsSandbox } from 'nestjs-payments/testing';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const manifest = require('./package.json');
const NAME = manifest.name.replace(/^compat-/, ''); // express5, express4
const EXPRESS_MAJOR = /\d+/.exec(manifest.dependencies.express)[0];
const SECRET = 'compat-webhook-secret-7f3a9c1e5b2d4f60a8c7'; // at least 32 characters
const AMOUNT = '30000';

function checkModuleSystem() {
  assert.equal(typeof module, 'undefined', 'not running as an ES module');
  for (const id of ['nestjs-payments/express', 'nestjs-payments/testing', 'express']) {
    const file = fileURLToPath(import.meta.resolve(id));
    assert.ok(file.startsWith(path.join(HERE, 'node_modules') + path.sep), `${id} resolved outside this app: ${file}`);
  }
  // A CommonJS dependency that require()s the package gets the same copy as import.
  assert.equal(
    require('nestjs-payments/express').createPaymentsClient,
    createPaymentsClient,
    'require() gave another copy',
  );
  // Nest is not installed (see .npmrc), so the Express entry above loaded without it.
  assert.throws(
    () => require.resolve('@nestjs/core'),
    'Nest is installed, so this app would not prove that Express needs none',
  );
  // The Nest entry, without Nest: a one-line error naming the missing packages (require() here,
  // import in main()).
  assert.throws(() => require('nestjs-payments'), checkNestEntryError);
  // The PostgreSQL entry without pg (a peer, so not installed here either): one line naming it, at
  // import rather than at the store's first operation.
  assert.throws(
    () => require.resolve('pg'),
    'pg is installed, so this app would not prove the PostgreSQL entry names it',
  );
  assert.throws(
    () => require('nestjs-payments/postgres'),
    (error) =>
      /^nestjs-payments\/postgres needs pg, not installed: npm install pg$/.test(error.message) ||
      assert.fail(`not the one-line error: ${error.message}`),
  );
  const version = require('express/package.json').version;
  assert.equal(version.split('.')[0], EXPRESS_MAJOR, `expected express ${EXPRESS_MAJOR}, got ${version}`);
  return version;
}

/** The error of loading `nestjs-payments` (the Nest entry) where Nest is not installed. */
function checkNestEntryError(error) {
  assert.ok(error instanceof Error, `not an Error: ${error}`);
  assert.match(
    error.message,
    /^nestjs-payments needs (?=.*@nestjs\/common)(?=.*@nestjs\/core).*, not installed: npm install /,
  );
  assert.ok(!error.message.includes('\n'), `the error is not one line: ${error.message}`);
  return true;
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

async function main() {
  const version = checkModuleSystem();
  const nestEntry = await import('nestjs-payments').then(
    () => undefined,
    (error) => error,
  );
  assert.ok(nestEntry, 'import("nestjs-payments") loaded without Nest installed');
  checkNestEntryError(nestEntry);
  const sandbox = await PaymentsSandbox.start({ port: 0 });
  const app = express();
  app.use(express.json()); // an app-wide body parser: the webhook router must cope with parsed bodies
  const server = http.createServer(app);
  const url = await listen(server);
  const payments = createPaymentsClient(
    sandbox.options({ webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET } }),
  );

  const confirmed = [];
  app.use(
    '/payments/webhook',
    createWebhookRouter({
      client: payments,
      onPaymentConfirmed: async (event) => {
        await new Promise((resolve) => setTimeout(resolve, 20)); // an awaited handler, like a database write
        confirmed.push(event);
      },
    }),
  );
  app.post('/orders/:id/pay', async (req, res) => {
    const { link } = await payments.generatePayment({ amount: AMOUNT, developerTrackingId: req.params.id });
    res.redirect(303, link);
  });

  try {
    // The customer checks out: the app answers with a redirect to the payment page.
    const checkout = await fetch(`${url}/orders/order-x5/pay`, { method: 'POST', redirect: 'manual' });
    assert.equal(checkout.status, 303, `checkout answered ${checkout.status}: ${await checkout.text()}`);
    const link = checkout.headers.get('location') ?? '';
    const payment = sandbox.payments().find((p) => p.link === link);
    assert.ok(payment, `the redirect does not lead to a sandbox payment: ${link}`);
    const { paymentId } = payment;
    assert.equal(payment.amount, AMOUNT);
    assert.ok(
      payment.webhook?.startsWith(`${url}/payments/webhook`),
      `the payment's webhook is not this app's signed URL: ${payment.webhook}`,
    );

    const settlement = await sandbox.completePayment(paymentId);
    assert.equal(settlement.webhook?.status, 200, `the sandbox's webhook got ${JSON.stringify(settlement.webhook)}`);
    assert.equal(settlement.webhook?.attempts, 1, `webhook needed ${settlement.webhook?.attempts} attempts`);
    assert.equal(confirmed.length, 1, `onPaymentConfirmed ran ${confirmed.length} times`);
    assert.equal(confirmed[0].paymentId, paymentId);
    assert.equal(confirmed[0].amount, AMOUNT);
    assert.equal(confirmed[0].developerTrackingId, 'order-x5');

    const refund = await payments.refundPayment(paymentId);
    assert.equal(refund.paymentId, paymentId);
    assert.equal(refund.status, 'success');
    assert.ok(refund.refundId, 'no refundId');
    assert.equal(sandbox.getPayment(paymentId)?.state, 'refunded');

    // A second refund is refused with the package's own error class.
    const again = await payments.refundPayment(paymentId).then(
      () => null,
      (error) => error,
    );
    assert.ok(again instanceof PaymentsError, `a second refund gave ${again}`);
  } finally {
    await payments.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(() => resolve()));
    await sandbox.close();
  }
  return `node ${process.version}, express ${version}, no Nest installed (the Nest entry says so in one line), esm (import)`;
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
  (error) => {
    console.error(`${NAME}: FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
