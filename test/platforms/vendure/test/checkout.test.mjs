// The plugin on a real Vendure (sql.js by default, VENDURE_DB=postgres for PostgreSQL): a
// storefront's checkout, the sandbox as the service, the webhook and the return.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminOrder, cartWithShipping, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 28211 : 28210;

describe(`Vendure checkout (${db})`, () => {
  let env;
  before(async () => {
    env = await startEnvironment({ db, port });
  });
  after(async () => {
    await env?.close();
  });

  it('link, pay on the sandbox, webhook: the order is PaymentSettled with one Settled payment of the owed amount', async () => {
    const cart = await cartWithShipping(env.shopClient);
    assert.equal(cart.currencyCode, 'TND');
    const link = await paymentLink(env.shopClient);
    // Default money precision 2: a hundredth of a dinar is 10 millimes.
    assert.equal(link.millimes, String(cart.totalWithTax * 10));
    assert.match(link.link, /^http:\/\/127\.0\.0\.1:\d+\//);
    const before = await adminOrder(env.adminClient, cart.id);
    assert.equal(before.payments.length, 0, 'the link alone adds no payment');
    await env.sandbox.completePayment(link.paymentId);
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.equal(order.payments.length, 1);
    assert.equal(order.payments[0].state, 'Settled');
    assert.equal(order.payments[0].transactionId, link.paymentId);
    assert.equal(order.payments[0].amount, cart.totalWithTax);
  });

  it('20 concurrent duplicate webhooks settle the order once; duplicates after it answer 200', async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    const url = env.sandbox.getPayment(link.paymentId)?.webhook;
    assert.ok(url, 'the payment carries the signed webhook URL');
    const body = JSON.stringify({ payment_id: link.paymentId, status: 'SUCCESS' });
    // The sandbox's own delivery and 20 more, all at once.
    const settling = env.sandbox.completePayment(link.paymentId);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status),
      ),
    );
    await settling;
    // While one delivery runs the order's settlement, the engine answers the others 409 with
    // Retry-After (busy: delivered again later), never an error, and never a second payment.
    assert.ok(
      answers.every((s) => s === 200 || s === 202 || s === 409),
      `answers: ${answers.join(',')}`,
    );
    // Once settled, duplicates (20 at once) are answered 200 and change nothing.
    const again = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status),
      ),
    );
    assert.deepEqual(again, Array(20).fill(200));
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.equal(order.payments.length, 1);
  });
});
