/**
 * Issue 32 in the sample shop, in a real browser: a customer pays one order in two tabs (the
 * checkout, and "Pay now" on the order's page in another tab). The order is paid once; the second
 * tab's return page says the order was already paid; the payments desk (linked from the admin)
 * lists the second payment among the duplicates to refund, and refunding it leaves the order paid. Screenshots go to test/sample-app/.screenshots/.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { launchChromium } from '../support/browser.js';
import { CHROMIUM_PATH, chromiumAvailable, describeWithService } from '../support/services.js';
import { paymentIdOf } from './shop.helpers.js';

const SCREENSHOTS = fileURLToPath(new URL('./.screenshots/', import.meta.url));
const available = await chromiumAvailable();

describeWithService(available, `chromium not installed at ${CHROMIUM_PATH}`)(
  'sample shop: one order paid in two tabs',
  () => {
    let shop: ShopApp;
    let sandbox: PaymentsSandbox;
    let browser: Browser;
    let context: BrowserContext;

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      shop = await createShopApp({ port: 0, sandboxPort: 0, env: { DATA_DIR: 'memory://' }, logger: false });
      sandbox = shop.sandbox!;
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    }, 60_000);

    afterAll(async () => {
      await context?.close();
      await browser?.close();
      await shop?.close();
    });

    async function navigate(
      page: Page,
      click: () => Promise<unknown>,
      url: string | RegExp | ((url: URL) => boolean),
    ): Promise<void> {
      await Promise.all([page.waitForURL(url), click()]);
    }

    it('pays the order once, tells the second tab it was already paid, and the payments desk refunds the second payment', async () => {
      const first = await context.newPage();
      const second = await context.newPage();

      // Tab 1: buy, and stop on the sandbox's checkout page.
      await first.goto(`${shop.url}/`);
      await navigate(
        first,
        () => first.locator('#product-espresso-beans button').click(),
        (url) => url.href.startsWith(`${sandbox.url}/checkout/`),
      );
      const p1 = paymentIdOf(first.url());
      const orderId = sandbox.getPayment(p1)!.developerTrackingId!;

      // Tab 2: the order's page, "Pay now": another payment of the same order.
      await second.goto(`${shop.url}/orders/${orderId}`);
      await navigate(
        second,
        () => second.locator('#pay-again').click(),
        (url) => url.href.startsWith(`${sandbox.url}/checkout/`),
      );
      const p2 = paymentIdOf(second.url());
      expect(p2).not.toBe(p1);

      // Both pay.
      await navigate(first, () => first.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
      expect(await first.locator('h1').innerText()).toBe('Thank you, your order is paid');
      await navigate(second, () => second.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
      expect(await second.locator('h1').innerText()).toBe('This order was already paid');
      expect(await second.locator('#order').getAttribute('data-outcome')).toBe('duplicate');
      expect(await second.locator('#order-state .badge').getAttribute('data-state')).toBe('paid');
      await second.screenshot({ path: `${SCREENSHOTS}duplicate-return.png`, fullPage: true });

      // The order's page: paid once, the second payment listed, to be refunded.
      await first.goto(`${shop.url}/orders/${orderId}`);
      expect(await first.locator('#order-history li[data-kind="paid"]').count()).toBe(1);
      expect(await first.locator(`#order-duplicates li[data-payment="${p2}"]`).getAttribute('data-refunded')).toBe(
        'no',
      );

      // The admin: the order paid, the second payment with its Refund button.
      await first.goto(`${shop.url}/admin`);
      await first.locator('#password').fill(shop.adminPassword);
      await navigate(
        first,
        () => first.locator('#sign-in').click(),
        (url) => url.pathname === '/admin',
      );
      expect(await first.locator(`#order-${orderId}`).getAttribute('data-state')).toBe('paid');
      // The payments desk, from the admin's link: the second payment among the duplicates to refund.
      await navigate(
        first,
        () => first.locator('#open-desk').click(),
        (url) => url.pathname === '/admin/desk',
      );
      const row = first
        .locator('#duplicates tr')
        .filter({ has: first.locator(`a[href="/admin/desk/payments/${p2}"]`) });
      expect(await row.locator('td').nth(1).innerText()).toBe(orderId);
      await first.screenshot({ path: `${SCREENSHOTS}duplicate-desk.png`, fullPage: true });
      // Its page names the payment that paid the order, and refunds it.
      await navigate(
        first,
        () => row.locator(`a[href="/admin/desk/payments/${p2}"]`).click(),
        (url) => url.pathname === `/admin/desk/payments/${p2}`,
      );
      expect(await first.locator('main').innerText()).toContain(p1);
      await navigate(first, () => first.locator('form[action$="/refund"] button').click(), /\?done=refunded$/);
      expect(await first.locator('main').innerText()).toContain('The duplicate was refunded.');
      await first.goto(`${shop.url}/admin/desk`);
      expect(await first.locator('#duplicates').innerText()).not.toContain(p2);
      await first.goto(`${shop.url}/admin`);
      expect(await first.locator(`#order-${orderId}`).getAttribute('data-state')).toBe('paid');

      // At the service: the first payment kept, the second refunded, once.
      expect(sandbox.getPayment(p1)!.state).toBe('paid');
      expect(sandbox.getPayment(p2)!.state).toBe('refunded');
      expect(sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment')).toHaveLength(1);
      await first.goto(`${shop.url}/orders/${orderId}`);
      expect(await first.locator(`#order-duplicates li[data-payment="${p2}"]`).getAttribute('data-refunded')).toBe(
        'yes',
      );
    }, 60_000);
  },
);
