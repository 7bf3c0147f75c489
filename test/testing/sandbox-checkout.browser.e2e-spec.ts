/**
 * The checkout page in a real browser (Debian's chromium driven by playwright-core): its security
 * headers must not break what a customer does (Pay, Decline, the redirect back with payment_id),
 * must leave no console error (CSP violation, favicon 404), and must refuse to be framed or to
 * settle a payment from a form on another site.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { launchChromium } from '../support/browser.js';
import { CHROMIUM_PATH, chromiumAvailable, describeWithService } from '../support/services.js';
import { generate, verify } from './sandbox.helpers.js';

const available = await chromiumAvailable();

describeWithService(available, `chromium not installed at ${CHROMIUM_PATH}`)(
  'sandbox checkout in a real browser',
  () => {
    let sandbox: PaymentsSandbox;
    let shop: http.Server;
    let shopUrl: string;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let consoleErrors: string[] = [];
    /** What the "shop" serves at /attack: set per test. */
    let attackPage = '';

    beforeAll(async () => {
      sandbox = await PaymentsSandbox.start();
      // A second origin: the shop the customer returns to, and the page of a would-be attacker.
      shop = http.createServer((req, res) => {
        const body = req.url?.startsWith('/attack')
          ? attackPage
          : `<!doctype html><title>shop</title><p id="back">${req.url}</p>`;
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        res.end(body);
      });
      await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
      // localhost vs 127.0.0.1: another origin than the sandbox's, on the same machine.
      shopUrl = `http://localhost:${(shop.address() as AddressInfo).port}`;
      browser = await launchChromium();
    }, 60_000);

    beforeAll(async () => {
      context = await browser.newContext();
    });

    afterEach(async () => {
      await page?.close();
      consoleErrors = [];
    });

    afterAll(async () => {
      await context?.close();
      await browser?.close();
      await sandbox?.close();
      await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    });

    async function open(url: string): Promise<void> {
      page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(`${message.location().url}: ${message.text()}`);
      });
      await page.goto(url);
    }

    it('checkout: Pay in the browser returns to the shop with ?payment_id= and no console error', async () => {
      const { payment_id, link } = await generate(sandbox, {
        success_link: `${shopUrl}/orders/7/done?lang=fr`,
        fail_link: `${shopUrl}/ko`,
      });
      await open(link);
      expect(await page.locator('#amount').innerText()).toBe('12.500 TND');
      await Promise.all([page.waitForURL((url) => url.href.startsWith(shopUrl)), page.locator('#pay').click()]);
      expect(page.url()).toBe(`${shopUrl}/orders/7/done?lang=fr&payment_id=${payment_id}`);
      expect((await verify(sandbox, payment_id)).json.result.status).toBe('SUCCESS');
      expect(consoleErrors).toEqual([]);
    });

    it('checkout: Decline in the browser returns to fail_link with ?payment_id=', async () => {
      const { payment_id, link } = await generate(sandbox, {
        success_link: `${shopUrl}/ok`,
        fail_link: `${shopUrl}/ko`,
      });
      await open(link);
      await Promise.all([page.waitForURL((url) => url.href.startsWith(shopUrl)), page.locator('#decline').click()]);
      expect(page.url()).toBe(`${shopUrl}/ko?payment_id=${payment_id}`);
      expect((await verify(sandbox, payment_id)).json.result.status).toBe('FAILURE');
      expect(consoleErrors).toEqual([]);
    });

    it('checkout: a form on another site cannot pay (403), and the page cannot be framed', async () => {
      const { payment_id, link } = await generate(sandbox);
      attackPage = `<!doctype html><title>attack</title>
<iframe id="framed" src="${link}"></iframe>
<form id="forged" method="post" action="${link}/pay"><button id="go">win a prize</button></form>`;
      await open(`${shopUrl}/attack`);
      const framed = page.frames().find((frame) => frame.url().startsWith(sandbox.url));
      // Blocked by frame-ancestors / X-Frame-Options: the frame never shows the checkout.
      expect(framed ? await framed.locator('#pay').count() : 0).toBe(0);
      const response = await Promise.all([page.waitForResponse(`${link}/pay`), page.locator('#go').click()]).then(
        ([r]) => r,
      );
      expect(response.status()).toBe(403);
      expect((await verify(sandbox, payment_id)).json.result.status).toBe('PENDING');
    });
  },
);
