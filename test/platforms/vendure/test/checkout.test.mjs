// The plugin on a real Vendure (sql.js by default, VENDURE_DB=postgres for PostgreSQL): a
// storefront's checkout, the sandbox as the service, the webhook and the return.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminOrder, cartWithShipping, gql, paymentLink, snippet, startEnvironment } from './environment.mjs';

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
    // The card as the service's verify showed it, for the merchant (and the customer's order page).
    const { order: detailed } = await env.adminClient.query(
      gql(`query($id: ID!) { order(id: $id) { payments { metadata } } }`),
      { id: cart.id },
    );
    assert.deepEqual(
      {
        cardBrand: detailed.payments[0].metadata.public.cardBrand,
        maskedPan: detailed.payments[0].metadata.public.maskedPan,
        approvalCode: detailed.payments[0].metadata.public.approvalCode,
      },
      {
        cardBrand: 'VISA',
        maskedPan: '450921**1119',
        approvalCode: env.sandbox.getPayment(link.paymentId).approvalCode,
      },
    );
    // The service's payment id (24 hex digits) may hold twelve decimal digits in a row by chance.
    const card = { ...detailed.payments[0].metadata.public };
    delete card.paymentId;
    assert.doesNotMatch(
      JSON.stringify({ ...detailed.payments[0].metadata, public: card }),
      /\d{12,}/,
      'never a whole card number',
    );
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
  // Each way a payment ends unpaid, and how the plugin learns it: the decline's webhook, the
  // customer's return to the fail link (no webhook came), a cancellation of a held pre-authorization.
  for (const [ending, end] of [
    ['declined (its webhook)', (env, id) => env.sandbox.failPayment(id)],
    [
      'declined (no webhook: the return)',
      async (env, id) => {
        env.proxy.dropWebhooks = true;
        try {
          await env.sandbox.failPayment(id, { requireDelivery: false });
        } finally {
          env.proxy.dropWebhooks = false;
        }
        const { checkNestjsPaymentsReturn } = await env.shopClient.query(gql(snippet('return-mutation')), {
          paymentId: id,
        });
        assert.equal(checkNestjsPaymentsReturn.outcome, 'failed');
      },
    ],
    [
      'expired (the return)',
      async (env, id) => {
        await env.sandbox.expirePayment(id);
        const { checkNestjsPaymentsReturn } = await env.shopClient.query(gql(snippet('return-mutation')), {
          paymentId: id,
        });
        assert.equal(checkNestjsPaymentsReturn.outcome, 'expired');
      },
    ],
  ]) {
    it(`a payment ${ending}: the retry gets a new link, which the customer pays and which settles the order`, async () => {
      const cart = await cartWithShipping(env.shopClient);
      const first = await paymentLink(env.shopClient);
      await end(env, first.paymentId);
      const retry = await paymentLink(env.shopClient);
      assert.notEqual(retry.paymentId, first.paymentId, 'a payment that can no longer be paid is never handed back');
      assert.equal(env.sandbox.getPayment(retry.paymentId).state, 'pending');
      // The checkout page takes the click (a 409 "Payment not pending" for the failed one).
      await env.sandbox.completePayment(retry.paymentId);
      const order = await adminOrder(env.adminClient, cart.id);
      assert.equal(order.state, 'PaymentSettled');
      assert.deepEqual(
        order.payments.map((p) => [p.state, p.transactionId]),
        [['Settled', retry.paymentId]],
      );
    });
  }
});
