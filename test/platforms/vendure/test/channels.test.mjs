// A payment method per channel, each with its own merchant account (its handler's publicKey,
// privateKey and webhookSecret arguments), as Vendure's Mollie and Stripe plugins take theirs:
// links, webhooks, returns and refunds each use that method's account; a method without keys uses
// the plugin's options; the secrets never reach a log line.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DefaultLogger, LogLevel } from '@vendure/core';
import { MemoryPaymentsStore } from 'nestjs-payments/store';
import { adminOrder, cartWithShipping, gql, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 27230 : 27220;
const OUTLET_TOKEN = 'outlet-channel-token';
const OUTLET_SECRET = 'outlet-webhook-secret-0123456789abcdef0123';

/** Vendure's logger, keeping every line at every level (printed: none). */
class KeepingLogger extends DefaultLogger {
  lines = [];
  constructor() {
    super({ level: LogLevel.Debug });
  }
  error(message, context, trace) {
    this.lines.push(`${context}: ${message} ${trace ?? ''}`);
  }
  warn(message, context) {
    this.lines.push(`${context}: ${message}`);
  }
  info(message, context) {
    this.lines.push(`${context}: ${message}`);
  }
  verbose(message, context) {
    this.lines.push(`${context}: ${message}`);
  }
  debug(message, context) {
    this.lines.push(`${context}: ${message}`);
  }
}

describe(`Vendure channels with their own accounts (${db})`, () => {
  let env;
  const logger = new KeepingLogger();
  /** The outlet's payment method's code. */
  const outletMethod = 'outlet-card';
  /** The codes storeForPaymentMethod was called with. */
  const storesMade = [];
  /** The default channel's token (the clients' own). */
  let defaultToken;

  /** Runs `work` with both clients in the outlet channel. */
  async function inOutlet(work) {
    env.shopClient.setChannelToken(OUTLET_TOKEN);
    try {
      return await work();
    } finally {
      env.shopClient.setChannelToken(defaultToken);
    }
  }

  async function createMethod(code, args) {
    env.adminClient.setChannelToken(OUTLET_TOKEN);
    try {
      const { createPaymentMethod } = await env.adminClient.query(
        gql(`mutation($input: CreatePaymentMethodInput!) { createPaymentMethod(input: $input) { id code } }`),
        {
          input: {
            code,
            enabled: true,
            handler: { code: 'nestjs-payments', arguments: args },
            translations: [{ languageCode: 'en', name: code }],
          },
        },
      );
      return createPaymentMethod;
    } finally {
      env.adminClient.setChannelToken(defaultToken);
    }
  }

  before(async () => {
    env = await startEnvironment({
      db,
      port,
      proxyPort: port + 1,
      logger,
      secondAccount: true,
      // A store of the plugin's, and one per method with its own account (docs/vendure.md).
      pluginOptions: {
        store: new MemoryPaymentsStore(),
        storeForPaymentMethod: (code) => {
          storesMade.push(code);
          return new MemoryPaymentsStore();
        },
      },
    });
    ({
      activeChannel: { token: defaultToken },
    } = await env.adminClient.query(gql(`{ activeChannel { token } }`)));
    const { zones } = await env.adminClient.query(gql(`{ zones { items { id name } } }`));
    const africa = zones.items.find((z) => z.name === 'Africa').id;
    const { createChannel } = await env.adminClient.query(
      gql(
        `mutation($input: CreateChannelInput!) { createChannel(input: $input) { ... on Channel { id } ... on ErrorResult { message } } }`,
      ),
      {
        input: {
          code: 'outlet',
          token: OUTLET_TOKEN,
          defaultLanguageCode: 'en',
          pricesIncludeTax: false,
          defaultCurrencyCode: 'TND',
          availableCurrencyCodes: ['TND'],
          defaultTaxZoneId: africa,
          defaultShippingZoneId: africa,
        },
      },
    );
    assert.ok(createChannel.id, JSON.stringify(createChannel));
    await env.adminClient.query(
      gql(`mutation($input: AssignProductsToChannelInput!) { assignProductsToChannel(input: $input) { id } }`),
      { input: { channelId: createChannel.id, productIds: ['T_1', 'T_2'], priceFactor: 1 } },
    );
    await env.adminClient.query(
      gql(
        `mutation($input: AssignShippingMethodsToChannelInput!) { assignShippingMethodsToChannel(input: $input) { id } }`,
      ),
      { input: { channelId: createChannel.id, shippingMethodIds: ['T_1'] } },
    );
    await createMethod(outletMethod, [
      { name: 'preAuthorization', value: 'false' },
      { name: 'publicKey', value: env.second.publicKey },
      { name: 'privateKey', value: env.second.privateKey },
      { name: 'webhookSecret', value: OUTLET_SECRET },
    ]);
  });
  after(async () => {
    await env?.close();
  });

  it("the outlet's payment is made, verified from its webhook and settled with the outlet's account", async () => {
    const { cart, link } = await inOutlet(async () => {
      const cart = await cartWithShipping(env.shopClient);
      return { cart, link: await paymentLink(env.shopClient, { paymentMethodCode: outletMethod }) };
    });
    assert.ok(env.second.getPayment(link.paymentId), "made on the outlet's account");
    assert.equal(env.sandbox.getPayment(link.paymentId), undefined, "not on the plugin's");
    await env.second.completePayment(link.paymentId);
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.equal(order.payments[0].method, outletMethod);
    assert.equal(order.payments[0].transactionId, link.paymentId);
    // The webhook's token was signed with the outlet's secret: the outlet's account verified it.
    const verified = (sandbox) => sandbox.requests.some((r) => r.path === `/api/v2/verify_payment/${link.paymentId}`);
    assert.ok(verified(env.second), "verified on the outlet's account");
    assert.ok(!verified(env.sandbox), "never asked of the plugin's");
    assert.deepEqual(storesMade, [outletMethod], 'one store for the one method with its own account');
  });

  it("the outlet's payment is verified at the customer's return with the outlet's account", async () => {
    const { cart, link } = await inOutlet(async () => {
      const cart = await cartWithShipping(env.shopClient);
      return { cart, link: await paymentLink(env.shopClient, { paymentMethodCode: outletMethod }) };
    });
    env.proxy.dropWebhooks = true;
    try {
      await env.second.completePayment(link.paymentId, { requireDelivery: false });
    } finally {
      env.proxy.dropWebhooks = false;
    }
    const { checkNestjsPaymentsReturn } = await inOutlet(() =>
      env.shopClient.query(gql(`mutation($id: String!) { checkNestjsPaymentsReturn(paymentId: $id) { outcome } }`), {
        id: link.paymentId,
      }),
    );
    assert.equal(checkNestjsPaymentsReturn.outcome, 'confirmed');
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentSettled');
  });

  it("a refund of the outlet's payment is made on the outlet's account", async () => {
    const { cart, link } = await inOutlet(async () => {
      const cart = await cartWithShipping(env.shopClient);
      return { cart, link: await paymentLink(env.shopClient, { paymentMethodCode: outletMethod }) };
    });
    await env.second.completePayment(link.paymentId);
    const payment = (await adminOrder(env.adminClient, cart.id)).payments[0];
    const { refundOrder } = await env.adminClient.query(
      gql(
        `mutation($input: RefundOrderInput!) { refundOrder(input: $input) { ... on Refund { id state } ... on ErrorResult { errorCode message } } }`,
      ),
      {
        input: {
          paymentId: payment.id,
          lines: [],
          shipping: 0,
          adjustment: 0,
          amount: payment.amount,
          reason: 'all back',
        },
      },
    );
    assert.equal(refundOrder.state, 'Settled', JSON.stringify(refundOrder));
    assert.equal(env.second.getPayment(link.paymentId).state, 'refunded');
  });

  it("the default channel's method, without keys of its own, uses the plugin's options", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient, { paymentMethodCode: env.methods.card });
    assert.ok(env.sandbox.getPayment(link.paymentId), "made on the plugin's account");
    await env.sandbox.completePayment(link.paymentId);
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.equal(order.payments[0].method, env.methods.card);
  });

  it('a method with one key and not the other is refused in plain words, naming no value', async () => {
    await createMethod('outlet-half', [{ name: 'privateKey', value: 'sk_half_configured_secret_value_0123' }]);
    await assert.rejects(
      inOutlet(async () => {
        await cartWithShipping(env.shopClient);
        return paymentLink(env.shopClient, { paymentMethodCode: 'outlet-half' });
      }),
      (error) => {
        assert.match(error.message, /outlet-half has a privateKey but no publicKey/);
        assert.doesNotMatch(error.message, /sk_half_configured/);
        return true;
      },
    );
  });

  it('the Admin shows the secret arguments masked, and no log line holds a secret', async () => {
    const { paymentMethodHandlers } = await env.adminClient.query(
      gql(`{ paymentMethodHandlers { code args { name ui } } }`),
    );
    const args = paymentMethodHandlers.find((h) => h.code === 'nestjs-payments').args;
    const ui = Object.fromEntries(args.map((a) => [a.name, a.ui?.component]));
    assert.equal(ui.privateKey, 'password-form-input');
    assert.equal(ui.webhookSecret, 'password-form-input');
    assert.ok(logger.lines.length > 0, 'lines were logged');
    for (const secret of [env.second.privateKey, OUTLET_SECRET, 'sk_half_configured_secret_value_0123']) {
      assert.deepEqual(
        logger.lines.filter((line) => line.includes(secret)),
        [],
      );
    }
  });
});
