/**
 * The sample shop without a browser: boots `createShopApp` in-process (port 0, embedded
 * sandbox on port 0) and drives it with fetch, as the pages' forms would.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { CapturingLogger, ShopClient } from './shop.helpers.js';

const WEBHOOK_SECRET = 'shop-e2e-webhook-secret-0123456789abcdef';

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Binds `port` and releases it; rejects when it is taken. */
async function listenOn(port: number): Promise<void> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, resolve));
  await new Promise((resolve) => server.close(resolve));
}

/** The payment id at the end of a sandbox checkout link. */
function paymentIdOf(link: string): string {
  return decodeURIComponent(new URL(link).pathname.split('/').pop()!);
}

describe('sample shop in sandbox mode', () => {
  let shop: ShopApp;
  let sandbox: PaymentsSandbox;
  let client: ShopClient;
  const logger = new CapturingLogger();

  /** Buys a product through the checkout form; returns the order and payment ids and the link. */
  async function buy(productId = 'espresso-beans'): Promise<{ orderId: string; paymentId: string; link: string }> {
    const res = await client.post('/orders', { productId });
    expect(res.status).toBe(303);
    const link = res.location!;
    const paymentId = paymentIdOf(link);
    const orderId = sandbox.getPayment(paymentId)!.developerTrackingId!;
    return { orderId, paymentId, link };
  }

  /** The admin table row of an order. */
  async function adminRow(orderId: string): Promise<string> {
    const page = await client.get('/admin');
    const match = new RegExp(`<tr id="order-${orderId}"[\\s\\S]*?</tr>`).exec(page.text);
    if (!match) throw new Error(`order ${orderId} is not on /admin`);
    return match[0];
  }

  beforeAll(async () => {
    // env: {} keeps the developer's shell (a real PAYMENTS_PUBLIC_KEY...) out of the test.
    shop = await createShopApp({ port: 0, sandboxPort: 0, env: { PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET }, logger });
    sandbox = shop.sandbox!;
    client = new ShopClient(shop.url);
  });

  afterAll(async () => {
    await shop?.close();
  });

  it('starts the embedded sandbox and says so in the log', () => {
    expect(sandbox).toBeInstanceOf(PaymentsSandbox);
    expect(shop.url).toBe(`http://localhost:${shop.port}`);
    expect(logger.lines).toContainEqual(
      `log [Shop] No PAYMENTS_* keys set: using the built-in sandbox at ${sandbox.url} (no real money moves)`,
    );
  });

  it('serves the catalog: every product with its price in dinars and a Buy form', async () => {
    const page = await client.get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.text).toMatch(/^<!doctype html>/);
    expect(page.text).toContain('<title>Catalog · Medina Roasters</title>');
    expect(page.text).toContain('id="test-mode"');
    for (const [id, name, price] of [
      ['espresso-beans', 'Espresso beans', '12.500'],
      ['moka-pot', 'Moka pot', '27.750'],
      ['pour-over-set', 'Pour-over set', '34.900'],
      ['hand-grinder', 'Hand grinder', '89.000'],
    ]) {
      expect(page.text).toContain(`<article class="card" id="product-${id}">`);
      expect(page.text).toContain(`<h2>${name}</h2>`);
      expect(page.text).toContain(`<div class="price">${price}<small>TND</small></div>`);
      expect(page.text).toContain(`<input type="hidden" name="productId" value="${id}">`);
    }
    // Self-contained: no scripts, no external assets.
    expect(page.text).not.toMatch(/<script|src=|<link rel="stylesheet"|url\(/i);
  });

  it('checkout creates a pending order and its payment, then answers 303 to the sandbox checkout', async () => {
    const { orderId, paymentId, link } = await buy('espresso-beans');
    expect(link).toBe(`${sandbox.url}/checkout/sandbox-merchant/${paymentId}`);
    expect(orderId).toMatch(/^ord_[0-9a-f]{16}$/);
    const payment = sandbox.getPayment(paymentId)!;
    expect(payment).toMatchObject({
      state: 'pending',
      amount: '12500',
      developerTrackingId: orderId,
      successLink: `${shop.url}/orders/${orderId}/success`,
      failLink: `${shop.url}/orders/${orderId}/failed`,
    });
    // The plugin's signed webhook URL, on the shop's public URL.
    expect(payment.webhook).toMatch(new RegExp(`^${shop.url}/payments/webhook\\?webhook_token=`));

    // Before the confirmation, the success page does not claim the order is paid, and refreshes.
    const waiting = await client.get(`/orders/${orderId}/success`);
    expect(waiting.status).toBe(200);
    expect(waiting.text).toContain('data-state="pending"');
    expect(waiting.text).toContain('<meta http-equiv="refresh" content="2">');
    expect(await adminRow(orderId)).toContain('data-state="pending"');
  });

  it('the confirmation webhook (sandbox.completePayment) marks the order paid, once', async () => {
    const { orderId, paymentId } = await buy('moka-pot');
    const settlement = await sandbox.completePayment(paymentId);
    expect(settlement.webhook).toMatchObject({ delivered: true, status: 200, attempts: 1 });

    const page = await client.get(`/orders/${orderId}/success`);
    expect(page.text).toContain('Thank you, your order is paid');
    expect(page.text).toContain('<dd id="order-amount">27.750&nbsp;TND</dd>');
    expect(page.text).toContain('data-state="paid"');
    expect(page.text).not.toContain('http-equiv="refresh"');

    const row = await adminRow(orderId);
    expect(row).toContain('<td>Moka pot</td>');
    expect(row).toContain('27.750&nbsp;TND');
    expect(row).toContain('data-state="paid"');
    expect(row).toContain(`<td class="mono">${paymentId}</td>`);
    expect(row).toContain(`action="/admin/orders/${orderId}/refund"`);

    // A redelivery of the same confirmation is acknowledged and changes nothing.
    const delivery = sandbox.deliveries.find((d) => d.paymentId === paymentId)!;
    const again = await fetch(delivery.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: delivery.payload });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await adminRow(orderId)).toContain('data-state="paid"');
  });

  it('a forged confirmation (no signed token) is refused and changes nothing', async () => {
    const { orderId, paymentId } = await buy('pour-over-set');
    const forged = await fetch(`${shop.url}/payments/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: paymentId, status: 'completed', amount: '34900', developer_tracking_id: orderId }),
    });
    expect(forged.status).toBe(401);
    expect(await adminRow(orderId)).toContain('data-state="pending"');
  });

  it('a declined payment: the customer returning to the fail page marks the order failed', async () => {
    const { orderId, paymentId } = await buy('hand-grinder');
    await sandbox.failPayment(paymentId);
    // The service sends no webhook for a decline.
    expect(sandbox.deliveries.filter((d) => d.paymentId === paymentId)).toEqual([]);
    expect(await adminRow(orderId)).toContain('data-state="pending"');
    const page = await client.get(`/orders/${orderId}/failed`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Payment failed');
    expect(page.text).toContain('data-state="failed"');
    expect(await adminRow(orderId)).toContain('data-state="failed"');
  });

  it('admin Refund refunds a paid order; a second refund shows REFUND_NOT_ALLOWED', async () => {
    const { orderId, paymentId } = await buy('espresso-beans');
    await sandbox.completePayment(paymentId);

    const done = await client.postAndFollow(`/admin/orders/${orderId}/refund`);
    expect(done.text).toMatch(new RegExp(`<p class="flash flash-success" id="flash" role="status">Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.</p>`));
    expect(sandbox.getPayment(paymentId)!.state).toBe('refunded');
    expect(await adminRow(orderId)).toContain('data-state="refunded"');

    // A stale page's second click: the service refuses, the page explains.
    const refused = await client.postAndFollow(`/admin/orders/${orderId}/refund`);
    expect(refused.text).toContain(
      `<p class="flash flash-error" id="flash" role="status">Refund of order ${orderId} refused by the payment service: Payment cannot be refunded (REFUND_NOT_ALLOWED).</p>`,
    );
    // A flash is shown once.
    expect((await client.get('/admin')).text).not.toContain('id="flash"');
  });

  it('the sandbox test tools create a pre-authorized order that admin Cancel cancels', async () => {
    const created = await client.postAndFollow('/admin/test-orders', { productId: 'pour-over-set' });
    const match = /Pre-authorized test order (ord_[0-9a-f]+) created \(payment (pay_[0-9a-f]+)\)\./.exec(created.text);
    expect(match).not.toBeNull();
    const [, orderId, paymentId] = match!;
    expect(sandbox.getPayment(paymentId)).toMatchObject({ state: 'preauthorized', amount: '34900', developerTrackingId: orderId });
    const row = await adminRow(orderId);
    expect(row).toContain('data-state="preauthorized"');
    expect(row).toContain(`action="/admin/orders/${orderId}/cancel"`);

    const cancelled = await client.postAndFollow(`/admin/orders/${orderId}/cancel`);
    expect(cancelled.text).toContain(`Pre-authorization of order ${orderId} cancelled; the funds are released.`);
    expect(await adminRow(orderId)).toContain('data-state="cancelled"');

    const refused = await client.postAndFollow(`/admin/orders/${orderId}/cancel`);
    expect(refused.text).toContain('refused by the payment service: Pre-auth payment cannot be cancelled (CANCELLATION_FAILED).');
  });

  it('looks up card bindings: the seeded demo customer, an unknown one, and an invalid id', async () => {
    const demo = await client.get('/admin?clientId=demo-customer');
    expect(demo.text).toMatch(/<tr data-binding="[0-9a-f-]{36}">\n<td><strong>VISA<\/strong><\/td>\n<td class="mono">•••• 4242<\/td>\n<td><span class="badge badge-active">active<\/span><\/td>/);
    expect(demo.text).toContain('value="demo-customer"');

    const nobody = await client.get('/admin?clientId=nobody');
    expect(nobody.text).toContain('No card bindings for <strong>nobody</strong>.');

    const invalid = await client.get(`/admin?clientId=${encodeURIComponent('bad id!')}`);
    expect(invalid.status).toBe(200);
    expect(invalid.text).toContain(
      '<p class="flash flash-error result" id="bindings-error">The payment service does not accept this customer id: Invalid client_id (INVALID_CLIENT_ID).</p>',
    );

    const empty = await client.get('/admin?clientId=');
    expect(empty.text).toContain('Enter a customer id.');
  });

  it('escapes what the visitor typed', async () => {
    const page = await client.get(`/admin?clientId=${encodeURIComponent('"><script>alert(1)</script>')}`);
    expect(page.text).not.toContain('<script>');
    expect(page.text).toContain('value="&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"');
  });

  it('answers unknown products and orders with an HTML 404', async () => {
    const product = await client.post('/orders', { productId: 'nope' });
    expect(product.status).toBe(404);
    expect(product.headers.get('content-type')).toMatch(/^text\/html/);
    expect(product.text).toContain('This product does not exist (any more).');
    const order = await client.get('/orders/ord_0000000000000000/success');
    expect(order.status).toBe(404);
    expect(order.text).toContain('There is no order with this number.');
  });

  it('shows a 502 page, and fails the order, when the payment service refuses to create the payment', async () => {
    sandbox.fault('/api/v2/generate_payment', { status: 503, body: '<html>down</html>', times: 1 });
    const res = await client.post('/orders', { productId: 'moka-pot' });
    expect(res.status).toBe(502);
    expect(res.text).toContain('Payment service unavailable');
    expect(res.text).toContain('You have not been charged');
    const failed = /<tr id="order-(ord_[0-9a-f]+)" data-state="failed">\n<td class="mono">[^<]+<\/td>\n<td>Moka pot<\/td>/.exec((await client.get('/admin')).text);
    expect(failed).not.toBeNull();
  });

  it('never shows the private key or the webhook secret, in any page or log line', async () => {
    await client.get('/admin?clientId=demo-customer');
    expect(client.bodies.length).toBeGreaterThan(20);
    for (const secret of [sandbox.privateKey, WEBHOOK_SECRET]) {
      for (const body of client.bodies) expect(body).not.toContain(secret);
      for (const line of logger.lines) expect(line).not.toContain(secret);
    }
  });
});

describe('sample shop with real keys (pointed at a separate sandbox)', () => {
  const keys = { publicKey: 'pk_live_shop_test', privateKey: 'sk_live_0123456789_do_not_show' };
  let service: PaymentsSandbox;

  beforeAll(async () => {
    service = await PaymentsSandbox.start(keys);
  });
  afterAll(async () => {
    await service?.close();
  });

  const realEnv = (extra: Record<string, string> = {}) => ({
    PAYMENTS_PUBLIC_KEY: keys.publicKey,
    PAYMENTS_PRIVATE_KEY: keys.privateKey,
    PAYMENTS_BASE_URL: service.url,
    ...extra,
  });

  it('uses the PAYMENTS_* variables, starts no sandbox, and confirms payments through the webhook', async () => {
    const logger = new CapturingLogger();
    const secret = 'real-mode-webhook-secret-0123456789abcdef';
    const shop = await createShopApp({ port: 0, env: realEnv({ PAYMENTS_WEBHOOK_SECRET: secret }), logger });
    try {
      expect(shop.sandbox).toBeUndefined();
      expect(logger.lines.join('\n')).not.toContain('built-in sandbox');
      const client = new ShopClient(shop.url);
      const res = await client.post('/orders', { productId: 'espresso-beans' });
      expect(res.status).toBe(303);
      expect(res.location!.startsWith(`${service.url}/checkout/`)).toBe(true);
      const paymentId = paymentIdOf(res.location!);
      const orderId = service.getPayment(paymentId)!.developerTrackingId!;
      await service.completePayment(paymentId);
      expect((await client.get(`/orders/${orderId}/success`)).text).toContain('data-state="paid"');

      const admin = await client.get('/admin');
      expect(admin.text).toContain(`<code>${service.url}</code>`);
      expect(admin.text).not.toContain('id="test-tools"');
      expect(admin.text).not.toContain('id="test-mode"');
      expect((await client.post('/admin/test-orders', { productId: 'moka-pot' })).status).toBe(303);
      for (const text of [...client.bodies, ...logger.lines]) {
        expect(text).not.toContain(keys.privateKey);
        expect(text).not.toContain(secret);
      }
    } finally {
      await shop.close();
    }
  });

  it('warns that confirmations will not arrive without PAYMENTS_WEBHOOK_SECRET', async () => {
    const logger = new CapturingLogger();
    const shop = await createShopApp({ port: 0, env: realEnv(), logger });
    try {
      expect(logger.lines).toContainEqual(expect.stringMatching(/^warn \[Shop\] PAYMENTS_WEBHOOK_SECRET is not set: payment confirmations will not arrive/));
      const res = await new ShopClient(shop.url).post('/orders', { productId: 'espresso-beans' });
      expect(res.status).toBe(303);
      expect(service.getPayment(paymentIdOf(res.location!))!.webhook).toBeUndefined();
    } finally {
      await shop.close();
    }
  });

  it('refuses to start with a malformed or missing setting, naming it and freeing the port', async () => {
    await expect(createShopApp({ env: { PORT: 'eighty' }, logger: false })).rejects.toThrow('PORT must be a TCP port number');
    const port = await freePort();
    await expect(createShopApp({ port, env: { PUBLIC_URL: 'shop.example.com' }, logger: false })).rejects.toThrow('PUBLIC_URL must be an absolute http(s) URL');
    // The failed start released its socket: the port can be bound again.
    await expect(listenOn(port)).resolves.toBeUndefined();
    const missing = createShopApp({ port: 0, env: { PAYMENTS_PUBLIC_KEY: keys.publicKey, PAYMENTS_PRIVATE_KEY: keys.privateKey }, logger: false });
    await expect(missing).rejects.toThrow(/baseUrl/);
    await expect(missing).rejects.not.toThrow(keys.privateKey);
  });
});
