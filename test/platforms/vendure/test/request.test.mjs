// The per-order request hook (`paymentRequest`), with docs/vendure.md's configuration as printed:
// the link's request carries the hook's return URLs and session length; the amount and tracking id
// stay the plugin's; a field the hook may not set is refused in plain words.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NestjsPaymentsPlugin } from 'nestjs-payments/vendure';
import { adminOrder, cartWithShipping, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 27250 : 27240;

describe(`Vendure's per-order request (${db})`, () => {
  let env;
  before(async () => {
    env = await startEnvironment({ db, port, proxyPort: port + 1, configSnippet: 'vendure-order-request' });
  });
  after(async () => {
    await env?.close();
  });

  it("the order's link carries the hook's return URLs and session length; the amount stays the plugin's", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    const sent = env.sandbox.getPayment(link.paymentId);
    assert.equal(sent.successLink, `${process.env.SHOP_URL}/checkout/return?order=${cart.code}`);
    assert.equal(sent.failLink, `${process.env.SHOP_URL}/checkout?order=${cart.code}`);
    assert.equal(sent.sessionTimeoutSecs, 900);
    assert.equal(sent.amount, link.millimes);
    assert.equal(sent.developerTrackingId, cart.code);
    await env.sandbox.completePayment(link.paymentId);
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentSettled');
  });

  it('a hook that sets the amount is refused, naming the field', async () => {
    // The options object the plugin's service holds (its hook read at each link).
    const options = NestjsPaymentsPlugin.options;
    const guide = options.paymentRequest;
    options.paymentRequest = () => ({ amount: '1' });
    try {
      await cartWithShipping(env.shopClient);
      await assert.rejects(
        paymentLink(env.shopClient),
        /paymentRequest may set successLink.* only; it returned amount/,
      );
    } finally {
      options.paymentRequest = guide;
    }
  });
});
