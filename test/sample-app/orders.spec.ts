/** The shop's order rules and HTML escaping, without HTTP. */
import { describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { PaymentCancelledEvent, PaymentConfirmedEvent, PaymentRefundedEvent } from 'nestjs-payments';
import { Catalog } from '../../sample-app/src/catalog/catalog.service.js';
import { OrdersStore } from '../../sample-app/src/orders/orders.store.js';
import { PaymentEventsHandler } from '../../sample-app/src/orders/payment-events.handler.js';
import { escapeHtml, html } from '../../sample-app/src/views/html.util.js';

Logger.overrideLogger(false);

const catalog = new Catalog();
const beans = catalog.find('espresso-beans')!;

function setUp() {
  const store = new OrdersStore();
  const handler = new PaymentEventsHandler(store);
  const order = store.create(beans);
  store.attachPayment(order.id, 'pay_1');
  const confirm = (payload: Record<string, unknown> = {}, over: { paymentId?: string; amount?: string; trackingId?: string } = {}) =>
    handler.onConfirmed(
      new PaymentConfirmedEvent(over.paymentId ?? 'pay_1', over.amount ?? order.amount, 'trackingId' in over ? over.trackingId : order.id, new Date(), payload, {}),
    );
  return { store, handler, order, confirm };
}

describe('catalog', () => {
  it('converts the dinar prices to millimes exactly', () => {
    expect(catalog.list().map((p) => [p.id, p.amount])).toEqual([
      ['espresso-beans', '12500'],
      ['moka-pot', '27750'],
      ['pour-over-set', '34900'],
      ['hand-grinder', '89000'],
    ]);
    expect(catalog.find('nope')).toBeUndefined();
    expect(catalog.find({ id: 'espresso-beans' })).toBeUndefined();
  });
});

describe('orders and payment events', () => {
  it('a confirmation marks the order paid, and a repeat changes nothing', () => {
    const { store, order, confirm } = setUp();
    confirm({ status: 'completed' });
    const paid = store.get(order.id)!;
    expect(paid).toMatchObject({ state: 'paid', paymentId: 'pay_1' });
    confirm({ status: 'completed' });
    expect(store.get(order.id)).toBe(paid);
  });

  it('finds the order by payment id when the confirmation carries no tracking id', () => {
    const { store, order, confirm } = setUp();
    confirm({}, { trackingId: undefined });
    expect(store.get(order.id)!.state).toBe('paid');
  });

  it('ignores confirmations of another payment or another amount', () => {
    const { store, order, confirm } = setUp();
    confirm({}, { paymentId: 'pay_other' });
    confirm({}, { amount: '1' });
    expect(store.get(order.id)!.state).toBe('pending');
  });

  it('never marks a payload that says "failed" as paid', () => {
    const { store, order, confirm } = setUp();
    confirm({ status: 'FAILED' });
    expect(store.get(order.id)!.state).toBe('failed');
  });

  it('a confirmation after the fail page still marks the order paid; the fail page never undoes a payment', () => {
    const { store, order, confirm } = setUp();
    store.markFailed(order.id);
    confirm({ status: 'completed' });
    expect(store.get(order.id)!.state).toBe('paid');
    expect(store.markFailed(order.id)).toMatchObject({ changed: false, order: { state: 'paid' } });
  });

  it('refund and cancel events move paid and pre-authorized orders, once', () => {
    const { store, handler, order, confirm } = setUp();
    confirm();
    handler.onRefunded(new PaymentRefundedEvent('pay_1', 'ref_1', '12500', '2030-01-01T00:00:00Z'));
    handler.onRefunded(new PaymentRefundedEvent('pay_1', 'ref_2', '12500', '2030-01-01T00:00:01Z'));
    expect(store.get(order.id)).toMatchObject({ state: 'refunded', refundId: 'ref_1' });

    const pre = store.create(beans, 'preauthorized');
    store.attachPayment(pre.id, 'pay_2');
    handler.onCancelled(new PaymentCancelledEvent('pay_1', '2030-01-01T00:00:00Z'));
    expect(store.get(order.id)!.state).toBe('refunded');
    handler.onCancelled(new PaymentCancelledEvent('pay_2', '2030-01-01T00:00:00Z'));
    expect(store.get(pre.id)!.state).toBe('cancelled');
  });

  it('lists orders newest first, as frozen snapshots', () => {
    const store = new OrdersStore();
    const a = store.create(beans);
    const b = store.create(catalog.find('moka-pot')!);
    expect(store.list().map((o) => o.id)).toEqual([b.id, a.id]);
    expect(Object.isFrozen(a)).toBe(true);
  });
});

describe('html templates', () => {
  it('escape every interpolated value, keep nested templates, and drop false/undefined', () => {
    const evil = `<img src=x onerror="alert('1')">&`;
    expect(escapeHtml(evil)).toBe('&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;');
    const out = html`<p title="${evil}">${evil}${[html`<b>${'<i>'}</b>`, '<u>']}${undefined}${false}${null}${0}</p>`.value;
    expect(out).toBe(
      '<p title="&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;">&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;<b>&#60;i&#62;</b>&#60;u&#62;0</p>',
    );
  });
});
