/**
 * The sample shop without a browser: boots `createShopApp` in-process (port 0, embedded sandbox
 * on port 0, PGlite in memory or in a temporary directory) and drives it with fetch, as the
 * pages' forms would, cookies and CSRF tokens included.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PaymentsClient } from '../../lib/express/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { OrdersRepository } from '../../sample-app/src/orders/orders.repository.js';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { CapturingLogger, customerIdOf, paymentIdOf, ShopClient } from './shop.helpers.js';
import { freePort } from '../support/ports.js';

const WEBHOOK_SECRET = 'shop-e2e-webhook-secret-0123456789abcdef';
const ADMIN_PASSWORD = 'e2e-admin-password-0123';

/** A port that was free a moment ago. */

/** Binds `port` and releases it; rejects when it is taken. */
async function listenOn(port: number): Promise<void> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, resolve));
  await new Promise((resolve) => server.close(resolve));
}

/** Helpers over one running shop in sandbox mode. */
function shopDriver(getShop: () => ShopApp, getClient: () => ShopClient) {
  const sandbox = () => getShop().sandbox!;
  return {
    /** Buys a product through the catalog's form; returns the order and payment ids and the link. */
    async buy(productId = 'espresso-beans', options: { saveCard?: boolean } = {}) {
      const res = await getClient().buy(productId, options);
      expect(res.status).toBe(303);
      const link = res.location!;
      const paymentId = paymentIdOf(link);
      const orderId = sandbox().getPayment(paymentId)!.developerTrackingId!;
      return { orderId, paymentId, link };
    },
    /** The admin table row of an order. */
    async adminRow(orderId: string): Promise<string> {
      const page = await getClient().get('/admin');
      const match = new RegExp(`<tr id="order-${orderId}"[\\s\\S]*?</tr>`).exec(page.text);
      if (!match) throw new Error(`order ${orderId} is not on /admin (${page.status})`);
      return match[0];
    },
    /** What the customer sees coming back from the checkout, as the service sends them. */
    returnTo(orderId: string, paymentId: string, page: 'success' | 'failed') {
      return getClient().get(`/orders/${orderId}/${page}?payment_id=${encodeURIComponent(paymentId)}`);
    },
  };
}

describe('sample shop in sandbox mode', () => {
  let shop: ShopApp;
  let sandbox: PaymentsSandbox;
  let client: ShopClient;
  const logger = new CapturingLogger();
  const { buy, adminRow, returnTo } = shopDriver(
    () => shop,
    () => client,
  );

  beforeAll(async () => {
    // env given in code keeps the developer's shell (a real PAYMENTS_PUBLIC_KEY...) out of the test.
    shop = await createShopApp({
      port: 0,
      sandboxPort: 0,
      env: { PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET, DATA_DIR: 'memory://' },
      logger,
    });
    sandbox = shop.sandbox!;
    client = new ShopClient(shop.url);
    await client.signIn(shop.adminPassword);
  }, 30_000);

  afterAll(async () => {
    await shop?.close();
  });

  it('starts the embedded sandbox on 127.0.0.1 and prints a generated admin password once', () => {
    expect(sandbox).toBeInstanceOf(PaymentsSandbox);
    expect(shop.url).toBe(`http://localhost:${shop.port}`);
    expect(logger.lines).toContainEqual(
      `log [Shop] No PAYMENTS_* keys set: using the built-in sandbox at ${sandbox.url} (no real money moves)`,
    );
    expect(shop.adminPassword).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(logger.lines.filter((l) => l.includes(shop.adminPassword))).toEqual([
      `log [Shop] Admin password for this run (set ADMIN_PASSWORD to choose one): ${shop.adminPassword}`,
    ]);
    expect((shop.server.address() as net.AddressInfo).address).toBe('127.0.0.1');
  });

  it('serves the catalog: every product with its price, a Buy form with its CSRF token and a save-card box', async () => {
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
      expect(page.markup).toContain(`<input type="hidden" name="productId" value="${id}">`);
      expect(page.markup).toContain(`<input type="checkbox" name="saveCard" value="on" id="save-${id}">`);
    }
    expect(page.text).toContain('<h2>Espresso machine<span class="tag">Charged when shipped</span></h2>');
    expect(page.text).toContain('>Reserve now</button>');
    expect(page.text.match(/name="_csrf" value="[^"]+"/g)).toHaveLength(5);
    // Self-contained: no scripts, no external assets.
    expect(page.text).not.toMatch(/<script|src=|<link rel="stylesheet"|url\(/i);
    // The customer and CSRF cookies: HttpOnly, SameSite.
    const cookies = page.headers.getSetCookie().join('\n');
    // Signed (cookie-parser, `s:<id>.<HMAC>`): a planted id is not taken (shop-sessions.e2e-spec.ts).
    expect(customerIdOf(client)).toMatch(/^cus_[0-9a-f]{16}$/);
    expect(cookies).toMatch(/shop_csrf=[^;]+; Path=\/; HttpOnly; SameSite=Strict/);
  });

  it('refuses a checkout without the CSRF token (403 page), and one with another visitor’s token', async () => {
    const bare = await client.post('/orders', { productId: 'espresso-beans' }, { csrf: false });
    expect(bare.status).toBe(403);
    expect(bare.headers.get('content-type')).toMatch(/^text\/html/);
    expect(bare.text).toContain('This form has expired or was not sent from our pages.');

    const other = new ShopClient(shop.url);
    await other.get('/');
    const stolen = await client.post('/orders', { productId: 'espresso-beans', _csrf: other.csrfToken! });
    expect(stolen.status).toBe(403);
    expect(sandbox.payments().length).toBe(0);
  });

  it('checkout creates a pending order and its payment, then answers 303 to the sandbox checkout', async () => {
    const { orderId, paymentId, link } = await buy('espresso-beans');
    expect(link).toBe(`${sandbox.url}/checkout/sandbox-merchant/${paymentId}`);
    expect(orderId).toMatch(/^ord_[0-9a-f]{16}$/);
    const payment = sandbox.getPayment(paymentId)!;
    expect(payment).toMatchObject({
      kind: 'standard',
      state: 'pending',
      amount: '12500',
      developerTrackingId: orderId,
      successLink: `${shop.url}/orders/${orderId}/success`,
      failLink: `${shop.url}/orders/${orderId}/failed`,
    });
    expect(payment.clientId).toBeUndefined();
    // The plugin's signed webhook URL, on the shop's public URL.
    expect(payment.webhook).toMatch(new RegExp(`^${shop.url}/payments/webhook`));

    // Before paying, the return page asks the service, which says PENDING: "processing", refreshing.
    const verifies = sandbox.verifyCalls(paymentId);
    const waiting = await returnTo(orderId, paymentId, 'success');
    expect(waiting.status).toBe(200);
    expect(waiting.text).toContain('Your payment is being processed');
    expect(waiting.text).toContain('data-state="pending"');
    expect(waiting.text).toContain('data-outcome="pending"');
    expect(waiting.markup).toContain('<meta http-equiv="refresh" content="3">');
    expect(sandbox.verifyCalls(paymentId)).toBe(verifies + 1);
    expect(await adminRow(orderId)).toContain('data-state="pending"');
  });

  it('the webhook marks the order paid, once; the return page then shows it without asking the service again', async () => {
    const { orderId, paymentId } = await buy('moka-pot');
    const settlement = await sandbox.completePayment(paymentId);
    expect(settlement.webhook).toMatchObject({ delivered: true });

    const verifies = sandbox.verifyCalls(paymentId);
    const page = await returnTo(orderId, paymentId, 'success');
    expect(page.text).toContain('Thank you, your order is paid');
    expect(page.text).toContain('<dd id="order-amount">27.750&nbsp;TND</dd>');
    expect(page.text).toContain('data-state="paid"');
    expect(page.text).not.toContain('http-equiv="refresh"');
    expect(sandbox.verifyCalls(paymentId)).toBe(verifies);

    const row = await adminRow(orderId);
    expect(row).toContain('<td>Moka pot</td>');
    expect(row).toContain('27.750&nbsp;TND');
    expect(row).toContain('data-state="paid"');
    expect(row).toContain(`<td class="mono">${paymentId}</td>`);
    expect(row).toContain(`href="/admin/orders/${orderId}/refund"`);

    // A redelivery of the same webhook is acknowledged and changes nothing.
    const delivery = sandbox.deliveries.find((d) => d.paymentId === paymentId)!;
    const again = await fetch(delivery.url, {
      method: delivery.method,
      ...(delivery.method === 'POST' && { headers: { 'content-type': 'application/json' }, body: delivery.payload }),
    });
    expect(again.status).toBe(200);
    const events = await shop.app.get(OrdersRepository).events(orderId);
    expect(events.map((e) => [e.kind, e.source, e.serviceStatus ?? null])).toEqual([
      ['created', 'checkout', null],
      ['paid', 'webhook', 'SUCCESS'],
    ]);
  });

  it('a forged webhook (no signed token) is refused and changes nothing', async () => {
    const { orderId, paymentId } = await buy('pour-over-set');
    const forged = await fetch(`${shop.url}/payments/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        payment_id: paymentId,
        status: 'SUCCESS',
        amount: '34900',
        developer_tracking_id: orderId,
      }),
    });
    expect(forged.status).toBeGreaterThanOrEqual(400);
    expect(forged.status).toBeLessThan(500);
    expect(await adminRow(orderId)).toContain('data-state="pending"');
  });

  it('a declined payment: the failure is verified and the order failed, on either return page', async () => {
    const { orderId, paymentId } = await buy('hand-grinder');
    await sandbox.failPayment(paymentId);
    const page = await returnTo(orderId, paymentId, 'failed');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Payment failed');
    expect(page.text).toContain('data-state="failed"');
    expect(await adminRow(orderId)).toContain('data-state="failed"');
    // A "success" URL typed by hand changes nothing: the verified state is failed.
    expect((await returnTo(orderId, paymentId, 'success')).text).toContain('data-state="failed"');
  });

  it('an expired session: the return page shows it expired', async () => {
    const { orderId, paymentId } = await buy('espresso-beans');
    await sandbox.expirePayment(paymentId);
    const page = await returnTo(orderId, paymentId, 'failed');
    expect(page.text).toContain('Payment session expired');
    expect(page.text).toContain('data-state="expired"');
  });

  it('a payment_id in the URL naming another payment cannot make an order paid', async () => {
    const paid = await buy('moka-pot');
    await sandbox.completePayment(paid.paymentId);
    const { orderId } = await buy('moka-pot');
    const page = await returnTo(orderId, paid.paymentId, 'success');
    expect(page.text).toContain('data-state="pending"');
  });

  it('"save my card" sends the customer id as client_id; once paid, the admin lookup shows the card', async () => {
    const { orderId, paymentId } = await buy('espresso-beans', { saveCard: true });
    const customerId = customerIdOf(client);
    expect(sandbox.getPayment(paymentId)!.clientId).toBe(customerId);
    await sandbox.completePayment(paymentId);
    const page = await returnTo(orderId, paymentId, 'success');
    expect(page.text).toContain(`Saved for customer <span class="mono">${customerId}</span>`);
    expect(await adminRow(orderId)).toContain(`<td class="mono">${customerId}</td>`);

    const lookup = await client.get(`/admin?clientId=${customerId}`);
    expect(lookup.markup).toMatch(
      /<tr data-binding="[^"]+"><td><strong>[A-Z]+<\/strong><\/td><td class="mono">•••• [0-9]{4}<\/td><td><span class="badge badge-active">active<\/span><\/td>/,
    );
  });

  it('"capture later": checkout pre-authorizes; the order is authorized; the admin captures a part', async () => {
    const { orderId, paymentId } = await buy('espresso-machine');
    expect(sandbox.getPayment(paymentId)).toMatchObject({ kind: 'preauthorized', amount: '649000' });
    await sandbox.completePayment(paymentId);
    const page = await returnTo(orderId, paymentId, 'success');
    expect(page.text).toContain('Thank you, your order is confirmed');
    expect(page.text).toContain('data-state="authorized"');
    const row = await adminRow(orderId);
    expect(row).toContain('data-state="authorized"');
    expect(row).toContain(`action="/admin/orders/${orderId}/capture"`);
    expect(row).toContain(`action="/admin/orders/${orderId}/cancel"`);

    const bad = await client.postAndFollow(`/admin/orders/${orderId}/capture`, { amount: '700' });
    expect(bad.text).toContain('Enter an amount in TND from 0.001 to 649.000');
    const done = await client.postAndFollow(`/admin/orders/${orderId}/capture`, { amount: '600.5' });
    expect(done.text).toContain(`Captured 600.500 TND of order ${orderId}; the remaining 48.500 TND are released.`);
    expect(sandbox.getPayment(paymentId)).toMatchObject({ state: 'captured', capturedAmount: '600500' });
    const captured = await adminRow(orderId);
    expect(captured).toContain('data-state="captured"');
    expect(captured).toContain('data-captured="600500"');
    // A stale tab's second capture: the order is no longer authorized.
    const again = await client.postAndFollow(`/admin/orders/${orderId}/capture`, { amount: '' });
    expect(again.text).toContain(`Order ${orderId} has no held amount to capture (it is captured).`);
  });

  it('"capture later": an empty amount captures all; Refund… on the captured order refunds the captured amount', async () => {
    const { orderId, paymentId } = await buy('espresso-machine');
    await sandbox.completePayment(paymentId);
    // The admin posts from the admin page, whose forms carry a token bound to the admin session
    // (the catalog's is not: the session cookie is scoped to /admin).
    expect(await adminRow(orderId)).toContain('data-state="authorized"');
    const all = await client.postAndFollow(`/admin/orders/${orderId}/capture`, { amount: '' });
    expect(all.text).toContain(`Captured 649.000 TND of order ${orderId}.</p>`);
    expect(sandbox.getPayment(paymentId)).toMatchObject({ state: 'captured', capturedAmount: '649000' });
    expect(sandbox.requests.filter((r) => r.path === '/api/v2/confirm_payment').at(-1)?.body).toBe(
      JSON.stringify({ payment_id: paymentId }),
    );

    // Follow the row's Refund… link, as a click would, then confirm.
    const row = await adminRow(orderId);
    expect(row).toContain('data-state="captured"');
    const href = /<a [^>]*href="([^"]+)"[^>]*data-action="refund"/.exec(row)?.[1];
    expect(href).toBe(`/admin/orders/${orderId}/refund`);
    const confirm = await client.get(href!);
    expect(confirm.text).toContain('<h1>Refund 649.000&nbsp;TND?</h1>');
    expect(confirm.markup).toContain('The customer gets the captured amount back.');
    const done = await client.postAndFollow(href!, { confirm: 'yes' });
    expect(done.text).toMatch(
      new RegExp(`id="flash" role="status">Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.</p>`),
    );
    expect(sandbox.getPayment(paymentId)).toMatchObject({ state: 'refunded', capturedAmount: '649000' });
    expect(await adminRow(orderId)).toContain('data-state="refunded"');
  });

  it('"capture later": the admin cancels a hold; a second cancel shows the refusal', async () => {
    const { orderId, paymentId } = await buy('espresso-machine');
    await sandbox.completePayment(paymentId);
    // The admin posts from the admin page, whose forms carry a token bound to the admin session
    // (the catalog's is not: the session cookie is scoped to /admin).
    expect(await adminRow(orderId)).toContain('data-state="authorized"');
    const cancelled = await client.postAndFollow(`/admin/orders/${orderId}/cancel`);
    expect(cancelled.text).toContain(`Pre-authorization of order ${orderId} cancelled; the funds are released.`);
    expect(await adminRow(orderId)).toContain('data-state="cancelled"');
    const refused = await client.postAndFollow(`/admin/orders/${orderId}/cancel`);
    expect(refused.text).toContain('(CANCELLATION_FAILED)');
  });

  it('refund asks for confirmation first; then refunds once; a second refund shows REFUND_NOT_ALLOWED', async () => {
    const { orderId, paymentId } = await buy('espresso-beans');
    await sandbox.completePayment(paymentId);

    const confirm = await client.get(`/admin/orders/${orderId}/refund`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<h1>Refund 12.500&nbsp;TND?</h1>');
    expect(confirm.markup).toContain('<input type="hidden" name="confirm" value="yes">');
    // Posting without the confirmation only leads to the confirmation page.
    const unconfirmed = await client.post(`/admin/orders/${orderId}/refund`);
    expect(unconfirmed.status).toBe(303);
    expect(unconfirmed.location).toBe(`/admin/orders/${orderId}/refund`);
    expect(sandbox.getPayment(paymentId)!.state).toBe('paid');

    const done = await client.postAndFollow(`/admin/orders/${orderId}/refund`, { confirm: 'yes' });
    expect(done.text).toMatch(
      new RegExp(
        `<p class="flash flash-success" id="flash" role="status">Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.</p>`,
      ),
    );
    expect(sandbox.getPayment(paymentId)!.state).toBe('refunded');
    expect(await adminRow(orderId)).toContain('data-state="refunded"');

    const refused = await client.postAndFollow(`/admin/orders/${orderId}/refund`, { confirm: 'yes' });
    expect(refused.text).toContain(`Refund of order ${orderId} refused by the payment service:`);
    expect(refused.text).toContain('(REFUND_NOT_ALLOWED).');
    // A flash is shown once.
    expect((await client.get('/admin')).text).not.toContain('id="flash"');
  });

  it('the payments desk puts a payment id into its URLs encoded: an id with / ? # & % and spaces reaches its action intact', async () => {
    const payments = shop.app.get<PaymentsClient>(getPaymentsClientToken());
    const weird = 'pay/1 ?x=#&%2F';
    await payments.store.saveOutcome(
      {
        paymentId: weird,
        outcome: 'confirmed',
        status: 'SUCCESS',
        source: 'webhook',
        handlers: 'failed',
        attempts: 1,
        lastError: 'stock service down (test)',
        updatedAt: new Date().toISOString(),
      },
      3_600_000,
    );
    const page = `/admin/desk/payments/${encodeURIComponent(weird)}`;
    expect(page).toBe('/admin/desk/payments/pay%2F1%20%3Fx%3D%23%26%252F');
    const shown = await client.get(page);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('stock service down (test)');
    const action = `${page}/run-handlers`;
    expect(shown.text).toContain(`action="${action.replace(/&/g, '&amp;')}"`);
    // The action read the id whole: it sends the browser back to that payment's page, encoded again.
    const done = await client.post(action);
    expect(done.status).toBe(303);
    expect(done.location?.split('?done=')[0]).toBe(page);
    const back = await client.get(done.location!);
    expect(back.status).toBe(200);
    expect(back.text).toContain('stock service down (test)');
  });

  it('the admin links to the payments desk, which lists payments whose handlers failed and runs them again', async () => {
    const repo = shop.app.get(OrdersRepository);
    const original = repo.transition.bind(repo);
    repo.transition = async () => {
      throw new Error('database unavailable (test)');
    };
    let ids;
    try {
      ids = await buy('pour-over-set');
      await sandbox.completePayment(ids.paymentId, { requireDelivery: false });
    } finally {
      repo.transition = original;
    }
    const { orderId, paymentId } = ids;
    expect(await adminRow(orderId)).toContain('data-state="pending"');
    const admin = await client.get('/admin');
    expect(admin.text).toContain('<a class="button" id="open-desk" href="/admin/desk">');
    const desk = await client.get('/admin/desk');
    expect(desk.status).toBe(200);
    const failing = /<section id="failing">[\s\S]*?<\/section>/.exec(desk.text)?.[0];
    const row = new RegExp(`<tr><td><a href="/admin/desk/payments/${paymentId}">[\\s\\S]*?</tr>`).exec(
      failing ?? '',
    )?.[0];
    expect(row).toContain(`<td>${orderId}</td>`);
    expect(row).toContain('database unavailable (test)');
    expect(row).toContain(`action="/admin/desk/payments/${paymentId}/run-handlers"`);

    const retried = await client.postAndFollow(`/admin/desk/payments/${paymentId}/run-handlers`);
    expect(retried.text).toContain('The handlers ran and succeeded: the payment is settled.');
    const after = await client.get('/admin/desk');
    expect(/<section id="failing">[\s\S]*?<\/section>/.exec(after.text)?.[0]).not.toContain(paymentId);
    expect(await adminRow(orderId)).toContain('data-state="paid"');
  });

  it('looks up card bindings: the seeded demo customer, an unknown one, and an invalid id', async () => {
    const demo = await client.get('/admin?clientId=demo-customer');
    expect(demo.markup).toMatch(
      /<tr data-binding="[0-9a-f-]{36}"><td><strong>VISA<\/strong><\/td><td class="mono">•••• 4242<\/td><td><span class="badge badge-active">active<\/span><\/td>/,
    );
    expect(demo.text).toContain('value="demo-customer"');
    expect((await client.get('/admin?clientId=nobody')).text).toContain(
      'No card bindings for <strong>nobody</strong>.',
    );
    // Refused by the plugin before sending (the sandbox takes any id the plugin sends)...
    const tooLong = await client.get(`/admin?clientId=${'x'.repeat(257)}`);
    expect(tooLong.status).toBe(200);
    expect(tooLong.text).toContain(
      'id="bindings-error">Bindings lookup failed: clientId must be at most 256 characters.</p>',
    );
    // ...and refused by the service, as a real one may answer.
    sandbox.fault('/api/v2/bindings/list', {
      status: 400,
      body: '{"result":{"status":400,"message":"Invalid client_id"}}',
      times: 1,
    });
    const invalid = await client.get(`/admin?clientId=${encodeURIComponent('bad id!')}`);
    expect(invalid.status).toBe(200);
    expect(invalid.text).toContain(
      '<p class="flash flash-error result" id="bindings-error">The payment service does not accept this customer id: Invalid client_id (INVALID_CLIENT_ID).</p>',
    );
    expect((await client.get(`/admin?clientId=${encodeURIComponent('bad id!')}`)).text).toContain(
      'No card bindings for <strong>bad id!</strong>.',
    );
    expect((await client.get('/admin?clientId=')).text).toContain('Enter a customer id.');
  });

  it('the admin needs a session: login page, wrong password, forged cookie, CSRF on every form, sign out', async () => {
    const visitor = new ShopClient(shop.url);
    const gate = await visitor.get('/admin?clientId=demo-customer');
    expect(gate.status).toBe(303);
    expect(gate.location).toBe('/admin/login?next=%2Fadmin%3FclientId%3Ddemo-customer');
    for (const path of ['/admin/orders/ord_0000000000000000/refund', '/admin/orders/ord_0000000000000000/cancel']) {
      await visitor.get('/');
      expect((await visitor.post(path, { confirm: 'yes' })).status).toBe(303);
    }
    // The payments desk, behind the same sign-in: 401 for its pages and its actions.
    expect((await visitor.get('/admin/desk')).status).toBe(401);
    expect((await visitor.get('/admin/desk/payments/pay_1')).status).toBe(401);
    expect((await visitor.post('/admin/desk/payments/pay_1/run-handlers', {})).status).toBe(401);
    const login = await visitor.get(gate.location!);
    expect(login.markup).toContain('<input type="hidden" name="next" value="/admin?clientId=demo-customer">');
    const wrong = await visitor.post('/admin/login', { password: 'guess', next: '/admin' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong password.');
    expect((await visitor.post('/admin/login', { password: shop.adminPassword }, { csrf: false })).status).toBe(403);

    // A session cookie not signed by the shop is ignored.
    visitor.cookies.set('shop_admin', 's%3A0123456789abcdef0123456789abcdef.9999999999999.forged');
    expect((await visitor.get('/admin')).status).toBe(303);
    visitor.cookies.delete('shop_admin');

    const signedIn = await visitor.post('/admin/login', {
      password: shop.adminPassword,
      next: 'https://evil.example/',
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe('/admin');
    const session = signedIn.headers.getSetCookie().find((c) => c.startsWith('shop_admin='))!;
    expect(session).toMatch(/; Path=\/admin; Expires=[^;]+; HttpOnly; SameSite=Strict$/);
    const admin = await visitor.get('/admin');
    expect(admin.status).toBe(200);
    // Every form of the admin page that changes something carries the token.
    const postForms = admin.text.match(/<form method="post"[^>]*>(?:(?!<\/form>)[\s\S])*<\/form>/g) ?? [];
    expect(postForms.length).toBeGreaterThanOrEqual(1);
    for (const form of postForms) expect(form).toContain('name="_csrf"');
    // The customer-side token (made before signing in) is bound to the old session: refused.
    const before = new ShopClient(shop.url);
    await before.get('/admin/login');
    const tokenBefore = before.csrfToken!;
    await before.post('/admin/login', { password: shop.adminPassword });
    expect((await before.post('/admin/logout', { _csrf: tokenBefore })).status).toBe(403);

    const out = await visitor.post('/admin/logout');
    expect(out.status).toBe(303);
    expect((await visitor.get('/admin')).status).toBe(303);
  });

  it('escapes what the visitor typed', async () => {
    const page = await client.get(`/admin?clientId=${encodeURIComponent('"><script>alert(1)</script>')}`);
    expect(page.text).not.toContain('<script>');
    expect(page.text).toContain('value="&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"');
  });

  it('answers unknown products, orders and pages with an HTML 404; the webhook path keeps JSON', async () => {
    // Posted from the catalog page, with its form's token.
    await client.get('/');
    const product = await client.post('/orders', { productId: 'nope' });
    expect(product.status).toBe(404);
    expect(product.headers.get('content-type')).toMatch(/^text\/html/);
    expect(product.text).toContain('This product does not exist (any more).');
    const order = await client.get('/orders/ord_0000000000000000/success');
    expect(order.status).toBe(404);
    expect(order.text).toContain('There is no order with this number.');
    const adminOrder = await client.get('/admin/orders/nope/refund');
    expect(adminOrder.status).toBe(404);
    expect(adminOrder.text).toContain('There is no order with this number.');
    const nowhere = await client.get('/no/such/page');
    expect(nowhere.status).toBe(404);
    expect(nowhere.headers.get('content-type')).toMatch(/^text\/html/);
    expect(nowhere.text).toContain('There is no page at this address.');
    const hook = await fetch(`${shop.url}/payments/webhook/nothing-here`);
    expect(hook.status).toBeGreaterThanOrEqual(400);
    expect(hook.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('shows a 502 page, and fails the order, when the payment service refuses to create the payment', async () => {
    sandbox.fault('/api/v2/generate_payment', { status: 503, body: '<html>down</html>', times: 1 });
    const res = await client.buy('moka-pot');
    expect(res.status).toBe(502);
    expect(res.text).toContain('Payment service unavailable');
    expect(res.text).toContain('You have not been charged');
    const failed =
      /<tr id="order-(ord_[0-9a-f]+)" data-state="failed"><td class="mono">[^<]+<\/td><td>Moka pot<\/td>/.exec(
        (await client.get('/admin')).markup,
      );
    expect(failed).not.toBeNull();
  });

  it('never shows the private key or the webhook secret, in any page or log line', async () => {
    await client.get('/admin?clientId=demo-customer');
    expect(client.bodies.length).toBeGreaterThan(20);
    for (const secret of [sandbox.privateKey, WEBHOOK_SECRET]) {
      for (const body of client.bodies) expect(body).not.toContain(secret);
      for (const line of logger.lines) expect(line).not.toContain(secret);
    }
    for (const body of client.bodies) expect(body).not.toContain(shop.adminPassword);
  });
});

describe('sample shop start-up', () => {
  let shop: ShopApp;
  const duringStartUp: Array<{ status: number; retryAfter: string | null; text: string }> = [];

  beforeAll(async () => {
    // HOST given: the shop listens there even in sandbox mode (default 127.0.0.1).
    shop = await createShopApp({
      port: 0,
      sandboxPort: 0,
      env: { HOST: '0.0.0.0', DATA_DIR: 'memory://' },
      logger: false,
      whileStarting: async (server) => {
        const { port } = server.address() as net.AddressInfo;
        // A page and a webhook delivery arriving before the app is built: answered at once.
        for (const [method, path] of [
          ['GET', '/'],
          ['POST', '/payments/webhook/some-token?payment_id=pay_1'],
        ]) {
          const res = await fetch(`http://127.0.0.1:${port}${path}`, {
            method,
            signal: AbortSignal.timeout(5000),
            ...(method === 'POST' && {
              body: '{"payment_id":"pay_1"}',
              headers: { 'content-type': 'application/json' },
            }),
          });
          duringStartUp.push({
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            text: await res.text(),
          });
        }
      },
    });
  }, 30_000);
  afterAll(async () => {
    await shop?.close();
  });

  it('answers 503 with Retry-After while the app is being built, then serves the shop on the same socket', async () => {
    expect(duringStartUp).toEqual([
      { status: 503, retryAfter: '1', text: 'The shop is starting; try again in a moment.\n' },
      { status: 503, retryAfter: '1', text: 'The shop is starting; try again in a moment.\n' },
    ]);
    const { port } = shop.server.address() as net.AddressInfo;
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Catalog · Medina Roasters</title>');
    // Only the Express app answers now: one request listener.
    expect(shop.server.listeners('request')).toHaveLength(1);
  });

  it('HOST overrides the 127.0.0.1 bind of sandbox mode', () => {
    expect((shop.server.address() as net.AddressInfo).address).toBe('0.0.0.0');
  });
});

describe('sample shop without webhooks: the return page and the start-up reconciliation decide', () => {
  // The service outlives the shop (as the real one does): a sandbox of the test's own, used
  // with "real" keys, so a restarted shop finds its payments there.
  let service: PaymentsSandbox;
  let dataDir: string;
  const env = () => ({
    PAYMENTS_PUBLIC_KEY: service.publicKey,
    PAYMENTS_PRIVATE_KEY: service.privateKey,
    PAYMENTS_BASE_URL: service.url,
    // The webhook URL points nowhere: nothing reaches the shop but the customer.
    PAYMENTS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:9/payments/webhook',
    PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ADMIN_PASSWORD,
    DATA_DIR: dataDir,
  });

  beforeAll(async () => {
    service = await PaymentsSandbox.start();
    dataDir = await mkdtemp(join(tmpdir(), 'shop-e2e-'));
  });
  afterAll(async () => {
    await service?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('paid as soon as the customer is back; declined -> failed; paid while down -> paid at the next start', async () => {
    let shop = await createShopApp({ port: 0, env: env(), logger: false });
    let client = new ShopClient(shop.url);
    const { buy, returnTo, adminRow } = shopDriver(
      () => ({ ...shop, sandbox: service }),
      () => client,
    );
    let paidWhileDown: { orderId: string; paymentId: string };
    let paidOrder: string;
    try {
      const paid = await buy('moka-pot');
      await service.completePayment(paid.paymentId, { requireDelivery: false });
      const page = await returnTo(paid.orderId, paid.paymentId, 'success');
      expect(page.text).toContain('Thank you, your order is paid');
      const events = await shop.app.get(OrdersRepository).events(paid.orderId);
      expect(events.map((e) => [e.kind, e.source])).toEqual([
        ['created', 'checkout'],
        ['paid', 'return'],
      ]);
      paidOrder = paid.orderId;

      const declined = await buy('hand-grinder');
      await service.failPayment(declined.paymentId, { requireDelivery: false });
      expect((await returnTo(declined.orderId, declined.paymentId, 'failed')).text).toContain('data-state="failed"');

      paidWhileDown = await buy('espresso-beans');
    } finally {
      await shop.close();
    }
    // The customer pays while the shop is down, and never comes back.
    await service.completePayment(paidWhileDown.paymentId, { requireDelivery: false });

    shop = await createShopApp({ port: 0, env: env(), logger: false });
    try {
      expect(await shop.startupReconciliation).toEqual({ checked: 1, outcomes: { confirmed: 1 } });
      client = new ShopClient(shop.url);
      await client.signIn(ADMIN_PASSWORD);
      expect(await adminRow(paidWhileDown.orderId)).toContain('data-state="paid"');
      expect(await adminRow(paidOrder)).toContain('data-state="paid"');
      const events = await shop.app.get(OrdersRepository).events(paidWhileDown.orderId);
      expect(events.map((e) => [e.kind, e.source])).toEqual([
        ['created', 'checkout'],
        ['paid', 'reconciliation'],
      ]);
    } finally {
      await shop.close();
    }
  }, 60_000);
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
    ADMIN_PASSWORD,
    DATA_DIR: 'memory://',
    ...extra,
  });

  it('uses the PAYMENTS_* variables and ADMIN_PASSWORD, starts no sandbox, and confirms payments through the webhook', async () => {
    const logger = new CapturingLogger();
    const secret = 'real-mode-webhook-secret-0123456789abcdef';
    const shop = await createShopApp({ port: 0, env: realEnv({ PAYMENTS_WEBHOOK_SECRET: secret }), logger });
    try {
      expect(shop.sandbox).toBeUndefined();
      expect(shop.adminPassword).toBe(ADMIN_PASSWORD);
      expect(logger.lines.join('\n')).not.toContain('built-in sandbox');
      expect(logger.lines.join('\n')).not.toContain('Admin password');
      const client = new ShopClient(shop.url);
      const res = await client.buy('espresso-beans');
      expect(res.status).toBe(303);
      expect(res.location!.startsWith(`${service.url}/checkout/`)).toBe(true);
      const paymentId = paymentIdOf(res.location!);
      const orderId = service.getPayment(paymentId)!.developerTrackingId!;
      await service.completePayment(paymentId);
      expect((await client.get(`/orders/${orderId}/success?payment_id=${paymentId}`)).text).toContain(
        'data-state="paid"',
      );

      await client.signIn(ADMIN_PASSWORD);
      const admin = await client.get('/admin');
      expect(admin.text).toContain(`<code>${service.url}</code>`);
      expect(admin.text).not.toContain('id="test-mode"');
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
      expect(logger.lines).toContainEqual(
        expect.stringMatching(
          /^warn \[Shop\] PAYMENTS_WEBHOOK_SECRET is not set: payment confirmations will not arrive/,
        ),
      );
      const res = await new ShopClient(shop.url).buy('espresso-beans');
      expect(res.status).toBe(303);
      expect(service.getPayment(paymentIdOf(res.location!))!.webhook).toBeUndefined();
    } finally {
      await shop.close();
    }
  });

  it('refuses to start with a malformed or missing setting, naming it and freeing the port', async () => {
    await expect(createShopApp({ env: { PORT: 'eighty', DATA_DIR: 'memory://' }, logger: false })).rejects.toThrow(
      'PORT must be a TCP port number',
    );
    const port = await freePort();
    await expect(
      createShopApp({ port, env: { PUBLIC_URL: 'shop.example.com', DATA_DIR: 'memory://' }, logger: false }),
    ).rejects.toThrow('PUBLIC_URL must be an absolute http(s) URL');
    // The failed start released its socket: the port can be bound again.
    await expect(listenOn(port)).resolves.toBeUndefined();
    const noPassword = realEnv();
    delete (noPassword as Record<string, string | undefined>).ADMIN_PASSWORD;
    await expect(createShopApp({ port: 0, env: noPassword, logger: false })).rejects.toThrow(
      'ADMIN_PASSWORD must be set',
    );
    await expect(createShopApp({ port: 0, env: realEnv({ ADMIN_PASSWORD: 'short' }), logger: false })).rejects.toThrow(
      'at least 12 characters',
    );
    await expect(
      createShopApp({ port: 0, env: realEnv({ DATABASE_URL: 'not a url' }), logger: false }),
    ).rejects.toThrow('DATABASE_URL must be a connection string');
    const missing = createShopApp({
      port: 0,
      env: {
        PAYMENTS_PUBLIC_KEY: keys.publicKey,
        PAYMENTS_PRIVATE_KEY: keys.privateKey,
        ADMIN_PASSWORD,
        DATA_DIR: 'memory://',
      },
      logger: false,
    });
    await expect(missing).rejects.toThrow(/baseUrl|PAYMENTS_BASE_URL/);
    await expect(missing).rejects.not.toThrow(keys.privateKey);
    // Seven app starts in a row: on two loaded cores (CI) they outlast the default 30 s.
  }, 120_000);
});
