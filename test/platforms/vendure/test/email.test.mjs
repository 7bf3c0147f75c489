// Vendure's own EmailPlugin (its default handlers and templates, its testing transport: no
// network) sends the order confirmation for an order the plugin settled from a webhook, as it does
// for a storefront's payment: its handler makes the order lines' image URLs absolute from
// `ctx.req`, as the AssetServerPlugin's storage does (here a storage that reads the request as it does).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultEmailHandlers, EmailPlugin, FileBasedTemplateLoader } from '@vendure/email-plugin';
import { testConfig } from '@vendure/testing';
import { adminOrder, cartWithShipping, gql, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 27212 : 27210;
const templates = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@vendure/email-plugin')),
  '..',
  'templates',
);

/** Vendure's testing storage, its URLs made absolute from the request as the AssetServerPlugin's are. */
class RequestUrlAssetStorage extends testConfig.assetOptions.assetStorageStrategy.constructor {
  toAbsoluteUrl(request, identifier) {
    return `${request.protocol}://${request.get('host')}/assets/${identifier}`;
  }
}

async function until(what, check, ms = 20_000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const value = await check();
    if (value) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe(`Vendure's EmailPlugin (${db})`, () => {
  let env;
  const sent = [];
  before(async () => {
    const email = EmailPlugin.init({
      handlers: defaultEmailHandlers,
      templateLoader: new FileBasedTemplateLoader(templates),
      transport: { type: 'testing', onSend: (details) => sent.push(details) },
      globalTemplateVars: { fromAddress: '"Shop" <noreply@example.tn>' },
    });
    env = await startEnvironment({
      db,
      port,
      proxyPort: port + 1,
      plugins: [email],
      config: { assetOptions: { assetStorageStrategy: new RequestUrlAssetStorage() } },
    });
  });
  after(async () => {
    await env?.close();
  });

  const confirmation = (code) => sent.find((mail) => mail.subject === `Order confirmation for #${code}`);

  it('sends the order confirmation for an order settled from a webhook', async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    await env.sandbox.completePayment(link.paymentId);
    assert.equal((await adminOrder(env.adminClient, cart.id)).state, 'PaymentSettled');
    const mail = await until(`the confirmation of ${cart.code}`, () => confirmation(cart.code));
    assert.match(mail.recipient, /^amel.*@example\.tn$/);
    assert.match(mail.body, new RegExp(cart.code));
    // The line's image, its URL made from the webhook's request (through the proxy).
    assert.match(mail.body, new RegExp(`http://127\\.0\\.0\\.1:${port + 1}/assets/`));
  });

  it("sends it for an order settled at the customer's return, as for a storefront payment", async () => {
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
    const mail = await until(`the confirmation of ${cart.code}`, () => confirmation(cart.code));
    assert.match(mail.body, new RegExp(cart.code));
    assert.match(mail.body, new RegExp(`http://(localhost|127\\.0\\.0\\.1):${port}/assets/`));
  });
});
