// Exactly-once settlements: the order's Payment and its transition commit with the plugin's inbox
// row, in Vendure's own transaction. A crash after Vendure's commit and before the store's done
// marker leaves the row, and the retry runs nothing; two instances settling the same payment at
// once add one Payment (the second waits on the row's key, then finds it).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  EventBus,
  OrderPlacedEvent,
  OrderStateTransitionEvent,
  Payment,
  PaymentStateTransitionEvent,
  TransactionalConnection,
} from '@vendure/core';
import { MemoryPaymentsStore } from 'nestjs-payments/store';
import { adminOrder, cartWithShipping, gql, paymentLink, startEnvironment } from './environment.mjs';

const db = process.env.VENDURE_DB ?? 'sqljs';
const port = { sqljs: 28530, postgres: 28531, mariadb: 28532 }[db];

/**
 * The plugin's store, with two faults a test turns on: the done marker fails once after the
 * handlers committed, and the claim is let go (a process that died between Vendure's commit and
 * the store's write: its lease runs out, nothing was recorded), and every claim is granted (two
 * instances, each with a store of its own, both settle the same payment).
 */
class FaultyStore extends MemoryPaymentsStore {
  failNextDone = false;
  separateInstances = false;
  async finishOutcome(finish) {
    if (finish.claim === 'done' && this.failNextDone) {
      this.failNextDone = false;
      await this.release(finish.eventKey, finish.owner);
      throw new Error('simulated: the process died after Vendure committed, before the done marker');
    }
    return super.finishOutcome(finish);
  }
  async claim(key, owner, leaseMs) {
    if (this.separateInstances) return 'claimed';
    return super.claim(key, owner, leaseMs);
  }
}

const RETURN = gql(`mutation($id: String!) { checkNestjsPaymentsReturn(paymentId: $id) { paymentId outcome } }`);

describe(`Vendure settles each payment exactly once (${db})`, () => {
  let env;
  const store = new FaultyStore();
  /** Vendure's events, per order code: what its subscribers (the confirmation email) saw. */
  const seen = [];
  before(async () => {
    env = await startEnvironment({ db, port, pluginOptions: { store } });
    const bus = env.server.app.get(EventBus);
    bus.ofType(OrderPlacedEvent).subscribe((e) => seen.push(['placed', e.order.code]));
    bus.ofType(OrderStateTransitionEvent).subscribe((e) => seen.push([`order:${e.toState}`, e.order.code]));
    bus.ofType(PaymentStateTransitionEvent).subscribe((e) => seen.push([`payment:${e.toState}`, e.order.code]));
  });
  after(async () => {
    await env?.close();
  });

  const inboxRows = (paymentId) =>
    env.server.app
      .get(TransactionalConnection)
      .rawConnection.query(
        `SELECT event, order_id FROM nestjs_payments_inbox WHERE payment_id = ${db === 'postgres' ? '$1' : '?'}`,
        [paymentId],
      );
  const eventsOf = async (code) => {
    // Vendure's subscribers run once the transaction committed, a moment later.
    await sleep(300);
    return seen.filter(([, c]) => c === code).map(([kind]) => kind);
  };
  const count = (events, kind) => events.filter((k) => k === kind).length;

  it("a crash after Vendure's commit, before the done marker: the retry finds the inbox row and runs nothing", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    store.failNextDone = true;
    await env.sandbox.completePayment(link.paymentId);
    assert.equal(store.failNextDone, false, 'the done marker failed once');
    // The next path to the payment (the customer's return) verifies it again.
    await env.shopClient.query(RETURN, { id: link.paymentId });
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.deepEqual(
      order.payments.map((p) => [p.state, p.transactionId]),
      [['Settled', link.paymentId]],
    );
    assert.deepEqual(await inboxRows(link.paymentId), [{ event: 'payment.confirmed', order_id: cart.code }]);
    const events = await eventsOf(cart.code);
    assert.equal(count(events, 'placed'), 1, events.join());
    assert.equal(count(events, 'order:PaymentSettled'), 1, events.join());
    assert.equal(count(events, 'payment:Settled'), 1, events.join());
  });

  it('the same crash after a payment the order does not take: the merchant is told once', async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    await env.adminClient.query(
      gql(`mutation($id: ID!) { cancelOrder(input: { orderId: $id }) { ... on Order { id state } } }`),
      { id: cart.id },
    );
    store.failNextDone = true;
    await env.sandbox.completePayment(link.paymentId);
    await env.shopClient.query(RETURN, { id: link.paymentId });
    await sleep(300);
    const reports = env.unexpected.filter((e) => e.paymentId === link.paymentId);
    assert.deepEqual(
      reports.map((e) => e.reason),
      ['order-cancelled'],
    );
    assert.equal((await adminOrder(env.adminClient, cart.id)).payments.length, 0);
  });

  it("the inbox row is written in Vendure's transaction: a settlement that fails leaves neither it nor the Payment", async () => {
    const cart = await cartWithShipping(env.shopClient);
    const link = await paymentLink(env.shopClient);
    const subscribers = env.server.app.get(TransactionalConnection).rawConnection.subscribers;
    const failing = {
      listenTo: () => Payment,
      afterInsert: () => {
        subscribers.splice(subscribers.indexOf(failing), 1);
        throw new Error('simulated: Vendure failed after adding the Payment');
      },
    };
    subscribers.push(failing);
    // The webhook is answered 500: the service would deliver it again.
    await env.sandbox.completePayment(link.paymentId, { requireDelivery: false });
    assert.ok(!subscribers.includes(failing), 'the settlement failed once');
    assert.deepEqual(await inboxRows(link.paymentId), [], 'the row rolled back with the Payment');
    assert.equal((await adminOrder(env.adminClient, cart.id)).payments.length, 0);
    await env.shopClient.query(RETURN, { id: link.paymentId });
    const order = await adminOrder(env.adminClient, cart.id);
    assert.equal(order.state, 'PaymentSettled');
    assert.equal(order.payments.length, 1);
    assert.equal((await inboxRows(link.paymentId)).length, 1);
  });

  it('two instances settle the same payment at once: one Payment, one transition', async () => {
    const cart = await cartWithShipping(env.shopClient);
    // The storefront moved the order to ArrangingPayment itself: each settlement only adds its Payment.
    await env.shopClient.query(
      gql(`mutation { transitionOrderToState(state: "ArrangingPayment") { ... on Order { state } } }`),
    );
    const link = await paymentLink(env.shopClient);
    env.proxy.dropWebhooks = true;
    try {
      await env.sandbox.completePayment(link.paymentId, { requireDelivery: false });
    } finally {
      env.proxy.dropWebhooks = false;
    }
    // Each Payment's insert waits, so that both settlements read the order before either writes.
    const subscribers = env.server.app.get(TransactionalConnection).rawConnection.subscribers;
    const slow = { listenTo: () => Payment, beforeInsert: () => sleep(1500) };
    subscribers.push(slow);
    store.separateInstances = true;
    try {
      await Promise.all([
        env.shopClient.query(RETURN, { id: link.paymentId }),
        env.shopClient.query(RETURN, { id: link.paymentId }),
      ]);
    } finally {
      store.separateInstances = false;
      subscribers.splice(subscribers.indexOf(slow), 1);
    }
    const order = await adminOrder(env.adminClient, cart.id);
    assert.deepEqual(
      order.payments.map((p) => [p.state, p.transactionId]),
      [['Settled', link.paymentId]],
    );
    assert.equal(order.state, 'PaymentSettled');
    const events = await eventsOf(cart.code);
    assert.equal(count(events, 'placed'), 1, events.join());
    assert.equal(count(events, 'payment:Settled'), 1, events.join());
  });
});
