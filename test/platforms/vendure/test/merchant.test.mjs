// What a merchant's Vendure sees around the plugin: Vendure's own subscribers (emails, search)
// run for a settled order as for a storefront payment; a second charge and a cancelled
// pre-authorization are handled as docs/vendure.md says; errors say why in plain words; the
// in-memory store in production is called out at start.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DefaultLogger, LogLevel } from '@vendure/core';
import { NestjsPaymentsPlugin } from 'nestjs-payments/vendure';
import { adminOrder, cartWithShipping, gql, ORDER_FIELDS, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 28422 : 28420;

/** Vendure's logger at warning level, keeping what it was told. */
class KeepingLogger extends DefaultLogger {
  warnings = [];
  constructor() {
    super({ level: LogLevel.Error });
  }
  warn(message, context) {
    this.warnings.push(`${context ?? ''}: ${message}`);
  }
}

async function until(what, check, ms = 20_000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const value = await check();
    if (value) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe(`Vendure as merchants run it (${db})`, () => {
  let env;
  const logger = new KeepingLogger();
  before(async () => {
    env = await startEnvironment({ db, port, proxyPort: port + 1, logger });
  });
  after(async () => {
    await env?.close();
  });

  it('the in-memory store in production is called out at start, naming the fix', async () => {
    // Vendure refuses to start a test server in production (its default superadmin password):
    // the plugin's service, as Vendure built it, is built once more with NODE_ENV=production and
    // the guide's options (no store: the in-memory one), its warning going to Vendure's logger.
    const wrapper = [...env.server.app.container.getModules().values()]
      .flatMap((m) => [...m.providers.values()])
      .find((p) => p.name === 'NestjsPaymentsService' && p.instance);
    assert.ok(wrapper, "the plugin's service");
    // Its dependencies as Nest injects them (after the options' token).
    const deps = Reflect.getMetadata('design:paramtypes', wrapper.metatype)
      .slice(1)
      .map((type) => env.server.app.get(type, { strict: false }));
    const nodeEnv = process.env.NODE_ENV;
    let service;
    logger.warnings.length = 0;
    process.env.NODE_ENV = 'development';
    try {
      service = new wrapper.metatype(NestjsPaymentsPlugin.options, ...deps);
      await service.onApplicationShutdown();
      assert.deepEqual(
        logger.warnings.filter((w) => /in-memory store/.test(w)),
        [],
        'not outside production',
      );
      process.env.NODE_ENV = 'production';
      service = new wrapper.metatype(NestjsPaymentsPlugin.options, ...deps);
      await service.onApplicationShutdown();
    } finally {
      if (nodeEnv === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = nodeEnv;
    }
    const said = logger.warnings.filter((w) => /in-memory store/.test(w));
    assert.ok(said.length > 0, `warnings: ${JSON.stringify(logger.warnings)}`);
    assert.match(said[0], /RedisPaymentsStore|PostgresPaymentsStore/);
  });

  it("a webhook's settlement runs Vendure's subscribers with the webhook's request and the order's channel", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    await env.sandbox.completePayment(link.paymentId);
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentSettled');
    const seen = await until('OrderPlacedEvent', () => env.placed.get(cart.code));
    assert.equal(seen.error, undefined, `a subscriber reading ctx.req failed: ${seen.error}`);
    assert.equal(seen.host, `127.0.0.1:${port + 1}`, "the webhook's request (through the proxy)");
    const { activeChannel } = await env.adminClient.query(gql(`{ activeChannel { token } }`));
    assert.equal(seen.channelToken, activeChannel.token);
  });

  it("the customer's return runs them with the storefront's request", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    env.proxy.dropWebhooks = true;
    try {
      await env.sandbox.completePayment(link.paymentId, { requireDelivery: false });
    } finally {
      env.proxy.dropWebhooks = false;
    }
    const { checkNestjsPaymentsReturn } = await env.shopClient.query(
      gql(`mutation($id: String!) { checkNestjsPaymentsReturn(paymentId: $id) { outcome } }`),
      { id: link.paymentId },
    );
    assert.equal(checkNestjsPaymentsReturn.outcome, 'confirmed');
    const seen = await until('OrderPlacedEvent', () => env.placed.get(cart.code));
    assert.equal(seen.error, undefined, `a subscriber reading ctx.req failed: ${seen.error}`);
    // The shop client's request (Vendure's test client calls localhost), not the webhook proxy's.
    assert.match(seen.host, new RegExp(`^(localhost|127\\.0\\.0\\.1):${port}$`));
  });

  it('a second charge of a paid order is published as NestjsPaymentsUnexpectedPaymentEvent (order-already-paid)', async () => {
    const cart = await cartWithShipping(env.shopClient);
    const first = await paymentLink(env.shopClient);
    // The cart changes after the first link (another tab, a second item): a new link for the new total.
    await env.shopClient.query(
      gql(`mutation { addItemToOrder(productVariantId: "T_2", quantity: 1) { ... on Order { id } } }`),
    );
    const second = await paymentLink(env.shopClient);
    assert.notEqual(second.paymentId, first.paymentId);
    await env.sandbox.completePayment(second.paymentId);
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentSettled');
    await env.sandbox.completePayment(first.paymentId);
    const event = await until('the event', () =>
      env.unexpected.find((e) => e.paymentId === first.paymentId && e.reason === 'order-already-paid'),
    );
    assert.equal(event.orderCode, cart.code);
    assert.equal(event.millimes, first.millimes);
    const order = await adminOrder(env.adminClient, cart.id);
    assert.deepEqual(
      order.payments.map((p) => p.transactionId),
      [second.paymentId],
    );
    assert.equal(env.sandbox.getPayment(first.paymentId).state, 'paid', 'never refunded silently');
  });

  it('cancelling a pre-authorized order releases the hold', async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient, { paymentMethodCode: env.methods.preauth });
    await env.sandbox.completePayment(link.paymentId);
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentAuthorized');
    assert.equal(env.sandbox.getPayment(link.paymentId).state, 'preauthorized');
    const { cancelOrder } = await env.adminClient.query(
      gql(
        `mutation($id: ID!) { cancelOrder(input: { orderId: $id }) { ... on Order { id state } ... on ErrorResult { errorCode message } } }`,
      ),
      { id: cart.id },
    );
    assert.equal(cancelOrder.state, 'Cancelled', JSON.stringify(cancelOrder));
    await until('the release', () => env.sandbox.getPayment(link.paymentId).state === 'cancelled');
    const payment = await until('the payment Cancelled', async () => {
      const order = await adminOrder(env.adminClient, cart.id);
      return order.payments[0].state === 'Cancelled' && order.payments[0];
    });
    assert.equal(payment.transactionId, link.paymentId);
  });

  it('a link refused by Vendure says why in plain words, not an i18n key', async () => {
    await env.shopClient.asAnonymousUser();
    await env.shopClient.query(
      gql(`mutation { addItemToOrder(productVariantId: "T_1", quantity: 1) { ... on Order { id } } }`),
    );
    // No customer set: Vendure refuses ArrangingPayment.
    await assert.rejects(paymentLink(env.shopClient), (error) => {
      assert.doesNotMatch(error.message, /message\.[a-z-]+/);
      assert.match(error.message, /Customer/);
      return true;
    });
  });

  it("the shop API's addPaymentToOrder with this method says why it is refused", async () => {
    const cart = await cartWithShipping(env.shopClient);
    await env.shopClient.query(
      gql(
        `mutation { transitionOrderToState(state: "ArrangingPayment") { ... on Order { id } ... on ErrorResult { message } } }`,
      ),
    );
    // Refused with a GraphQL error that says why (Vendure's PaymentFailedError says only "The payment failed").
    await assert.rejects(
      env.shopClient.query(
        gql(
          `mutation { addPaymentToOrder(input: { method: "${env.methods.card}", metadata: {} }) { ... on Order { ${ORDER_FIELDS} } ... on ErrorResult { errorCode message } } }`,
        ),
      ),
      /payments are added by the plugin once the service verified them.*createNestjsPaymentsLink/,
    );
    assert.equal((await adminOrder(env.adminClient, cart.id)).payments.length, 0, 'no Error payment on the order');
  });
});
