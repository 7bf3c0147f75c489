/**
 * The order page of the sample shop, `/orders/<id>`: the order's state and history as the shop
 * recorded them, without a call to the payment service.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { CapturingLogger, paymentIdOf, ShopClient } from './shop.helpers.js';

const WEBHOOK_SECRET = 'shop-order-page-webhook-secret-0123456789';

/** The `<li>` rows of the page's history, as [kind, source, text]. */
function historyOf(markup: string): Array<[string, string, string]> {
  const list = /<ol class="history" id="order-history">([\s\S]*?)<\/ol>/.exec(markup)?.[1];
  if (list === undefined) throw new Error(`no history in ${markup.slice(0, 500)}`);
  return [...list.matchAll(/<li data-kind="([^"]*)" data-source="([^"]*)">([\s\S]*?)<\/li>/g)].map((m) => [
    m[1],
    m[2],
    m[3]
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  ]);
}

describe('sample shop: the order page /orders/<id>', () => {
  let shop: ShopApp;
  let sandbox: PaymentsSandbox;
  let client: ShopClient;

  beforeAll(async () => {
    shop = await createShopApp({
      port: 0,
      sandboxPort: 0,
      env: { PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET, DATA_DIR: 'memory://' },
      logger: new CapturingLogger(),
    });
    sandbox = shop.sandbox!;
    client = new ShopClient(shop.url);
  }, 30_000);

  afterAll(async () => {
    await shop?.close();
  });

  async function buy(productId: string): Promise<{ orderId: string; paymentId: string }> {
    const res = await client.buy(productId);
    expect(res.status).toBe(303);
    const paymentId = paymentIdOf(res.location!);
    return { orderId: sandbox.getPayment(paymentId)!.developerTrackingId!, paymentId };
  }

  it('shows a pending order, its one event, and reloads; it asks the service nothing', async () => {
    const { orderId, paymentId } = await buy('moka-pot');
    const page = await client.get(`/orders/${orderId}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.text).toContain(`<title>Order ${orderId} · Medina Roasters</title>`);
    expect(page.markup).toContain(`<section class="panel narrow" id="order" data-state="pending">`);
    expect(page.markup).toContain(`<dd class="mono" id="order-id">${orderId}</dd>`);
    expect(page.markup).toContain('<dd id="order-amount">27.750&nbsp;TND</dd>');
    expect(page.markup).toContain(
      '<dd id="order-state"><span class="badge badge-pending" data-state="pending">Pending</span></dd>',
    );
    expect(page.text).toContain('<meta http-equiv="refresh" content="3"');
    expect(historyOf(page.markup)).toEqual([
      ['created', 'checkout', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC Order placed at checkout$/)],
    ]);
    expect(sandbox.verifyCalls(paymentId)).toBe(0);
  });

  it('shows a paid order with its history: placed at checkout, paid by the webhook (service status SUCCESS)', async () => {
    const { orderId, paymentId } = await buy('espresso-beans');
    expect((await sandbox.completePayment(paymentId)).webhook).toMatchObject({ delivered: true });
    const verifies = sandbox.verifyCalls(paymentId);
    const page = await client.get(`/orders/${orderId}`);
    expect(page.status).toBe(200);
    expect(page.markup).toContain('data-state="paid">Paid</span>');
    expect(page.text).not.toContain('http-equiv="refresh"');
    expect(historyOf(page.markup)).toEqual([
      ['created', 'checkout', expect.stringMatching(/Order placed at checkout$/)],
      [
        'paid',
        'webhook',
        expect.stringMatching(/Payment received notified by the payment service \(service status SUCCESS\)$/),
      ],
    ]);
    expect(sandbox.verifyCalls(paymentId)).toBe(verifies);
  });

  it('shows a "capture later" order reserved, and a declined one failed as the return page found it', async () => {
    const held = await buy('espresso-machine');
    await sandbox.completePayment(held.paymentId);
    const heldPage = await client.get(`/orders/${held.orderId}`);
    expect(heldPage.markup).toContain('data-state="authorized">Authorized</span>');
    expect(
      historyOf(heldPage.markup).map(([kind, source, text]) => [kind, source, text.replace(/^.* UTC /, '')]),
    ).toEqual([
      ['created', 'checkout', 'Order placed at checkout: capture later'],
      [
        'authorized',
        'webhook',
        'Amount reserved on the card notified by the payment service (service status PREAUTH_SUCCESS)',
      ],
    ]);

    const declined = await buy('pour-over-set');
    await sandbox.failPayment(declined.paymentId, { requireDelivery: false });
    // The return page verifies; the order page then shows what it recorded.
    expect((await client.get(`/orders/${declined.orderId}/failed?payment_id=${declined.paymentId}`)).status).toBe(200);
    const page = await client.get(`/orders/${declined.orderId}`);
    expect(page.markup).toContain('data-state="failed">Failed</span>');
    expect(historyOf(page.markup).map(([kind, source]) => [kind, source])).toEqual([
      ['created', 'checkout'],
      ['failed', expect.stringMatching(/^(return|webhook)$/)],
    ]);
  });

  it('the return page links to the order page', async () => {
    const { orderId, paymentId } = await buy('hand-grinder');
    await sandbox.completePayment(paymentId);
    const page = await client.get(`/orders/${orderId}/success?payment_id=${paymentId}`);
    expect(page.markup).toContain(
      `<a class="button secondary" id="order-link" href="/orders/${orderId}">Order page</a>`,
    );
  });

  it('answers an unknown or malformed order number with the HTML 404 page', async () => {
    for (const path of ['/orders/ord_0000000000000000', '/orders/nope', `/orders/${encodeURIComponent('<b>x</b>')}`]) {
      const page = await client.get(path);
      expect(page.status).toBe(404);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('There is no order with this number.');
      expect(page.text).not.toContain('<b>x</b>');
    }
  });
});
