/**
 * The sample shop's sessions and logs (issue 19, item 7): the admin session lives in the shop's
 * database and dies at sign-out, the customer cookie is signed, and what a visitor typed cannot
 * forge a log line.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { CapturingLogger, customerIdOf, paymentIdOf, ShopClient } from './shop.helpers.js';

const WEBHOOK_SECRET = 'shop-sessions-webhook-secret-0123456789ab';

describe('sample shop: sessions, the customer cookie and the logs', () => {
  let shop: ShopApp;
  let sandbox: PaymentsSandbox;
  const logger = new CapturingLogger();

  beforeAll(async () => {
    shop = await createShopApp({
      port: 0,
      sandboxPort: 0,
      env: { PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET, DATA_DIR: 'memory://' },
      logger,
    });
    sandbox = shop.sandbox!;
  }, 30_000);

  afterAll(async () => {
    await shop?.close();
  });

  async function sessionRows(): Promise<number> {
    const result = await shop.database.db.execute(
      sql`SELECT count(*)::int AS n FROM shop_sessions WHERE expires_at > now()`,
    );
    return (result as { rows: Array<{ n: number }> }).rows[0].n;
  }

  it('signing out ends the session on the server: the old cookie, replayed, no longer opens the admin', async () => {
    const admin = new ShopClient(shop.url);
    await admin.signIn(shop.adminPassword);
    const stolen = admin.cookies.get('shop_admin')!;
    expect(stolen).toMatch(/^s%3A[A-Za-z0-9_.%-]+$/);

    // While signed in, the cookie alone opens the admin (from another client too).
    const replay = new ShopClient(shop.url);
    replay.cookies.set('shop_admin', stolen);
    expect((await replay.get('/admin')).status).toBe(200);

    await admin.get('/admin');
    const out = await admin.post('/admin/logout');
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie().join('\n')).toMatch(/shop_admin=; Path=\/admin; Expires=Thu, 01 Jan 1970/);

    // The same signed, unexpired cookie after sign-out: refused, back to the login page.
    const after = new ShopClient(shop.url);
    after.cookies.set('shop_admin', stolen);
    const gate = await after.get('/admin');
    expect(gate.status).toBe(303);
    expect(gate.location).toBe('/admin/login?next=%2Fadmin');
  });

  it("the session is a row of the shop's database while signed in, deleted at sign-out", async () => {
    const rowsBefore = await sessionRows();
    const admin = new ShopClient(shop.url);
    await admin.signIn(shop.adminPassword);
    expect(await sessionRows()).toBe(rowsBefore + 1);
    await admin.get('/admin');
    expect((await admin.post('/admin/logout')).status).toBe(303);
    expect(await sessionRows()).toBe(rowsBefore);
  });

  it('signing in gives a new session id, whatever cookie the browser brought', async () => {
    const first = new ShopClient(shop.url);
    await first.signIn(shop.adminPassword);
    const planted = first.cookies.get('shop_admin')!;
    await first.get('/admin');
    await first.post('/admin/logout');

    const victim = new ShopClient(shop.url);
    victim.cookies.set('shop_admin', planted);
    await victim.signIn(shop.adminPassword);
    expect(victim.cookies.get('shop_admin')).not.toBe(planted);
  });

  it('the customer cookie is signed: a planted cus_<hex> is replaced, and never becomes a saved card’s client_id', async () => {
    const planted = 'cus_0123456789abcdef';
    for (const cookie of [
      planted,
      `s:${planted}.forged-signature`,
      encodeURIComponent(`s:${planted}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`),
    ]) {
      const victim = new ShopClient(shop.url);
      victim.cookies.set('shop_customer', cookie);
      const res = await victim.buy('espresso-beans', { saveCard: true });
      expect(res.status).toBe(303);
      const clientId = sandbox.getPayment(paymentIdOf(res.location!))!.clientId;
      expect(clientId).toMatch(/^cus_[0-9a-f]{16}$/);
      expect(clientId).not.toBe(planted);
      // The shop issued its own signed id, and the card is saved under it.
      expect(customerIdOf(victim)).toBe(clientId);
    }
  });

  it('the customer id stays the same from page to page (its signed cookie is read back)', async () => {
    const visitor = new ShopClient(shop.url);
    await visitor.get('/');
    const id = customerIdOf(visitor);
    const res = await visitor.buy('moka-pot', { saveCard: true });
    expect(sandbox.getPayment(paymentIdOf(res.location!))!.clientId).toBe(id);
    expect(customerIdOf(visitor)).toBe(id);
  });

  it('a payment_id with line breaks and escapes cannot forge a log line', async () => {
    const visitor = new ShopClient(shop.url);
    const res = await visitor.buy('pour-over-set');
    const orderId = sandbox.getPayment(paymentIdOf(res.location!))!.developerTrackingId!;
    const forged = 'pay_x\r\n[Nest] 1  - ERROR [Admin] admin signed in\u001b[2J\u2028';
    const before = logger.lines.length;
    await visitor.get(`/orders/${orderId}/success?payment_id=${encodeURIComponent(forged)}`);
    const lines = logger.lines.slice(before);
    const warned = lines.find((l) => l.includes('return with payment_id'));
    expect(warned).toBe(
      `warn [Orders] order ${orderId}: return with payment_id pay_x\\r\\n[Nest] 1  - ERROR [Admin] admin signed in\\u001b[2J\\u2028, not the order's; checking the order's payment`,
    );
    for (const line of lines) expect(line).not.toMatch(/[\r\n\u001b\u2028]/);
  });
});
