// A restart between the link and the webhook, with docs/vendure.md's configuration as printed (no
// store option: the in-memory store, which the restart empties): the customer who pays after it
// still gets the order settled, from the webhook alone.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { adminOrder, cartWithShipping, gql, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = db === 'postgres' ? 27290 : 27280;

describe(`Vendure restarted between the link and the webhook (${db})`, () => {
  let env;
  before(async () => {
    env = await startEnvironment({ db, port, proxyPort: port + 1 });
    const options = env.server.vendureConfig.dbConnectionOptions;
    if (db === 'sqljs') {
      // sql.js keeps writes in memory: they are saved, to a copy of the shared data file, so that
      // the restarted server reads them.
      const copy = `${options.location}.restart`;
      copyFileSync(options.location, copy);
      Object.assign(options, { location: copy, autoSave: true });
      await env.server.destroy();
      await env.server.bootstrap();
      await env.adminClient.asSuperAdmin();
      // The channel's move to TND (startEnvironment's) was not saved: made again, saved.
      await env.adminClient.query(
        gql(
          `mutation { updateChannel(input: { id: "T_1", defaultCurrencyCode: TND, availableCurrencyCodes: [TND] }) { ... on Channel { id } } }`,
        ),
      );
    }
  });
  after(async () => {
    await env?.close();
  });

  it("the customer pays after the restart: the webhook settles the order (guide's default store)", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    await env.server.destroy();
    await env.server.bootstrap();
    await env.sandbox.completePayment(link.paymentId);
    await env.adminClient.asSuperAdmin();
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.deepEqual(
      order.payments.map((p) => [p.state, p.transactionId]),
      [['Settled', link.paymentId]],
    );
  });
});
