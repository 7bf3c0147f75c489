// Compatibility app: the payments desk in a Nest 11 CommonJS app, on the Express adapter and then
// on the Fastify adapter, read in a real browser (Debian's chromium through playwright-core).
// For each adapter: a PaymentsSandbox, the shop of shop.module.ts (test/compat/shared/, copied
// into src/ by run.sh) with PaymentsDeskModule.forRoot() behind a guard of the app's own; one
// payment paid (its signed webhook delivered) and one failed; then in the browser, as the support
// person the guard lets in: the overview lists both, each payment's page tells its story, every
// page carries the desk's Content-Security-Policy, and nothing loads from anywhere; without the
// guard's header every page and action is refused (401). Prints `nest11-desk: ok (...)` and exits
// 0, or prints why and exits 1. Without chromium it says so and fails under CI, else skips.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
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
import { PaymentsService } from 'nestjs-payments';
import { PaymentsDeskModule } from 'nestjs-payments/desk';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { chromium, type Browser } from 'playwright-core';
import { assertOwnInstall } from './nest-scenario.js';
import { Orders, ShopModule } from './shop.module.js';

const NAME = 'nest11-desk';
const CHROMIUM = '/usr/bin/chromium';
const SECRET = 'compat-desk-webhook-secret-5c1e9a7b3d2f4e60';
const DESK = '/admin/payments';

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

@Module({})
class DeskShopModule {
  static register(sandbox: PaymentsSandbox, url: string): DynamicModule {
    return {
      module: DeskShopModule,
      imports: [
        ShopModule.register({
          payments: () => sandbox.options({ webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET } }),
        }),
        PaymentsDeskModule.forRoot({ path: DESK.slice(1), guard: SupportGuard }),
      ],
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
  const options = { logger: ['error', 'warn'] as ('error' | 'warn')[] };
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

/** One adapter's run: the payments, then the desk in the browser. Returns what it saw. */
async function run(adapter: Adapter, browser: Browser): Promise<string> {
  const sandbox = await PaymentsSandbox.start({ port: 0 });
  const server = http.createServer();
  const url = await listen(server);
  const app = await start(adapter, DeskShopModule.register(sandbox, url), server);
  const context = await browser.newContext({ extraHTTPHeaders: { 'x-staff': 'support' } });
  try {
    const payments = app.get(PaymentsService);
    const paid = await payments.generatePayment({ amount: '12500', developerTrackingId: `desk-paid-${adapter}` });
    const settled = await sandbox.completePayment(paid.paymentId);
    assert.equal(settled.webhook?.status, 200, `the paid payment's webhook got ${JSON.stringify(settled.webhook)}`);
    assert.equal(app.get(Orders).confirmed.length, 1, 'the confirmation handler did not run once');
    const failed = await payments.generatePayment({ amount: '4000', developerTrackingId: `desk-failed-${adapter}` });
    const declined = await sandbox.failPayment(failed.paymentId);
    assert.equal(declined.webhook?.status, 200, `the failed payment's webhook got ${JSON.stringify(declined.webhook)}`);

    // Without the guard's header: every page and every action is refused before the desk runs.
    for (const [method, target] of [
      ['GET', DESK],
      ['GET', `${DESK}/charts`],
      ['GET', `${DESK}/payments/${paid.paymentId}`],
      ['POST', `${DESK}/payments/${paid.paymentId}/run-handlers`],
      ['POST', `${DESK}/payments/${paid.paymentId}/refund`],
    ] as const) {
      const answer = await fetch(url + target, { method, redirect: 'manual' });
      assert.equal(answer.status, 401, `${method} ${target} without the guard's header answered ${answer.status}`);
    }

    const page = await context.newPage();
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(url)) elsewhere.push(request.url());
    });
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });

    const overview = await page.goto(url + DESK);
    assert.equal(overview?.status(), 200, `the overview answered ${overview?.status()}`);
    const csp = (await overview?.allHeaders())?.['content-security-policy'] ?? '';
    assert.match(csp, /default-src 'none'/, `the overview's Content-Security-Policy: ${csp || 'none'}`);
    const listed = await page.locator('body').innerText();
    for (const id of [paid.paymentId, failed.paymentId])
      assert.ok(listed.includes(id), `the overview does not list ${id}`);

    for (const [id, says] of [
      [paid.paymentId, /confirmed/i],
      [failed.paymentId, /failed/i],
    ] as const) {
      const answer = await page.goto(`${url}${DESK}/payments/${encodeURIComponent(id)}`);
      assert.equal(answer?.status(), 200, `${id}'s page answered ${answer?.status()}`);
      const text = await page.locator('body').innerText();
      assert.match(text, says, `${id}'s page does not say ${says}`);
      assert.match(text, /webhook/i, `${id}'s story has no webhook`);
      assert.match(text, /created/i, `${id}'s story has no creation`);
      assert.ok(!text.includes(SECRET), `${id}'s page shows the webhook secret`);
    }
    const charts = await page.goto(`${url}${DESK}/charts`);
    assert.equal(charts?.status(), 200, `the charts answered ${charts?.status()}`);
    assert.ok((await page.locator('svg').count()) > 0, 'the charts page has no chart');
    assert.deepEqual(elsewhere, [], 'the desk loaded something from elsewhere');
    assert.deepEqual(violations, [], 'the browser reported Content-Security-Policy violations');
    return adapter;
  } finally {
    await context.close();
    await app.close();
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await sandbox.close();
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
    return `node ${process.version}, @nestjs/core ${nest}, ${adapters.join(' and ')} adapters, chromium ${browser.version()}`;
  } finally {
    await browser.close();
  }
}

if (!existsSync(CHROMIUM)) {
  if (process.env.CI) {
    console.error(`${NAME}: FAIL: no chromium at ${CHROMIUM} (CI is set: apt-get install chromium)`);
    process.exit(1);
  }
  console.log(`${NAME}: ok (skipped: no chromium at ${CHROMIUM})`);
} else {
  main().then(
    (details) => console.log(`${NAME}: ok (desk overview, payment pages, charts, guard) [${details}]`),
    (error: unknown) => {
      console.error(`${NAME}: FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
}
