/**
 * The sample shop in a real browser (Debian's chromium driven by playwright-core): buy, pay on
 * the sandbox's checkout page, come back to a verified "paid" page, sign in to the admin and
 * refund after the confirmation step; decline -> failed; "capture later" -> authorized ->
 * capture a part -> refund it; "save my card" -> the card in the admin's lookup. Screenshots go to
 * test/sample-app/.screenshots/.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
import { launchChromium } from '../support/browser.js';
import { CHROMIUM_PATH, chromiumAvailable, describeWithService } from '../support/services.js';

const SCREENSHOTS = fileURLToPath(new URL('./.screenshots/', import.meta.url));
const available = await chromiumAvailable();

describeWithService(available, `chromium not installed at ${CHROMIUM_PATH}`)('sample shop in a real browser', () => {
  let shop: ShopApp;
  let sandbox: PaymentsSandbox;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  // Console errors include CSP violations: a blocked style would show up here.
  const consoleErrors: string[] = [];

  const shot = (name: string) => page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
  const stateOf = (selector: string) => page.locator(selector).getAttribute('data-state');
  // What the user reads, with the no-break space between amount and currency made plain.
  const textOf = async (selector: string | ReturnType<Page['locator']>) =>
    (await (typeof selector === 'string' ? page.locator(selector) : selector).innerText()).replace(/\u00a0/g, ' ');

  /** Clicks something that submits a form or follows a link, and waits for the next page. */
  async function navigate(
    click: () => Promise<unknown>,
    url: string | RegExp | ((url: URL) => boolean),
  ): Promise<void> {
    await Promise.all([page.waitForURL(url), click()]);
  }

  /** From the catalog: buys a product (optionally saving the card) and lands on the sandbox's checkout. */
  async function checkout(productId: string, options: { saveCard?: boolean } = {}): Promise<void> {
    await page.goto(`${shop.url}/`);
    if (options.saveCard) await page.locator(`#save-${productId}`).check();
    await navigate(
      () => page.locator(`#product-${productId} button`).click(),
      (url) => url.href.startsWith(`${sandbox.url}/checkout/`),
    );
  }

  /** Opens the admin, signing in when the login page shows up. */
  async function openAdmin(path = '/admin'): Promise<void> {
    await page.goto(`${shop.url}${path}`);
    if (new URL(page.url()).pathname === '/admin/login') {
      await page.locator('#password').fill(shop.adminPassword);
      await navigate(
        () => page.locator('#sign-in').click(),
        (url) => url.pathname === '/admin',
      );
    }
  }

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    // env given in code keeps the developer's shell (a real PAYMENTS_PUBLIC_KEY...) out of the test.
    shop = await createShopApp({ port: 0, sandboxPort: 0, env: { DATA_DIR: 'memory://' }, logger: false });
    sandbox = shop.sandbox!;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('console', (message) => {
      // Every page counts, the sandbox's checkout too (it serves its favicon: 204, no 404).
      // Only the shop's wrong-password 401 and its 404 page are answers the tests ask for.
      const fromShop = message.location().url.startsWith(shop.url);
      const expected =
        fromShop && /Failed to load resource: the server responded with a status of (401|404)/.test(message.text());
      if (message.type() === 'error' && !expected) consoleErrors.push(`${message.location().url}: ${message.text()}`);
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await shop?.close();
  });

  it('buys a product, pays on the sandbox checkout, sees it paid, signs in to /admin and refunds it after confirming', async () => {
    await page.goto(`${shop.url}/`);
    expect(await page.title()).toBe('Catalog · Medina Roasters');
    expect(await page.locator('article.card').count()).toBe(5);
    expect(await page.locator('#product-espresso-beans .price').innerText()).toBe('12.500TND');
    await shot('catalog');

    await checkout('espresso-beans');
    expect(await page.locator('#amount').innerText()).toBe('12.500 TND');
    expect(await page.locator('#state').innerText()).toBe('pending');
    await shot('checkout');

    await navigate(() => page.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
    expect(await page.locator('h1').innerText()).toBe('Thank you, your order is paid');
    expect(await stateOf('#order-state .badge')).toBe('paid');
    expect(await textOf('#order-amount')).toBe('12.500 TND');
    const orderId = await page.locator('#order-id').innerText();
    await shot('success');

    await navigate(
      () => page.locator('nav a', { hasText: 'Admin' }).click(),
      (url) => url.pathname === '/admin/login',
    );
    await shot('admin-login');
    await page.locator('#password').fill('not the password');
    await navigate(
      () => page.locator('#sign-in').click(),
      (url) => url.pathname === '/admin/login',
    );
    expect(await page.locator('#login-error').innerText()).toBe('Wrong password.');
    await page.locator('#password').fill(shop.adminPassword);
    await navigate(() => page.locator('#sign-in').click(), `${shop.url}/admin`);
    const row = page.locator(`#order-${orderId}`);
    expect(await row.getAttribute('data-state')).toBe('paid');
    // The badge is upper-cased by CSS; innerText is what the user reads.
    expect(await row.locator('.badge').innerText()).toBe('PAID');
    expect(await row.locator('td').nth(4).innerText()).toMatch(/^pay_[0-9a-f]{24}$/);
    await shot('admin');

    await navigate(() => row.locator('[data-action="refund"]').click(), `${shop.url}/admin/orders/${orderId}/refund`);
    expect(await textOf('h1')).toBe('Refund 12.500 TND?');
    await shot('admin-refund-confirm');
    await navigate(() => page.locator('#confirm-refund').click(), /\/admin\?flash=/);
    expect(await page.locator('#flash.flash-success').innerText()).toMatch(
      new RegExp(`^Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.$`),
    );
    expect(await row.getAttribute('data-state')).toBe('refunded');
    expect(await row.locator('.badge').innerText()).toBe('REFUNDED');
    expect(await row.locator('[data-action]').count()).toBe(0);
    await shot('admin-refunded');
  }, 60_000);

  it('declines on the sandbox checkout and lands on the fail page with the order failed', async () => {
    await checkout('moka-pot');
    expect(await page.locator('#amount').innerText()).toBe('27.750 TND');
    await navigate(() => page.locator('#decline').click(), /\/orders\/ord_[0-9a-f]+\/failed\?payment_id=pay_/);
    expect(await page.locator('h1').innerText()).toBe('Payment failed');
    expect(await stateOf('#order-state .badge')).toBe('failed');
    const orderId = await page.locator('#order-id').innerText();
    await shot('failed');

    await openAdmin();
    expect(await page.locator(`#order-${orderId}`).getAttribute('data-state')).toBe('failed');
  }, 60_000);

  it('"charged when shipped": pre-authorizes at checkout, then the admin captures a part', async () => {
    await checkout('espresso-machine');
    expect(await page.locator('#amount').innerText()).toBe('649.000 TND');
    expect(await page.locator('#hold').count()).toBe(1);
    await navigate(() => page.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
    expect(await page.locator('h1').innerText()).toBe('Thank you, your order is confirmed');
    expect(await stateOf('#order-state .badge')).toBe('authorized');
    const orderId = await page.locator('#order-id').innerText();
    await shot('authorized');

    await openAdmin();
    const row = page.locator(`#order-${orderId}`);
    expect(await row.getAttribute('data-state')).toBe('authorized');
    await row.locator('input[name="amount"]').fill('600');
    await shot('admin-capture');
    await navigate(() => row.locator('[data-action="capture"]').click(), /\/admin\?flash=/);
    expect(await page.locator('#flash.flash-success').innerText()).toBe(
      `Captured 600.000 TND of order ${orderId}; the remaining 49.000 TND are released.`,
    );
    expect(await row.getAttribute('data-state')).toBe('captured');
    expect(await textOf(row.locator('td').nth(3))).toBe('CAPTURED 600.000 TND');
    await shot('admin-captured');

    // The captured order offers Refund…, and the refund gives back what was captured.
    await navigate(() => row.locator('[data-action="refund"]').click(), `${shop.url}/admin/orders/${orderId}/refund`);
    expect(await textOf('h1')).toBe('Refund 600.000 TND?');
    await navigate(() => page.locator('#confirm-refund').click(), /\/admin\?flash=/);
    expect(await page.locator('#flash.flash-success').innerText()).toMatch(
      new RegExp(`^Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.$`),
    );
    expect(await row.getAttribute('data-state')).toBe('refunded');
    expect(await row.locator('[data-action]').count()).toBe(0);
  }, 60_000);

  it('"save my card": pays with the box ticked; the admin finds the card by the customer id', async () => {
    await checkout('pour-over-set', { saveCard: true });
    await navigate(() => page.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
    expect(await stateOf('#order-state .badge')).toBe('paid');
    const customerId = await page.locator('#order-client .mono').innerText();
    expect(customerId).toMatch(/^cus_[0-9a-f]{16}$/);
    // The cookie is signed (`s:<id>.<HMAC>`, URL-encoded): the id is the one it carries.
    expect(
      decodeURIComponent((await context.cookies(shop.url)).find((c) => c.name === 'shop_customer')?.value ?? ''),
    ).toMatch(new RegExp(`^s:${customerId}\\.[A-Za-z0-9+/]{43}$`));

    await openAdmin();
    await page.locator('#clientId').fill(customerId);
    await navigate(() => page.locator('#lookup').click(), new RegExp(`/admin\\?clientId=${customerId}`));
    const binding = page.locator('#bindings tbody tr');
    expect(await binding.count()).toBe(1);
    expect(await binding.locator('td').nth(1).innerText()).toMatch(/^•••• [0-9]{4}$/);
    expect(await binding.locator('td').nth(2).innerText()).toBe('ACTIVE');
    await page.locator('#bindings-lookup').scrollIntoViewIfNeeded();
    await shot('admin-bindings');

    // The service refusing an id (the sandbox takes any id the plugin sends, so the refusal is injected).
    sandbox.fault('/api/v2/bindings/list', {
      status: 400,
      body: '{"result":{"status":400,"message":"Invalid client_id"}}',
      times: 1,
    });
    await page.locator('#clientId').fill('bad id!');
    await navigate(() => page.locator('#lookup').click(), /\/admin\?clientId=bad/);
    expect(await page.locator('#bindings-error').innerText()).toContain(
      'The payment service does not accept this customer id',
    );
    expect(await page.locator('#clientId').inputValue()).toBe('bad id!');
  }, 60_000);

  it('the admin fits a 1280 px screen: the orders table (a held order with its capture and cancel forms) needs no horizontal scrolling', async () => {
    await checkout('espresso-machine');
    await navigate(() => page.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success\?payment_id=pay_/);
    await openAdmin();
    expect(await page.locator('#orders form[action$="/capture"]').count()).toBeGreaterThan(0);
    // A string: this project's TypeScript has no DOM types.
    const widths = await page.evaluate<{ page: number; viewport: number; table: number; box: number }>(`(() => {
      const wrap = document.querySelector('#orders').closest('.table-wrap');
      return { page: document.documentElement.scrollWidth, viewport: window.innerWidth, table: wrap.scrollWidth, box: wrap.clientWidth };
    })()`);
    await shot('admin-1280');
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);
    expect(widths.table).toBeLessThanOrEqual(widths.box);
  }, 60_000);

  it('signs out; showed no console error (no blocked style, no CSP violation) and never the private key', async () => {
    await openAdmin();
    await navigate(
      () => page.locator('#sign-out').click(),
      (url) => url.pathname === '/admin/login',
    );
    await page.goto(`${shop.url}/admin`);
    expect(new URL(page.url()).pathname).toBe('/admin/login');
    await page.goto(`${shop.url}/no-such-page`);
    expect(await page.locator('h1').innerText()).toBe('Not found');
    expect(consoleErrors).toEqual([]);
    for (const path of ['/', '/admin/login']) {
      await page.goto(`${shop.url}${path}`);
      expect(await page.content()).not.toContain(sandbox.privateKey);
    }
  });
});
