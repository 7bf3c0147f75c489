/** The shop's order rules on a real (in-memory PGlite) database, and HTML escaping, without HTTP. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import {
  PaymentAuthorizedEvent,
  PaymentConfirmedEvent,
  PaymentExpiredEvent,
  PaymentFailedEvent,
  type VerifiedPayment,
} from 'nestjs-payments';
import type { OutcomeSource } from 'nestjs-payments/store';
import { Catalog } from '../../sample-app/src/catalog/catalog.service.js';
import { ShopDatabase } from '../../sample-app/src/db/database.js';
import { OrdersRepository, TRANSITIONS } from '../../sample-app/src/orders/orders.repository.js';
import { PaymentEventsHandler } from '../../sample-app/src/orders/payment-events.handler.js';
import { escapeHtml, html } from '../../sample-app/src/views/html.util.js';

Logger.overrideLogger(false);

const catalog = new Catalog();
const beans = catalog.find('espresso-beans')!;
const machine = catalog.find('espresso-machine')!;

let database: ShopDatabase;
let repo: OrdersRepository;
let handler: PaymentEventsHandler;
let seq = 0;

beforeAll(async () => {
  database = await ShopDatabase.open({ dataDir: 'memory://' });
  repo = new OrdersRepository(database);
  handler = new PaymentEventsHandler(repo, database);
}, 30_000);

afterAll(async () => {
  await database?.close();
});

function verification(
  paymentId: string,
  amount: string,
  trackingId: string | undefined,
  status: string,
): VerifiedPayment {
  return { paymentId, amount, developerTrackingId: trackingId, status };
}

/** A pending order with a payment, and helpers to deliver its outcomes. */
async function setUp(product = beans) {
  const order = await repo.create(product);
  const paymentId = `pay_${++seq}`;
  await repo.attachPayment(order.id, paymentId);
  const v = (status: string, over: { amount?: string; trackingId?: string | null; paymentId?: string } = {}) =>
    verification(
      over.paymentId ?? paymentId,
      over.amount ?? order.amount,
      over.trackingId === null ? undefined : (over.trackingId ?? order.id),
      status,
    );
  const source: OutcomeSource = 'webhook';
  return {
    order,
    paymentId,
    confirm: (over = {}) =>
      handler.onConfirmed(new PaymentConfirmedEvent('confirmed', v('SUCCESS', over), source, undefined)),
    fail: () => handler.onFailed(new PaymentFailedEvent('failed', v('FAILURE'), 'return', undefined)),
    expire: () => handler.onExpired(new PaymentExpiredEvent('expired', v('EXPIRED'), 'reconciliation', undefined)),
    authorize: () =>
      handler.onAuthorized(new PaymentAuthorizedEvent('authorized', v('PREAUTH_SUCCESS'), source, undefined)),
    kinds: async () => (await repo.events(order.id)).map((e) => e.kind),
  };
}

describe('catalog', () => {
  it('converts the dinar prices to millimes exactly; one product is captured later', () => {
    expect(catalog.list().map((p) => [p.id, p.amount, p.capture])).toEqual([
      ['espresso-beans', '12500', 'immediate'],
      ['moka-pot', '27750', 'immediate'],
      ['pour-over-set', '34900', 'immediate'],
      ['hand-grinder', '89000', 'immediate'],
      ['espresso-machine', '649000', 'later'],
    ]);
    expect(catalog.find('nope')).toBeUndefined();
    expect(catalog.find({ id: 'espresso-beans' })).toBeUndefined();
  });
});

describe('orders in the database', () => {
  it('creates a pending order with its items, amount and a "created" event', async () => {
    const order = await repo.create(beans, { clientId: 'cus_0123456789abcdef' });
    expect(order).toMatchObject({
      status: 'pending',
      amount: '12500',
      capture: 'immediate',
      clientId: 'cus_0123456789abcdef',
      items: [{ productId: 'espresso-beans', name: 'Espresso beans', quantity: 1, unitAmount: '12500' }],
    });
    expect(order.id).toMatch(/^ord_[0-9a-f]{16}$/);
    expect(await repo.events(order.id)).toEqual([expect.objectContaining({ kind: 'created', source: 'checkout' })]);
    expect(await repo.get(order.id)).toEqual(order);
  });

  it('a confirmation marks the order paid with one event; a repeat changes nothing', async () => {
    const { order, confirm, kinds } = await setUp();
    await confirm();
    const paid = await repo.get(order.id);
    expect(paid).toMatchObject({ status: 'paid' });
    await confirm();
    expect(await repo.get(order.id)).toEqual(paid);
    expect(await kinds()).toEqual(['created', 'paid']);
    expect((await repo.events(order.id))[1]).toMatchObject({ source: 'webhook', serviceStatus: 'SUCCESS' });
  });

  it('ignores outcomes of another amount, and failures of an earlier payment of the order', async () => {
    const { order, confirm } = await setUp();
    await confirm({ amount: '1' });
    await handler.onExpired(
      new PaymentExpiredEvent(
        'expired',
        verification('pay_earlier', order.amount, order.id, 'EXPIRED'),
        'reconciliation',
        undefined,
      ),
    );
    expect((await repo.get(order.id))!.status).toBe('pending');
  });

  it('is paid by another payment of the order (the one "Pay now" replaced): the plugin confirms one per order', async () => {
    const { order, confirm } = await setUp();
    await confirm({ paymentId: 'pay_earlier_attempt', trackingId: order.id });
    expect(await repo.get(order.id)).toMatchObject({ status: 'paid', paymentId: 'pay_earlier_attempt' });
  });

  it('finds the order by payment id when the outcome carries no tracking id', async () => {
    const { order, confirm } = await setUp();
    await confirm({ trackingId: null });
    expect((await repo.get(order.id))!.status).toBe('paid');
  });

  it('failed and expired outcomes; a later verified SUCCESS still wins (the money moved), never the reverse', async () => {
    const a = await setUp();
    await a.fail();
    expect((await repo.get(a.order.id))!.status).toBe('failed');
    await a.confirm();
    expect((await repo.get(a.order.id))!.status).toBe('paid');
    await a.fail();
    await a.expire();
    expect((await repo.get(a.order.id))!.status).toBe('paid');
    expect(await a.kinds()).toEqual(['created', 'failed', 'paid']);

    const b = await setUp();
    await b.expire();
    expect((await repo.get(b.order.id))!.status).toBe('expired');
    expect(await b.kinds()).toEqual(['created', 'expired']);
  });

  it('a "capture later" order: authorized, then captured in part, then refunded; each once', async () => {
    const { order, authorize, confirm, kinds } = await setUp(machine);
    expect(order.capture).toBe('later');
    await authorize();
    await authorize();
    expect((await repo.get(order.id))!.status).toBe('authorized');
    const captured = await repo.transition(order.id, {
      to: 'captured',
      from: TRANSITIONS.captured,
      source: 'admin',
      set: { capturedAmount: 400000 },
    });
    expect(captured).toMatchObject({ changed: true, order: { status: 'captured', capturedAmount: '400000' } });
    expect(
      await repo.transition(order.id, { to: 'captured', from: TRANSITIONS.captured, source: 'admin' }),
    ).toMatchObject({ changed: false });
    // After a capture the service verifies SUCCESS: a late confirmation does not turn it back into "paid".
    await confirm();
    expect((await repo.get(order.id))!.status).toBe('captured');
    await repo.transition(order.id, {
      to: 'refunded',
      from: TRANSITIONS.refunded,
      source: 'admin',
      set: { refundId: 'ref_1' },
    });
    expect(await repo.get(order.id)).toMatchObject({ status: 'refunded', refundId: 'ref_1', capturedAmount: '400000' });
    expect(await kinds()).toEqual(['created', 'authorized', 'captured', 'refunded']);
  });

  it('the database refuses a captured amount above the order, and a second event of one kind', async () => {
    const { order, authorize } = await setUp(machine);
    await authorize();
    await expect(
      repo.transition(order.id, {
        to: 'captured',
        from: TRANSITIONS.captured,
        source: 'admin',
        set: { capturedAmount: 649001 },
      }),
    ).rejects.toThrow();
    expect((await repo.get(order.id))!.status).toBe('authorized');
    // Even a transition with a wrong guard cannot record "authorized" twice.
    await expect(
      repo.transition(order.id, { to: 'authorized', from: ['authorized'], source: 'admin' }),
    ).rejects.toThrow();
  });

  it('a handler that throws inside the transaction leaves no trace: the order stays pending', async () => {
    const { order } = await setUp();
    await expect(
      repo.transition(order.id, {
        to: 'paid',
        from: TRANSITIONS.paid,
        source: 'webhook',
        inTransaction: async () => {
          throw new Error('crash');
        },
      }),
    ).rejects.toThrow('crash');
    expect((await repo.get(order.id))!.status).toBe('pending');
    expect((await repo.events(order.id)).map((e) => e.kind)).toEqual(['created']);
  });

  it('lists pending orders with a payment, oldest first; all orders newest first', async () => {
    const pending = await repo.listPendingWithPayment(1000);
    expect(pending.every((o) => o.status === 'pending' && o.paymentId !== undefined)).toBe(true);
    expect(pending.map((o) => o.createdAt.getTime())).toEqual(
      [...pending.map((o) => o.createdAt.getTime())].sort((x, y) => x - y),
    );
    const all = await repo.list();
    expect(all.map((o) => o.createdAt.getTime())).toEqual(
      [...all.map((o) => o.createdAt.getTime())].sort((x, y) => y - x),
    );
  });
});

describe('html templates', () => {
  it('escape every interpolated value, keep nested templates, and drop false/undefined', () => {
    const evil = `<img src=x onerror="alert('1')">&`;
    expect(escapeHtml(evil)).toBe('&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;');
    const out = html`<p title="${evil}">${evil}${[html`<b>${'<i>'}</b>`, '<u>']}${undefined}${false}${null}${0}</p>`
      .value;
    expect(out).toBe(
      '<p title="&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;">&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;<b>&#60;i&#62;</b>&#60;u&#62;0</p>',
    );
  });
});
