// The desk in a real browser, as test/desk/desk.browser.e2e-spec.ts (Express) and
// desk.nest-browser.e2e-spec.ts (Nest, both adapters) run it: two files, so that Jest's workers share them.
import { afterAll, beforeAll, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import type { PaymentsClient } from '../../lib/express/index.js';
import type { PaymentsSandbox } from '../../lib/testing/index.js';
import { axeViolations, blocking } from '../support/accessibility.js';
import { launchChromium } from '../support/browser.js';
import { toPalettePng } from '../support/png-palette.js';
import { CHROMIUM_PATH, chromiumAvailable, describeWithService, redisAvailable } from '../support/services.js';
import { HOSTILE, SECRETS, type DeskHarness, type Seeded } from './desk-scenario.js';
import { sharedRedis, startDesk, type DeskHost, type RunningDesk } from './desk-hosts.js';

const [chromium, redis] = await Promise.all([chromiumAvailable(), redisAvailable()]);
/** Where the pictures of docs/desk.md go, when asked for (taken on Express). */
const SCREENSHOTS = process.env.DESK_SCREENSHOTS === '1' ? join(import.meta.dirname, '../../docs/desk') : undefined;

/**
 * The browser checks of the desk mounted in `host`: two instances of it on one Redis store,
 * behind a round-robin balancer (desk-hosts.ts), the browser at the balancer's address.
 */
export function browserSuite(host: DeskHost): void {
  describeWithService(
    chromium && redis,
    chromium ? 'Redis is not reachable' : `chromium not installed at ${CHROMIUM_PATH}`,
  )(`the payments desk in a browser, two instances (${host})`, () => {
    const store = sharedRedis('browser');
    let running: RunningDesk;
    let sandbox: PaymentsSandbox;
    let client: PaymentsClient;
    let harness: DeskHarness;
    let seeded: Seeded;
    let browser: Browser;
    let context: BrowserContext;
    /** The same person with JavaScript on, for axe only: the desk's pages themselves have none. */
    let audits: BrowserContext;
    const violations: string[] = [];
    const pictures = host === 'express' ? SCREENSHOTS : undefined;

    beforeAll(async () => {
      running = await startDesk(host, 'b', store.store);
      ({ harness, seeded } = running);
      ({ client, sandbox } = harness);
      browser = await launchChromium();
      context = await browser.newContext({
        javaScriptEnabled: false,
        extraHTTPHeaders: { 'x-user': 'alice' },
        // A low window: a full-page picture is as high as the page's content, never less than the window.
        ...(pictures === undefined ? {} : { viewport: { width: 1200, height: 200 } }),
      });
      audits = await browser.newContext({ extraHTTPHeaders: { 'x-user': 'alice' } });
    });

    afterAll(async () => {
      await context?.close();
      await audits?.close();
      await browser?.close();
      await running?.close();
      await store.cleanup();
    });

    // A double click on a slow link: the first click's post has been acted on by one instance,
    // its answer still on its way (the balancer holds it until the second post arrives), when
    // the second click posts the form again, to the other instance; the browser aborts the first
    // navigation for the second. The mouse itself clicks (a locator's click would wait for the
    // first navigation), and the page is then waited for by its address.
    async function doubleClick(page: Page, button: Locator): Promise<void> {
      const action = (await button.locator('xpath=ancestor::form').getAttribute('action'))!;
      await button.scrollIntoViewIfNeeded();
      const box = (await button.boundingBox())!;
      const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
      await page.mouse.click(x, y);
      const end = Date.now() + 20_000;
      while (!running.balancer!.holding('POST', action)) {
        if (Date.now() > end) throw new Error(`the first click did not post ${action}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await page.mouse.click(x, y);
      while (!/\?done=/.test(page.url())) {
        if (Date.now() > end) throw new Error(`the page did not show the action's answer (at ${page.url()})`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await page.waitForLoadState();
      // One post to each instance, each answered.
      const posts = running.balancer!.passed.filter((p) => p.method === 'POST' && p.path === action);
      expect(posts.map((p) => `${p.instance} ${p.status}`).sort()).toEqual(['0 303', '1 303']);
    }

    async function open(path: string): Promise<Page> {
      const page = await context.newPage();
      page.on('console', (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
      });
      await page.goto(`${harness.desk}${path}`);
      return page;
    }

    /** Writes docs/desk/<name>.png of the whole page, with DESK_SCREENSHOTS=1. */
    async function picture(page: Page, name: string): Promise<void> {
      if (pictures !== undefined)
        writeFileSync(join(pictures, `${name}.png`), toPalettePng(await page.screenshot({ fullPage: true })));
    }

    /** The entries of the timeline `page` shows that the store's story holds, as `<source> <what>: <answer>`. */
    async function timeline(page: Page): Promise<string[]> {
      // A string: tsconfig has no DOM types; it runs in the page.
      const rows = await page.evaluate<string[][]>(
        "[...document.querySelectorAll('table.timeline tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))",
      );
      return rows.filter((c) => c.length === 5 && c[4] !== '').map((c) => `${c[3]} ${c[1]}: ${c[2]}`);
    }

    /** The serious and critical accessibility violations of the page `page` shows, each line naming it. */
    async function inaccessible(page: Page): Promise<string[]> {
      const url = new URL(page.url());
      return blocking(await axeViolations(audits, url.href)).map((line) => `${url.pathname}${url.search}: ${line}`);
    }

    it('renders the overview with its stylesheet and no policy violation', async () => {
      const page = await open('');
      await expect(page.locator('#failing h2').textContent()).resolves.toBe('Handlers failing (1)');
      await expect(page.locator('#duplicates h2').textContent()).resolves.toBe('Duplicates to refund (1)');
      await expect(page.locator('#overdue h2').textContent()).resolves.toBe('Overdue payments (1)');
      // The inline stylesheet applied: allowed by its hash, not by 'unsafe-inline'.
      // (A string: tsconfig has no DOM types; it runs in the page.)
      const background = await page.evaluate("getComputedStyle(document.querySelector('th')).backgroundColor");
      expect(background).toBe('rgb(240, 240, 240)');
      expect(violations).toEqual([]);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await picture(page, 'overview');
      await page.close();
    });

    it('searches by payment id from the header form', async () => {
      const page = await open('');
      await page.locator('input[name="q"]').fill(seeded.paid);
      await Promise.all([page.waitForURL(`**/desk/payments/${seeded.paid}`), page.locator('header button').click()]);
      await expect(page.locator('h1').textContent()).resolves.toBe(`Payment ${seeded.paid}`);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await page.close();
    });

    it('shows the payments of an order, and every kind of payment with its whole story, accessibly', async () => {
      const order = (await client.getOutcome(seeded.first))!.developerTrackingId!;
      const found = await open(`/search?q=${encodeURIComponent(order)}`);
      await expect(found.locator('h1').textContent()).resolves.toBe('Search');
      await expect(inaccessible(found)).resolves.toEqual([]);
      await picture(found, 'search');
      await found.close();
      const kinds = {
        paid: seeded.paid,
        failed: seeded.failed,
        duplicate: seeded.duplicate,
        stuck: seeded.stuck,
        overdue: seeded.overdue,
        unknown: 'no-such-payment',
      };
      // Each one's whole story as the browser shows it, from the story the two instances wrote.
      const stories: Record<string, unknown> = {
        paid: [
          'generate Created: 12500 millimes',
          'webhook Verified with the service: SUCCESS',
          'webhook Handlers ran: confirmed: handled',
          'webhook Webhook delivery answered: 200 handled',
        ],
        failed: [
          'generate Created: 3000 millimes',
          'webhook Verified with the service: FAILURE',
          'webhook Handlers ran: failed: handled',
          'webhook Webhook delivery answered: 200 handled',
        ],
        duplicate: expect.arrayContaining([
          'generate Created: 7000 millimes',
          'webhook Verified with the service: SUCCESS',
          `webhook Duplicate charge: duplicate of ${seeded.first}`,
          expect.stringMatching(/^webhook Webhook delivery answered: 200 /),
        ]),
        stuck: expect.arrayContaining([
          'generate Created: 9900 millimes',
          expect.stringMatching(
            /^webhook Handlers ran; error: Error: stock service down <script>.*key=\[redacted\].*: confirmed: failed$/,
          ),
          expect.stringMatching(/^webhook Webhook delivery answered: 5\d\d /),
        ]),
      };
      for (const [kind, id] of Object.entries(kinds)) {
        const page = await open(`/payments/${encodeURIComponent(id)}`);
        if (kind in stories) expect([kind, await timeline(page)]).toEqual([kind, stories[kind]]);
        await expect(inaccessible(page)).resolves.toEqual([]);
        if (kind !== 'unknown' && kind !== 'duplicate') await picture(page, `payment-${kind}`);
        await page.close();
      }
      expect(violations).toEqual([]);
    });

    it('draws the charts as SVG under the policy, accessibly, from the header link', async () => {
      const page = await open('');
      await Promise.all([page.waitForURL('**/desk/charts'), page.getByRole('link', { name: 'Charts' }).click()]);
      await expect(page.locator('h1').textContent()).resolves.toBe('Charts');
      // Each chart an image with its name and description, its bars' labels and numbers as text.
      await expect(page.getByRole('img', { name: 'Payments by outcome, the last 24 hours' }).count()).resolves.toBe(1);
      await expect(page.locator('#outcomes svg text', { hasText: 'confirmed' }).count()).resolves.toBe(1);
      await expect(page.locator('#handling svg rect').count()).resolves.toBeGreaterThan(1);
      await Promise.all([
        page.waitForURL('**/desk/charts?window=7d'),
        page.getByRole('link', { name: 'the last 7 days' }).click(),
      ]);
      await expect(page.locator('[aria-current="page"]').textContent()).resolves.toBe('the last 7 days');
      expect(violations).toEqual([]);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await picture(page, 'charts');
      await page.close();
    });

    it('marks an overdue payment reviewed once on a double click; the Reviewed list and its page say who', async () => {
      const page = await open('');
      await doubleClick(page, page.locator('#overdue').getByRole('button', { name: 'Mark reviewed' }));
      await expect(page.locator('[role="status"]').textContent()).resolves.toMatch(/^Marked reviewed|^Someone had/);
      await expect(page.getByText(/Marked reviewed by .+: reviewed/).count()).resolves.toBe(1);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await picture(page, 'payment-reviewed');
      await page.close();
      const overview = await open('');
      await expect(overview.locator('#overdue h2').textContent()).resolves.toBe('Overdue payments (0)');
      await expect(overview.locator('#reviewed h2').textContent()).resolves.toBe('Reviewed (1)');
      await expect(inaccessible(overview)).resolves.toEqual([]);
      await picture(overview, 'overview-reviewed');
      await overview.close();
      expect(violations).toEqual([]);
    });

    it('searches a customer’s card bindings from the header form', async () => {
      const page = await open('');
      await page.locator('input[name="q"]').fill(`cust ${HOSTILE} ${SECRETS.webhookSecret}`);
      await page.locator('select[name="by"]').selectOption('customer');
      await Promise.all([page.waitForURL('**/desk/search?**'), page.locator('header button').click()]);
      await expect(page.locator('tbody tr').count()).resolves.toBe(1);
      await expect(page.content()).resolves.not.toContain(SECRETS.webhookSecret);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await picture(page, 'search-customer');
      await page.close();
    });

    it('runs the handlers again once on a double click', async () => {
      harness.failing.delete(seeded.stuckOrder);
      const page = await open(`/payments/${seeded.stuck}`);
      await doubleClick(page, page.getByRole('button', { name: 'Check now and run handlers again' }));
      expect(harness.settled.get(seeded.stuck)).toBe(1);
      await expect(page.locator('[role="status"]').textContent()).resolves.toMatch(
        /^The handlers ran and succeeded|^Nothing ran/,
      );
      await expect(page.getByText('Nothing to do: the payment is settled.').count()).resolves.toBe(1);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await page.close();
    });

    it('refunds a duplicate once on a double click', async () => {
      const refunds = () => sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment').length;
      const page = await open(`/payments/${seeded.duplicate}`);
      await doubleClick(page, page.getByRole('button', { name: 'Refund this duplicate' }));
      // What the desk answered and logged comes with the count, so a failure says which result it was.
      const at = page.url();
      const logs = harness.logs.filter((l) => /refund/.test(l));
      expect({ refunds: refunds(), at, refunded: logs.filter((l) => /: refunded$/.test(l)).length }).toEqual({
        refunds: 1,
        at: expect.stringMatching(/\?done=(refunded(-earlier)?|not-refundable)$/),
        refunded: 1,
      });
      // Under load the second click can arrive once the first one's refund is recorded: it is told
      // "not a duplicate awaiting its refund" (desk.express.e2e-spec's third submit), and the page
      // shows that answer; the first click's answer is then the page to look at.
      expect(logs.filter((l) => !/: (refunded|refunded-earlier|not-refundable)$/.test(l))).toEqual([]);
      if (at.endsWith('not-refundable')) await page.goto(at.replace(/not-refundable$/, 'refunded'));
      await expect(page.locator('[role="status"]').textContent()).resolves.toMatch(/refunded/);
      await expect(page.getByText(/Refunded by the service: refund /).count()).resolves.toBe(1);
      await expect(inaccessible(page)).resolves.toEqual([]);
      await picture(page, 'payment-duplicate-refunded');
      expect(violations).toEqual([]);
      await page.close();
    });
  });
}
