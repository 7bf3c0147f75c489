// Compatibility app: the payments desk in a Nest 11 CommonJS app, on the Express adapter and then
// on the Fastify adapter, read in a real browser (Debian's chromium through playwright-core).
// For each adapter: a PaymentsSandbox and two instances of the app (two Nest applications, each
// with its own connection to one Redis store, under a key prefix of this run's own) behind a
// round-robin balancer (balancer.ts), PaymentsDeskModule.forRoot() behind a guard of the app's own
// and one formKey for both. A paid, a failed, a duplicate (a second payment of one order) and a
// stuck payment (its confirmation handler throws) are made through the sandbox and their signed
// webhooks. Then in the browser, as the support person the guard lets in: the overview lists
// them, each payment's page tells its whole story (its timeline), the search and the charts
// pages; "Check now and run handlers again" on the stuck payment and "Refund this duplicate",
// each double-clicked, the two posts reaching the two instances, act once; every page carries
// the desk's Content-Security-Policy, nothing loads from anywhere, and axe-core (the root
// package.json's version) finds no serious or critical violation on any page. Without the
// guard's header every page and action of either instance is refused (401). Prints
// `nest11-desk: ok (...)` and exits 0, or prints why and exits 1. Without chromium or Redis it
// says so and fails under CI (CI starts both), else skips.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import path from 'node:path';
import {
  Inject,
  Injectable,
  Module,
  UnauthorizedException,
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import axe from 'axe-core';
import { Redis } from 'ioredis';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  PaymentsService,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';
import { PaymentsDeskModule } from 'nestjs-payments/desk';
import { RedisPaymentsStore } from 'nestjs-payments/redis';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startBalancer, type Balancer } from './balancer.js';
import { assertOwnInstall } from './nest-scenario.js';

const NAME = 'nest11-desk';
const CHROMIUM = '/usr/bin/chromium';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECRET = 'compat-desk-webhook-secret-5c1e9a7b3d2f4e60';
/** One form key for both instances, as docs/desk.md asks behind a balancer without sticky sessions. */
const FORM_KEY = 'compat-desk-form-key-0f3b6e2a9c14d857';
const DESK = '/admin/payments';
const SHOP = Symbol('shop');

/** What the shop's handler does, shared by the two instances as their database would be. */
interface Shop {
  /** Orders whose confirmation handler throws (a stock service down). */
  failing: Set<string>;
  /** Successful confirmation-handler runs by payment id, over both instances. */
  handled: Map<string, number>;
}

/** The app's own authentication, as a merchant's would be: support staff send this header. */
@Injectable()
class SupportGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, unknown>; user?: unknown }>();
    if (request.headers['x-staff'] !== 'support') throw new UnauthorizedException();
    request.user = { email: 'support@shop.example', name: 'Support' };
    return true;
  }
}

/** The merchant's reaction to a confirmed payment: fails for the orders in `failing`. */
@Injectable()
class Orders {
  constructor(@Inject(SHOP) private readonly shop: Shop) {}

  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent): void {
    const order = event.developerTrackingId ?? '';
    if (this.shop.failing.has(order)) throw new Error(`stock service down for order ${order}`);
    this.shop.handled.set(event.paymentId, (this.shop.handled.get(event.paymentId) ?? 0) + 1);
  }
}

@Module({})
class DeskShopModule {
  static register(payments: PaymentsModuleOptions, shop: Shop): DynamicModule {
    return {
      module: DeskShopModule,
      imports: [
        PaymentsModule.forRoot(payments),
        PaymentsDeskModule.forRoot({ path: DESK.slice(1), guard: SupportGuard, formKey: FORM_KEY }),
      ],
      providers: [Orders, { provide: SHOP, useValue: shop }],
    };
  }
}

type Adapter = 'express' | 'fastify';

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

async function start(adapter: Adapter, module: DynamicModule, server: http.Server): Promise<INestApplication> {
  const options = { logger: ['error'] as 'error'[] };
  if (adapter === 'express') {
    const app = await NestFactory.create(module, new ExpressAdapter(), options);
    await app.init();
    server.on('request', app.getHttpAdapter().getInstance());
    return app;
  }
  const app = await NestFactory.create<NestFastifyApplication>(
    module,
    new FastifyAdapter({
      serverFactory: (handler: http.RequestListener) => {
        server.on('request', handler);
        return server;
      },
    }),
    options,
  );
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

/** Whether something accepts connections at the host and port of `url`, within a second. */
function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 6379) });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The payments one adapter's run makes. */
interface Seeded {
  paid: string;
  failed: string;
  first: string;
  duplicate: string;
  stuck: string;
  stuckOrder: string;
  duplicateOrder: string;
}

async function seed(
  payments: PaymentsService,
  sandbox: PaymentsSandbox,
  shop: Shop,
  adapter: Adapter,
): Promise<Seeded> {
  const paid = (await payments.generatePayment({ amount: '12500', developerTrackingId: `desk-paid-${adapter}` }))
    .paymentId;
  const settled = await sandbox.completePayment(paid);
  assert.equal(settled.webhook?.status, 200, `the paid payment's webhook got ${JSON.stringify(settled.webhook)}`);
  const failed = (await payments.generatePayment({ amount: '4000', developerTrackingId: `desk-failed-${adapter}` }))
    .paymentId;
  const declined = await sandbox.failPayment(failed);
  assert.equal(declined.webhook?.status, 200, `the failed payment's webhook got ${JSON.stringify(declined.webhook)}`);
  // One order paid twice: two payments generated for it (two idempotency keys), both completed.
  const duplicateOrder = `desk-twice-${adapter}`;
  const generate = (key: string) =>
    payments.generatePayment({ amount: '7000', developerTrackingId: duplicateOrder }, { idempotencyKey: key });
  const first = (await generate(`${duplicateOrder}/1`)).paymentId;
  const duplicate = (await generate(`${duplicateOrder}/2`)).paymentId;
  await sandbox.completePayment(first);
  await sandbox.completePayment(duplicate);
  // Paid, but its confirmation handler throws at every delivery: its handlers failed.
  const stuckOrder = `desk-stuck-${adapter}`;
  shop.failing.add(stuckOrder);
  const stuck = (await payments.generatePayment({ amount: '9900', developerTrackingId: stuckOrder })).paymentId;
  const undelivered = await sandbox.completePayment(stuck, { requireDelivery: false });
  assert.equal(undelivered.delivered, false, "the stuck payment's webhook was answered 2xx");
  return { paid, failed, first, duplicate, stuck, stuckOrder, duplicateOrder };
}

/**
 * The entries of the timeline `page` shows that the store's story holds (those with the instance
 * that wrote them), each as `<source> <what>: <answer>`, in the page's order.
 */
async function timeline(page: Page): Promise<string[]> {
  // A string, not a function: the app's tsconfig has no DOM types; it runs in the page.
  const rows = (await page.evaluate(
    `[...document.querySelectorAll('table.timeline tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))`,
  )) as string[][];
  return rows.filter((cells) => cells.length === 5 && cells[4] !== '').map((c) => `${c[3]} ${c[1]}: ${c[2]}`);
}

/** The serious and critical violations axe-core finds on the page `page` shows, as `<path> <impact> <rule>: <element>` lines. */
async function axeBlocking(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, as the repo's test/support/accessibility.ts does: the
  // desk's policy allows no script, and a <script> tag added to the page would be refused.
  await page.evaluate(axe.source);
  const found = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({ id: v.id, impact: String(v.impact), targets: v.nodes.map((n) => n.target.join(' ')) })))`)) as {
    id: string;
    impact: string;
    targets: string[];
  }[];
  const where = new URL(page.url());
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.targets.map((t) => `${where.pathname}${where.search} ${v.impact} ${v.id}: ${t}`));
}

/** One adapter's run: two instances, the payments, then the desk in the browser. Returns what it checked. */
async function run(adapter: Adapter, browser: Browser): Promise<string> {
  const prefix = `compat:${NAME}:${randomUUID()}:`;
  const sandbox = await PaymentsSandbox.start({ port: 0 });
  const shop: Shop = { failing: new Set(), handled: new Map() };
  const servers = [http.createServer(), http.createServer()];
  const apps: INestApplication[] = [];
  let balancer: Balancer | undefined;
  // JavaScript on for axe-core alone (evaluated through the DevTools protocol): the desk's pages
  // have no script, and their policy would refuse one.
  const context = await browser.newContext({ extraHTTPHeaders: { 'x-staff': 'support' } });
  try {
    const instances = await Promise.all(servers.map(listen));
    // The actions' answers wait at the balancer for a second post: a double click on a slow link.
    balancer = await startBalancer(instances, {
      pair: (method, target) => method === 'POST' && /\/(run-handlers|refund)$/.test(target),
    });
    const url = balancer.url;
    for (const server of servers) {
      const options: PaymentsModuleOptions = {
        ...sandbox.options({ webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET } }),
        store: new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix, story: true }),
        reconciliation: { enabled: false },
      };
      apps.push(await start(adapter, DeskShopModule.register(options, shop), server));
    }
    const s = await seed(apps[0].get(PaymentsService), sandbox, shop, adapter);
    assert.deepEqual(
      [s.paid, s.first].map((id) => shop.handled.get(id)),
      [1, 1],
      'the confirmation handler did not run once for the paid payment and the first of the order',
    );
    const pay = (id: string) => `${DESK}/payments/${encodeURIComponent(id)}`;

    // Without the guard's header: every page and every action of either instance is refused before the desk runs.
    const calls = sandbox.requests.length;
    for (const instance of instances) {
      for (const [method, target] of [
        ['GET', DESK],
        ['GET', `${DESK}/charts`],
        ['GET', `${DESK}/search?q=${s.duplicateOrder}`],
        ...[s.paid, s.failed, s.duplicate, s.stuck, 'no-such-payment'].map((id) => ['GET', pay(id)] as const),
        ['POST', `${pay(s.stuck)}/run-handlers`],
        ['POST', `${pay(s.duplicate)}/refund`],
        ['POST', `${pay(s.stuck)}/review`],
      ] as const) {
        const answer = await fetch(instance + target, { method, redirect: 'manual' });
        assert.equal(answer.status, 401, `${method} ${target} without the guard's header answered ${answer.status}`);
      }
    }
    assert.equal(sandbox.requests.length, calls, 'a refused request called the service');

    const elsewhere: string[] = [];
    const violations: string[] = [];
    const inaccessible: string[] = [];
    // One tab for the whole run, as a support person browses.
    const page = await context.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(url)) elsewhere.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    const open = async (target: string): Promise<Page> => {
      const answer = await page.goto(url + target);
      assert.equal(answer?.status(), 200, `${target} answered ${answer?.status()}`);
      const csp = (await answer?.allHeaders())?.['content-security-policy'] ?? '';
      assert.match(csp, /^default-src 'none'/, `${target}'s Content-Security-Policy: ${csp || 'none'}`);
      return page;
    };
    let audited = 0;
    const audit = async (shown: Page) => {
      inaccessible.push(...(await axeBlocking(shown)));
      audited++;
    };
    // A double click on a slow link: the first click's post has been acted on by one instance,
    // its answer still on its way (held by the balancer until the second post arrives), when the
    // second click posts the form again, to the other instance; the browser aborts the first
    // navigation for the second. The page is then waited for by its address.
    const doubleClick = async (page: Page, name: string, action: string) => {
      // The mouse itself: a locator's click would wait for the first click's navigation to end.
      const button = page.getByRole('button', { name });
      await button.scrollIntoViewIfNeeded();
      const box = await button.boundingBox();
      assert.ok(box !== null, `no button "${name}" on ${page.url()}`);
      const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
      await page.mouse.click(x, y);
      const end = Date.now() + 20_000;
      while (!balancer!.holding('POST', action)) {
        assert.ok(Date.now() < end, `the first click did not post ${action}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await page.mouse.click(x, y);
      while (!/\?done=/.test(page.url())) {
        assert.ok(Date.now() < end, `the page did not show the action's answer (at ${page.url()})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await page.waitForLoadState();
    };
    // The action's posts, as the balancer passed them: one to each instance, each answered 303.
    const posts = (action: string) =>
      balancer!.passed
        .filter((p) => p.method === 'POST' && p.path === action)
        .map((p) => `${p.instance} ${p.status}`)
        .sort();

    const overview = await open(DESK);
    const heading = (id: string) => overview.locator(`#${id} h2`).textContent();
    assert.equal(await heading('failing'), 'Handlers failing (1)');
    assert.equal(await heading('duplicates'), 'Duplicates to refund (1)');
    for (const [id, section] of [
      [s.stuck, 'failing'],
      [s.duplicate, 'duplicates'],
      [s.paid, 'latest'],
      [s.failed, 'latest'],
    ] as const) {
      const text = (await overview.locator(`#${section}`).textContent()) ?? '';
      assert.ok(text.includes(id), `the overview's ${section} list does not show ${id}`);
    }
    await audit(overview);

    // Each payment's page tells its whole story, entry by entry, whichever instance wrote it.
    const stories: [string, string, (story: string[]) => void][] = [
      [
        'paid',
        s.paid,
        (story) =>
          assert.deepEqual(story, [
            'generate Created: 12500 millimes',
            'webhook Verified with the service: SUCCESS',
            'webhook Handlers ran: confirmed: handled',
            'webhook Webhook delivery answered: 200 handled',
          ]),
      ],
      [
        'failed',
        s.failed,
        (story) =>
          assert.deepEqual(story, [
            'generate Created: 4000 millimes',
            'webhook Verified with the service: FAILURE',
            'webhook Handlers ran: failed: handled',
            'webhook Webhook delivery answered: 200 handled',
          ]),
      ],
      [
        'duplicate',
        s.duplicate,
        (story) => {
          assert.deepEqual(story.slice(0, 3), [
            'generate Created: 7000 millimes',
            'webhook Verified with the service: SUCCESS',
            `webhook Duplicate charge: duplicate of ${s.first}`,
          ]);
          assert.match(story.at(-1) ?? '', /^webhook Webhook delivery answered: 200 /);
        },
      ],
      [
        'stuck',
        s.stuck,
        (story) => {
          assert.equal(story[0], 'generate Created: 9900 millimes');
          assert.ok(
            story.some((e) => /^webhook Handlers ran; error: Error: stock service down .*: confirmed: failed$/.test(e)),
            'no failed handler run',
          );
          assert.ok(
            story.some((e) => /^webhook Webhook delivery answered: 5\d\d /.test(e)),
            'no failed webhook delivery',
          );
        },
      ],
    ];
    for (const [kind, id, check] of stories) {
      const page = await open(pay(id));
      try {
        check(await timeline(page));
      } catch (error) {
        throw new Error(`the ${kind} payment's timeline: ${error instanceof Error ? error.message : String(error)}`);
      }
      assert.ok(!(await page.content()).includes(SECRET), `the ${kind} payment's page shows the webhook secret`);
      await audit(page);
    }

    const search = await open(`${DESK}/search?q=${encodeURIComponent(s.duplicateOrder)}`);
    const found = (await search.locator('main').textContent()) ?? '';
    assert.ok(
      found.includes(s.first) && found.includes(s.duplicate),
      'the search by order does not list its two payments',
    );
    await audit(search);

    const charts = await open(`${DESK}/charts`);
    assert.ok((await charts.locator('svg').count()) > 0, 'the charts page has no chart');
    await audit(charts);

    // Check now and run handlers again, double-clicked: the stock service is back.
    shop.failing.delete(s.stuckOrder);
    const stuck = await open(pay(s.stuck));
    await doubleClick(stuck, 'Check now and run handlers again', `${pay(s.stuck)}/run-handlers`);
    assert.deepEqual(
      posts(`${pay(s.stuck)}/run-handlers`),
      ['0 303', '1 303'],
      'the double click did not post to both instances',
    );
    assert.equal(shop.handled.get(s.stuck), 1, 'the handlers did not run exactly once');
    assert.match(
      (await stuck.locator('[role="status"]').textContent()) ?? '',
      /^The handlers ran and succeeded|^Nothing ran/,
    );
    assert.equal(await stuck.getByText('Nothing to do: the payment is settled.').count(), 1);
    await audit(stuck);

    // Refund this duplicate, double-clicked.
    const refunds = () => sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment').length;
    const duplicate = await open(pay(s.duplicate));
    await doubleClick(duplicate, 'Refund this duplicate', `${pay(s.duplicate)}/refund`);
    assert.deepEqual(
      posts(`${pay(s.duplicate)}/refund`),
      ['0 303', '1 303'],
      'the double click did not post to both instances',
    );
    assert.equal(refunds(), 1, 'the service was not asked for exactly one refund');
    // The second post can arrive once the first one's refund is recorded: it is told "not a
    // duplicate awaiting its refund", and the page shows that answer.
    assert.match(duplicate.url(), /\?done=(refunded(-earlier)?|not-refundable)$/);
    if (duplicate.url().endsWith('not-refundable'))
      await duplicate.goto(duplicate.url().replace(/not-refundable$/, 'refunded'));
    assert.match((await duplicate.locator('[role="status"]').textContent()) ?? '', /refunded/);
    assert.equal(await duplicate.getByText(/Refunded by the service: refund /).count(), 1);
    await audit(duplicate);

    assert.deepEqual(elsewhere, [], 'the desk loaded something from elsewhere');
    assert.deepEqual(violations, [], 'the browser reported Content-Security-Policy violations');
    assert.equal(audited, 9, 'not every page was audited');
    assert.deepEqual(inaccessible, [], 'axe-core found serious or critical accessibility violations');
    return adapter;
  } finally {
    await context.close();
    for (const app of apps) await app.close();
    for (const server of servers)
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await balancer?.close();
    await sandbox.close();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}

async function main(): Promise<string> {
  assertOwnInstall(path.join(__dirname, '..'), (id) => require.resolve(id));
  const nest = require('@nestjs/core/package.json').version as string;
  assert.match(nest, /^11\./, `expected @nestjs/core 11, got ${nest}`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const adapters = [await run('express', browser), await run('fastify', browser)];
    return `node ${process.version}, @nestjs/core ${nest}, ${adapters.join(' and ')} adapters, axe-core ${axe.version}, chromium ${browser.version()}`;
  } finally {
    await browser.close();
  }
}

async function prerequisites(): Promise<string | undefined> {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM} (apt-get install chromium)`;
  if (!(await reachable(REDIS_URL))) return `no Redis at ${REDIS_URL} (set REDIS_URL)`;
  return undefined;
}

prerequisites()
  .then((missing) => {
    if (missing === undefined) return main();
    if (process.env.CI) throw new Error(`${missing}; CI is set`);
    return `skipped: ${missing}`;
  })
  .then(
    (details) =>
      console.log(
        details.startsWith('skipped: ')
          ? `${NAME}: ok (${details})`
          : `${NAME}: ok (paid, failed, duplicate and stuck payments with their timelines, run again and refund once on a double click across two instances, guard, axe-core) [${details}]`,
      ),
    (error: unknown) => {
      console.error(`${NAME}: FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
