/**
 * The sample shop in a real browser (Debian's chromium driven by playwright-core): buy, pay on
 * the sandbox's checkout page, come back, refund from the admin page; decline; cancel a
 * pre-authorization; look up card bindings. Screenshots go to test/sample-app/.screenshots/.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { createShopApp, type ShopApp } from '../../sample-app/src/shop.bootstrap.js';
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
  async function navigate(click: () => Promise<unknown>, url: string | RegExp | ((url: URL) => boolean)): Promise<void> {
    await Promise.all([page.waitForURL(url), click()]);
  }

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    // env: {} keeps the developer's shell (a real PAYMENTS_PUBLIC_KEY...) out of the test.
    shop = await createShopApp({ port: 0, sandboxPort: 0, env: {}, logger: false });
    sandbox = shop.sandbox!;
    browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('console', (message) => {
      // Only the shop's pages: the sandbox's own page has no icon, so its /favicon.ico 404s.
      if (message.type() === 'error' && !message.location().url.startsWith(sandbox.url)) {
        consoleErrors.push(`${message.location().url}: ${message.text()}`);
      }
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await shop?.close();
  });

  it('buys a product, pays on the sandbox checkout, sees it paid, and refunds it from /admin', async () => {
    await page.goto(`${shop.url}/`);
    expect(await page.title()).toBe('Catalog · Medina Roasters');
    expect(await page.locator('article.card').count()).toBe(4);
    expect(await page.locator('#product-espresso-beans .price').innerText()).toBe('12.500TND');
    await shot('catalog');

    await navigate(() => page.locator('#product-espresso-beans button').click(), (url) => url.href.startsWith(`${sandbox.url}/checkout/`));
    expect(await page.locator('#amount').innerText()).toBe('12.500 TND');
    expect(await page.locator('#state').innerText()).toBe('pending');
    await shot('checkout');

    await navigate(() => page.locator('#pay').click(), /\/orders\/ord_[0-9a-f]+\/success$/);
    expect(await page.locator('h1').innerText()).toBe('Thank you, your order is paid');
    expect(await stateOf('#order-state .badge')).toBe('paid');
    expect(await textOf('#order-amount')).toBe('12.500 TND');
    const orderId = await page.locator('#order-id').innerText();
    await shot('success');

    await navigate(() => page.locator('nav a', { hasText: 'Admin' }).click(), `${shop.url}/admin`);
    const row = page.locator(`#order-${orderId}`);
    expect(await row.getAttribute('data-state')).toBe('paid');
    // The badge is upper-cased by CSS; innerText is what the user reads.
    expect(await row.locator('.badge').innerText()).toBe('PAID');
    expect(await row.locator('td').nth(4).innerText()).toMatch(/^pay_[0-9a-f]{24}$/);
    await shot('admin');

    await navigate(() => row.locator('button[data-action="refund"]').click(), /\/admin\?flash=/);
    expect(await page.locator('#flash.flash-success').innerText()).toMatch(new RegExp(`^Refund of order ${orderId} succeeded \\(refund ref_[0-9a-f]+\\)\\.$`));
    expect(await row.getAttribute('data-state')).toBe('refunded');
    expect(await row.locator('.badge').innerText()).toBe('REFUNDED');
    expect(await row.locator('button').count()).toBe(0);
    await shot('admin-refunded');
  }, 60_000);

  it('declines on the sandbox checkout and lands on the fail page with the order failed', async () => {
    await page.goto(`${shop.url}/`);
    await navigate(() => page.locator('#product-moka-pot button').click(), (url) => url.href.startsWith(`${sandbox.url}/checkout/`));
    expect(await page.locator('#amount').innerText()).toBe('27.750 TND');
    await navigate(() => page.locator('#decline').click(), /\/orders\/ord_[0-9a-f]+\/failed$/);
    expect(await page.locator('h1').innerText()).toBe('Payment failed');
    expect(await stateOf('#order-state .badge')).toBe('failed');
    const orderId = await page.locator('#order-id').innerText();
    await shot('failed');

    await page.goto(`${shop.url}/admin`);
    expect(await page.locator(`#order-${orderId}`).getAttribute('data-state')).toBe('failed');
  }, 60_000);

  it('creates a pre-authorized test order and cancels it; a second cancel shows the refusal', async () => {
    await page.goto(`${shop.url}/admin`);
    await page.locator('#test-tools select').selectOption('hand-grinder');
    await navigate(() => page.locator('#create-preauthorized').click(), /\/admin\?flash=/);
    const created = await page.locator('#flash.flash-success').innerText();
    const orderId = /test order (ord_[0-9a-f]+) created/.exec(created)![1];
    const row = page.locator(`#order-${orderId}`);
    expect(await row.getAttribute('data-state')).toBe('preauthorized');
    expect(await textOf(row.locator('td').nth(2))).toBe('89.000 TND');

    await navigate(() => row.locator('button[data-action="cancel"]').click(), /\/admin\?flash=/);
    expect(await page.locator('#flash.flash-success').innerText()).toContain('cancelled; the funds are released');
    expect(await row.getAttribute('data-state')).toBe('cancelled');

    // A stale tab's second click: posts the same form again.
    const refused = await page.request.post(`${shop.url}/admin/orders/${orderId}/cancel`, { maxRedirects: 0 });
    expect(refused.status()).toBe(303);
    await page.goto(new URL(refused.headers().location, shop.url).href);
    expect(await page.locator('#flash.flash-error').innerText()).toContain('(CANCELLATION_FAILED)');
  }, 60_000);

  it('looks up card bindings: VISA 4242 for demo-customer, a readable error for an invalid id', async () => {
    await page.goto(`${shop.url}/admin`);
    await page.locator('#clientId').fill('demo-customer');
    await navigate(() => page.locator('#lookup').click(), /\/admin\?clientId=demo-customer/);
    const binding = page.locator('#bindings tbody tr');
    expect(await binding.count()).toBe(1);
    expect(await binding.locator('td').nth(0).innerText()).toBe('VISA');
    expect(await binding.locator('td').nth(1).innerText()).toBe('•••• 4242');
    expect(await binding.locator('td').nth(2).innerText()).toBe('ACTIVE');
    await page.locator('#bindings-lookup').scrollIntoViewIfNeeded();
    await shot('admin-bindings');

    await page.locator('#clientId').fill('bad id!');
    await navigate(() => page.locator('#lookup').click(), /\/admin\?clientId=bad/);
    expect(await page.locator('#bindings-error').innerText()).toBe(
      'The payment service does not accept this customer id: Invalid client_id (INVALID_CLIENT_ID).',
    );
    expect(await page.locator('#clientId').inputValue()).toBe('bad id!');
    await shot('admin-bindings-error');
  }, 60_000);

  it('showed no console error (no blocked style, no CSP violation) and never the private key', async () => {
    expect(consoleErrors).toEqual([]);
    for (const path of ['/', '/admin', '/admin?clientId=demo-customer']) {
      await page.goto(`${shop.url}${path}`);
      expect(await page.content()).not.toContain(sandbox.privateKey);
    }
  });
});
