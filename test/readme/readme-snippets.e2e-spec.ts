// Every snippet of the README and of the guides in docs/ runs as pasted. `scripts/readme-snippets.mjs`
// extracts them to test/readme/snippets/ (readme.spec.ts checks they are current; `npm test`
// type-checks them):
// the one named `*.e2e-spec.ts` is a test of its own; every other one is imported here, with the
// PAYMENTS_* variables pointing at a PaymentsSandbox, booted (modules in a Nest app, providers
// and controllers beside a module) and exercised by one of the SCENARIOS below, or declared a
// fragment in FRAGMENTS with the reason it cannot run alone. A snippet whose exports no scenario
// uses and no fragment names fails the test: nothing is skipped silently.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  Controller,
  Injectable,
  Logger,
  Module,
  Post,
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import express from 'express';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  getPaymentsServiceToken,
  OnPaymentConfirmed,
  PaymentsModule,
  PaymentsService,
  type PaymentConfirmedEvent,
  type PaymentsClient,
} from '../../lib/index.js';
import { createPaymentsClient } from '../../lib/express/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import { MemoryPaymentsStore, storyLogOf } from '../../lib/store/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { POSTGRES_URL, REDIS_URL } from '../support/services.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { freePort } from '../support/ports.js';

const SNIPPETS = join(import.meta.dirname, 'snippets');
const SECRET = 'readme-snippets-webhook-secret-0123456789abcdef';

/** What a scenario gets: the exports of the snippets it uses, and the running sandbox and port. */
interface Context {
  exports: Record<string, unknown>;
  /** A free port on 127.0.0.1, for a snippet that listens by itself (the one its `env` was given). */
  port: number;
  sandbox: PaymentsSandbox;
  /** `http://127.0.0.1:<port>` of the pre-listened server the booted app serves (PAYMENTS_WEBHOOK_PUBLIC_URL's host). */
  url: string;
  boot(metadata: {
    imports?: Array<Type | DynamicModule>;
    controllers?: Type[];
    providers?: Array<Type | object>;
  }): Promise<INestApplication>;
}

interface Scenario {
  /** What it shows works. */
  name: string;
  /** Exported names of the snippets it runs. */
  uses: string[];
  /** Environment variables to set before its snippets are imported (an app that listens on import reads them then). */
  env?: (port: number) => Record<string, string>;
  run(context: Context): Promise<void>;
}

/** A snippet that cannot run alone: identified by its exports (or `(no exports) <import>`), with the reason. */
interface Fragment {
  identity: string;
  reason: string;
}

/** A port nothing listens on, for a snippet that starts its own server. */

/** A request to one of the booted app's routes. */
function post(url: string, body: unknown = { payment_id: 'pay_unknown' }) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** A JWT-style global guard honouring a public-route flag. */
function refuseUnlessPublic(flag: string): Type<CanActivate> {
  @Injectable()
  class RefuseUnlessPublic implements CanActivate {
    constructor(private readonly reflector: Reflector) {}
    canActivate(context: ExecutionContext) {
      return this.reflector.getAllAndOverride<boolean>(flag, [context.getHandler(), context.getClass()]) === true;
    }
  }
  return RefuseUnlessPublic;
}

@Controller('account')
class AccountController {
  @Post()
  secret() {
    return { secret: true };
  }
}

/** A confirmation handler, for scenarios whose snippets bring none: the payment ids it saw. */
@Injectable()
class ConfirmedPayments {
  readonly ids: string[] = [];
  @OnPaymentConfirmed()
  confirmed(event: PaymentConfirmedEvent): void {
    this.ids.push(event.paymentId);
  }
}

function sandboxPaymentOf(sandbox: PaymentsSandbox, link: string): string {
  const payment = sandbox.payments().find((p) => p.link === link);
  expect(payment).toBeDefined();
  return payment!.paymentId;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'Quick start: ShopModule takes a payment for an order, the webhook marks it paid, the return page verifies the stored id',
    uses: ['ShopModule', 'CheckoutController', 'OrdersService'],
    async run({ exports, sandbox, url, boot }) {
      const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
      try {
        const app = await boot({ imports: [exports.ShopModule as Type] });
        const orders = app.get(
          exports.OrdersService as Type<{ find(id: string): { paymentId?: string; status: string } | undefined }>,
        );
        const pay = await fetch(`${url}/orders/order-7/pay`, { method: 'POST', redirect: 'manual' });
        expect(pay.status).toBe(303);
        const paymentId = sandboxPaymentOf(sandbox, pay.headers.get('location')!);
        expect(orders.find('order-7')).toMatchObject({ paymentId, status: 'new' });
        expect(sandbox.getPayment(paymentId)).toMatchObject({
          amount: '12500',
          developerTrackingId: 'order-7',
          successLink: 'http://localhost:3000/orders/order-7/back',
        });
        expect(await (await fetch(`${url}/orders/order-7/back`)).text()).toBe('Processing, refresh in a moment.');
        await expect(sandbox.completePayment(paymentId)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
        expect(orders.find('order-7')?.status).toBe('paid');
        expect(log).toHaveBeenCalledWith(expect.stringContaining('order order-7 paid: 12500 millimes'));
        expect(await app.get(PaymentsService).getOutcome(paymentId)).toMatchObject({
          outcome: 'confirmed',
          source: 'webhook',
          handlers: 'succeeded',
        });
        // The query's payment_id is a hint only: the order's stored id is the one verified.
        expect(await (await fetch(`${url}/orders/order-7/back?payment_id=someone-elses`)).text()).toBe(
          'Thank you, paid.',
        );
        // An order without a payment, or no such order: 404, never a 500.
        const missing = await fetch(`${url}/orders/order-404/back?payment_id=${paymentId}`);
        expect(missing.status).toBe(404);
      } finally {
        log.mockRestore();
      }
    },
  },
  {
    name: 'Global guards: webhook.decorators mark the webhook route public for a deny-by-default APP_GUARD',
    uses: ['PublicWebhookModule', 'IS_PUBLIC_KEY'],
    async run({ exports, url, boot }) {
      await boot({
        imports: [exports.PublicWebhookModule as Type],
        controllers: [AccountController],
        providers: [{ provide: APP_GUARD, useClass: refuseUnlessPublic(exports.IS_PUBLIC_KEY as string) }],
      });
      expect((await post(`${url}/account`)).status).toBe(403);
      // Past the host's guard, the plugin's token check answers.
      expect((await post(`${url}/payments/webhook/forged-token`)).status).toBe(401);
    },
  },
  {
    name: 'Pre-authorization: CaptureLater holds, and captures part once the authorization arrives by webhook',
    uses: ['CaptureLater'],
    async run({ exports, sandbox, url, boot }) {
      const app = await boot({
        imports: [
          PaymentsModule.forRoot(
            sandbox.options({
              webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET },
              reconciliation: { enabled: false },
            }),
          ),
        ],
        providers: [exports.CaptureLater as Type],
      });
      const captureLater = app.get(exports.CaptureLater as Type<{ hold(orderId: string): Promise<string> }>);
      const paymentId = sandboxPaymentOf(sandbox, await captureLater.hold('order-5'));
      await expect(sandbox.completePayment(paymentId)).resolves.toMatchObject({
        status: 'PREAUTH_SUCCESS',
        delivered: true,
      });
      expect(sandbox.getPayment(paymentId)).toMatchObject({ state: 'captured', clientId: 'customer-17' });
      expect(
        sandbox.requests
          .filter((r) => r.path === '/api/v2/confirm_payment')
          .map((r) => JSON.parse(r.body ?? '{}') as unknown),
      ).toEqual([expect.objectContaining({ amount: '15000' })]);
    },
  },
  {
    name: 'Configuration from the environment: AppModule reads PAYMENTS_*, a failed payment reaches its webhook',
    uses: ['AppModule'],
    async run({ exports, sandbox, url, boot }) {
      const app = await boot({ imports: [exports.AppModule as Type] });
      const payments = app.get(PaymentsService);
      const { paymentId } = await payments.generatePayment({ amount: '3000' });
      expect(sandbox.getPayment(paymentId)?.webhook?.startsWith(`${url}/payments/webhook/`)).toBe(true);
      await expect(sandbox.failPayment(paymentId)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(await payments.getOutcome(paymentId)).toMatchObject({ outcome: 'failed', source: 'webhook' });
    },
  },
  {
    name: 'Several merchant accounts: two registrations, each with its own keys, service and webhook route',
    uses: ['MarketplaceModule', 'Marketplace'],
    async run({ exports, sandbox, url, boot }) {
      const app = await boot({ imports: [exports.MarketplaceModule as Type] });
      expect(app.get(exports.Marketplace as Type)).toBeDefined();
      const links = { successLink: 'https://shop.example.com/ok', failLink: 'https://shop.example.com/ko' };
      const shop = await app.get(PaymentsService).generatePayment({ amount: '1000', ...links });
      const outlet = await app
        .get<PaymentsService>(getPaymentsServiceToken('outlet'))
        .generatePayment({ amount: '2000', ...links });
      expect([sandbox.getPayment(shop.paymentId)?.webhook, sandbox.getPayment(outlet.paymentId)?.webhook]).toEqual([
        expect.stringMatching(/^https:\/\/shop\.example\.com\/payments\/webhook\/[^/]+$/),
        expect.stringMatching(/^https:\/\/shop\.example\.com\/payments\/outlet\/webhook\/[^/]+$/),
      ]);
      expect((await post(`${url}/payments/webhook/forged-token`)).status).toBe(401);
      expect((await post(`${url}/payments/outlet/webhook/forged-token`)).status).toBe(401);
    },
  },
  {
    name: "Several merchant accounts, async: OutletModule's static path and decorators, its own PAYMENTS_OUTLET_* (public URL included)",
    uses: ['OutletModule'],
    env: () => ({
      PAYMENTS_OUTLET_PUBLIC_KEY: process.env.PAYMENTS_PUBLIC_KEY!,
      PAYMENTS_OUTLET_PRIVATE_KEY: process.env.PAYMENTS_PRIVATE_KEY!,
      PAYMENTS_OUTLET_BASE_URL: process.env.PAYMENTS_BASE_URL!,
      PAYMENTS_OUTLET_WEBHOOK_PUBLIC_URL: `${new URL(process.env.PAYMENTS_WEBHOOK_PUBLIC_URL!).origin}/payments/outlet/webhook`,
      PAYMENTS_OUTLET_WEBHOOK_SECRET: SECRET,
      PAYMENTS_OUTLET_RECONCILIATION_ENABLED: 'false',
      PAYMENTS_OUTLET_SUCCESS_LINK: 'https://shop.example.com/ok',
      PAYMENTS_OUTLET_FAIL_LINK: 'https://shop.example.com/ko',
    }),
    async run({ exports, sandbox, url, boot }) {
      const app = await boot({
        imports: [exports.OutletModule as Type],
        controllers: [AccountController],
        providers: [{ provide: APP_GUARD, useClass: refuseUnlessPublic('isPublic') }, ConfirmedPayments],
      });
      const { paymentId } = await app
        .get<PaymentsService>(getPaymentsServiceToken('outlet'))
        .generatePayment({ amount: '2000' });
      expect(sandbox.getPayment(paymentId)).toMatchObject({ amount: '2000', state: 'pending' });
      expect(sandbox.getPayment(paymentId)?.webhook?.startsWith(`${url}/payments/outlet/webhook/`)).toBe(true);
      expect(await sandbox.completePayment(paymentId)).toMatchObject({ delivered: true, lastStatus: 200 });
      expect(app.get(ConfirmedPayments).ids).toEqual([paymentId]);
      expect((await post(`${url}/account`)).status).toBe(403);
      expect((await post(`${url}/payments/outlet/webhook/forged-token`)).status).toBe(401);
      expect((await post(`${url}/payments/webhook/forged-token`)).status).toBe(404);
    },
  },
  {
    name: 'Errors: refund() tells a refund from a refusal',
    uses: ['refund'],
    async run({ exports, sandbox, boot }) {
      const refund = exports.refund as (payments: PaymentsService, paymentId: string) => Promise<string>;
      const app = await boot({
        imports: [PaymentsModule.forRoot(sandbox.options({ reconciliation: { enabled: false } }))],
      });
      const payments = app.get(PaymentsService);
      const { paymentId } = await payments.generatePayment({ amount: '4000' });
      await sandbox.completePayment(paymentId);
      expect(await refund(payments, paymentId)).toBe('refunded');
      expect(await refund(payments, paymentId)).toBe('not refundable');
    },
  },
  {
    name: 'Stores: the Redis and the PostgreSQL registrations build their store from ConfigService, and a payment is confirmed through it',
    uses: ['RedisPaymentsModule', 'PostgresPaymentsModule', 'migrationSql'],
    env: () => ({ REDIS_URL: REDIS_URL, DATABASE_URL: POSTGRES_URL }),
    async run({ exports, sandbox, boot }) {
      expect(exports.migrationSql).toMatch(/CREATE TABLE IF NOT EXISTS/);
      for (const [module, kind] of [
        [exports.RedisPaymentsModule, RedisPaymentsStore],
        [exports.PostgresPaymentsModule, PostgresPaymentsStore],
      ] as const) {
        const app = await boot({ imports: [module as Type], providers: [ConfirmedPayments] });
        const client = app.get<PaymentsClient>(getPaymentsClientToken());
        expect(client.store).toBeInstanceOf(kind);
        const { paymentId } = await app.get(PaymentsService).generatePayment({ amount: '3100' });
        await expect(sandbox.completePayment(paymentId)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
        expect(app.get(ConfirmedPayments).ids).toEqual([paymentId]);
        expect(await client.store.getOutcome(paymentId)).toMatchObject({ outcome: 'confirmed', source: 'webhook' });
      }
    },
  },
];

SCENARIOS.push(
  {
    name: "Operations: the health module, beside the app's registration, answers up for its store and the service, through one cached bindings read",
    uses: ['HealthModule', 'HealthController'],
    async run({ exports, sandbox, url, boot }) {
      // The merchant's registration, with its own store: the one the indicator must check.
      const store = new (class extends MemoryPaymentsStore {
        pings = 0;
        override async ping(): Promise<void> {
          this.pings++;
        }
      })();
      await boot({
        imports: [
          PaymentsModule.forRoot(sandbox.options({ store, reconciliation: { enabled: false } })),
          exports.HealthModule as Type,
        ],
      });
      sandbox.clearRequests();
      for (let i = 0; i < 3; i++) {
        const answer = await fetch(`${url}/health`);
        expect(answer.status).toBe(200);
        expect(await answer.json()).toMatchObject({
          status: 'ok',
          info: { payments: { status: 'up', store: 'up', service: 'up' } },
        });
      }
      expect(sandbox.requests.map((r) => r.path)).toEqual(['/api/v2/bindings/list']);
      expect(store.pings).toBe(3);
    },
  },
  {
    name: 'Operations: the failed-handlers admin lists a payment whose handler failed, and its retry runs it',
    uses: ['FailedHandlersController'],
    async run({ exports, sandbox, url, boot }) {
      const shop = { down: true, paid: [] as string[] };
      @Injectable()
      class Orders {
        @OnPaymentConfirmed()
        markPaid(event: PaymentConfirmedEvent) {
          if (shop.down) throw new Error('the orders database is down');
          shop.paid.push(event.paymentId);
        }
      }
      const app = await boot({
        imports: [PaymentsModule.forRoot(sandbox.options({ reconciliation: { enabled: false } }))],
        controllers: [exports.FailedHandlersController as Type],
        providers: [Orders],
      });
      const payments = app.get(PaymentsService);
      const { paymentId } = await payments.generatePayment({ amount: '5000' });
      await sandbox.completePayment(paymentId);
      expect(await payments.reconcilePayment(paymentId)).toMatchObject({
        outcome: 'confirmed',
        handled: false,
        error: expect.any(String),
      });
      const failed = (await (await fetch(`${url}/admin/outcomes/failed`)).json()) as {
        items: Array<{ paymentId: string; handlers: string }>;
      };
      expect(failed.items.map((r) => [r.paymentId, r.handlers])).toEqual([[paymentId, 'failed']]);
      shop.down = false;
      const retried = await fetch(`${url}/admin/outcomes/${paymentId}/retry`, { method: 'POST' });
      expect(await retried.json()).toMatchObject({ paymentId, outcome: 'confirmed', handled: true });
      expect(shop.paid).toEqual([paymentId]);
      expect(await (await fetch(`${url}/admin/outcomes/failed`)).json()).toEqual({ items: [] });
    },
  },
);

SCENARIOS.push({
  name: 'Quick start (Express): startShop(0) listens on a free port, names it in its links, marks orders paid and answers 404 for no payment',
  uses: ['startShop'],
  async run({ exports, sandbox }) {
    const startShop = exports.startShop as (port: number) => Promise<{
      url: string;
      server: Server;
      orders: Map<string, { paymentId?: string; status: string }>;
      stop(): Promise<void>;
    }>;
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const webhookUrl = process.env.PAYMENTS_WEBHOOK_PUBLIC_URL;
    delete process.env.PAYMENTS_WEBHOOK_PUBLIC_URL; // the shop's own address, then
    const shop = await startShop(0);
    try {
      expect(shop.url).toMatch(/^http:\/\/localhost:[1-9]\d*$/);
      const pay = await fetch(`${shop.url}/orders/order-8/pay`, { method: 'POST', redirect: 'manual' });
      expect(pay.status).toBe(303);
      const paymentId = sandboxPaymentOf(sandbox, pay.headers.get('location')!);
      expect(sandbox.getPayment(paymentId)).toMatchObject({
        amount: '12500',
        developerTrackingId: 'order-8',
        successLink: `${shop.url}/orders/order-8/back`,
      });
      expect(sandbox.getPayment(paymentId)?.webhook?.startsWith(`${shop.url}/payments/webhook/`)).toBe(true);
      expect(await (await fetch(`${shop.url}/orders/order-8/back`)).text()).toBe('pending');
      await expect(sandbox.completePayment(paymentId)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(log).toHaveBeenCalledWith('order order-8 paid');
      expect(shop.orders.get('order-8')?.status).toBe('paid');
      expect(await (await fetch(`${shop.url}/orders/order-8/back?payment_id=someone-elses`)).text()).toBe('confirmed');
      expect((await fetch(`${shop.url}/orders/order-404/back?payment_id=${paymentId}`)).status).toBe(404);

      const declined = sandboxPaymentOf(
        sandbox,
        (await fetch(`${shop.url}/orders/order-9/pay`, { method: 'POST', redirect: 'manual' })).headers.get(
          'location',
        )!,
      );
      await expect(sandbox.failPayment(declined)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(log).toHaveBeenCalledWith('order order-9 not paid: FAILURE');
      expect(shop.orders.get('order-9')?.status).toBe('not paid');
    } finally {
      log.mockRestore();
      process.env.PAYMENTS_WEBHOOK_PUBLIC_URL = webhookUrl;
      await shop.stop();
    }
    expect(shop.server.listening).toBe(false);
  },
});

SCENARIOS.push({
  name: 'Express guide: a client on Redis and its router mounted at the webhook path; each callback runs, by webhook or by the return check; close() ends it',
  uses: ['mountPayments'],
  env: (port) => ({ REDIS_URL, PAYMENTS_WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${port}/payments/webhook` }),
  async run({ exports, sandbox, port }) {
    const mountPayments = exports.mountPayments as (app: express.Express, orders: object) => PaymentsClient;
    const calls: string[] = [];
    const orders = {
      paid: async (order: string, paymentId: string) => void calls.push(`paid ${order} ${paymentId}`),
      notPaid: async (order: string, status: string) => void calls.push(`not paid ${order} ${status}`),
      held: async (order: string, paymentId: string) => void calls.push(`held ${order} ${paymentId}`),
      investigate: async (paymentId: string, problems: readonly string[]) =>
        void calls.push(`investigate ${paymentId} ${problems.length}`),
    };
    const app = express();
    const payments = mountPayments(app, orders);
    const server = app.listen(port, '127.0.0.1');
    await once(server, 'listening');
    const links = { successLink: 'https://shop.example.com/ok', failLink: 'https://shop.example.com/ko' };
    const order = `express-guide-${Date.now()}`;
    const generate = async (suffix: string, extra: object = {}) =>
      (
        await payments.generatePayment({
          amount: '4100',
          developerTrackingId: `${order}-${suffix}`,
          ...links,
          ...extra,
        })
      ).paymentId;
    try {
      expect(payments.store).toBeInstanceOf(RedisPaymentsStore);
      // By webhook, on the router's path.
      const confirmed = await generate('a');
      expect(sandbox.getPayment(confirmed)?.webhook?.startsWith(`http://127.0.0.1:${port}/payments/webhook/`)).toBe(
        true,
      );
      await expect(sandbox.completePayment(confirmed)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(calls).toContain(`paid ${order}-a ${confirmed}`);
      const failed = await generate('b');
      await expect(sandbox.failPayment(failed)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(calls).toContain(`not paid ${order}-b FAILURE`);
      const held = await generate('c', { preAuthorization: true });
      await expect(sandbox.completePayment(held)).resolves.toMatchObject({ delivered: true, lastStatus: 200 });
      expect(calls).toContain(`held ${order}-c ${held}`);
      // By the return check: the router registered its callbacks on the client.
      const expired = await generate('d');
      await sandbox.expirePayment(expired); // no webhook for an expiry
      await expect(payments.reconcilePayment(expired)).resolves.toMatchObject({ outcome: 'expired', handled: true });
      expect(calls).toContain(`not paid ${order}-d EXPIRED`);
      const mismatched = await generate('e');
      sandbox.fault(verifyPath(mismatched), {
        body: JSON.stringify(verifyAnswer({ status: 'SUCCESS', amount: 100, trackingId: `${order}-e` })),
      });
      const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        await expect(payments.reconcilePayment(mismatched)).resolves.toMatchObject({ outcome: 'mismatch' });
        expect(stderr).toHaveBeenCalledWith(
          expect.stringContaining(`${mismatched} is SUCCESS at the service but NOT confirmed`),
        );
      } finally {
        stderr.mockRestore();
        sandbox.fault(verifyPath(mismatched), null);
      }
      expect(calls).toContain(`investigate ${mismatched} 1`);
      expect(calls.filter((call) => call.includes(order) || call.includes(mismatched))).toHaveLength(5); // each once
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await payments.close();
    }
    await expect(payments.generatePayment({ amount: '4100', ...links })).rejects.toThrow();
  },
});

const FRAGMENTS: Fragment[] = [
  {
    identity: 'payWithoutWebhook',
    reason:
      "a helper a host's test calls; what it relies on (completePayment with requireDelivery: false resolves with delivered false) is asserted by the sandbox's own suite (test/testing)",
  },
  // The recipes of docs/exactly-once.md need a database: test/transactional/recipes.e2e-spec.ts
  // checks each is a file there word for word and runs it on PostgreSQL and PGlite.
  {
    identity: 'transactionalStore, markPaidWithSql',
    reason: 'run by test/transactional/recipes.e2e-spec.ts (PostgreSQL)',
  },
  { identity: 'markPaidWithDrizzle', reason: 'run by test/transactional/recipes.e2e-spec.ts (PostgreSQL)' },
  { identity: 'markPaidWithDrizzleOnPglite', reason: 'run by test/transactional/recipes.e2e-spec.ts (PGlite)' },
  { identity: 'markPaidInNestedTransaction', reason: 'run by test/transactional/recipes.e2e-spec.ts (PostgreSQL)' },
  // The inbox recipes need a host database: test/inbox/recipes.e2e-spec.ts checks each is a file
  // there word for word and runs it on PostgreSQL and MariaDB.
  { identity: 'pgInbox, markPaidWithPg', reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL)' },
  { identity: 'mysqlInbox, markPaidWithMysql2', reason: 'run by test/inbox/recipes.e2e-spec.ts (MariaDB)' },
  {
    identity: 'ORDER_ENTITIES, typeormInbox, markPaidWithTypeorm',
    reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL and MariaDB)',
  },
  {
    identity: 'SHOP_ENTITIES, PaidOrdersService, TransactionalShopModule',
    reason:
      'run by test/nest/cls-transactional.e2e-spec.ts in a Nest app of its own process (nestjs-cls is CommonJS, which Jest on Node 20 cannot load beside Nest 12), on PostgreSQL and MariaDB',
  },
  {
    identity: 'prismaInbox, markPaidWithPrisma',
    reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL and MariaDB)',
  },
  { identity: 'knexInbox, markPaidWithKnex', reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL and MariaDB)' },
  {
    identity: 'kyselyInbox, markPaidWithKysely',
    reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL and MariaDB)',
  },
  { identity: 'drizzlePgInbox, markPaidWithDrizzlePg', reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL)' },
  {
    identity: 'drizzleMysqlInbox, markPaidWithDrizzleMysql',
    reason: 'run by test/inbox/recipes.e2e-spec.ts (MariaDB)',
  },
  {
    identity: 'MIKRO_ORDER_ENTITIES, mikroOrmInbox, markPaidWithMikroOrm',
    reason: 'run by test/inbox/recipes.e2e-spec.ts (PostgreSQL and MariaDB)',
  },
  // How a recipe is wired into an app: every recipe runs through them on its databases.
  { identity: 'mountInboxPayments', reason: 'run by test/inbox/recipes.e2e-spec.ts (an Express app)' },
  {
    identity: 'PaidOrders, InboxPaymentsModule',
    reason: 'run by test/inbox/recipes.nest.e2e-spec.ts (a Nest 12 app) and test/compat/apps/nest11-inbox (Nest 11)',
  },
  // docs/vendure.md's configuration needs a Vendure server (Nest 11): test/platforms/vendure runs it as printed.
  { identity: 'nestjsPayments', reason: 'run by test/platforms/vendure (a real Vendure 3.7 server)' },
  {
    identity: 'sharedPayments',
    reason:
      "docs/vendure.md's shared store: the configuration above plus one option; the store is run by the PostgreSQL store's suites",
  },
  {
    identity: 'orderRequestPayments',
    reason:
      "docs/vendure.md's per-order request: test/platforms/vendure's request test runs it as printed (a real Vendure 3.7 server)",
  },
  {
    identity: 'perChannelPayments',
    reason:
      "docs/vendure.md's accounts per channel: the configuration above plus store options; test/platforms/vendure's channels test runs storeForPaymentMethod (in-memory stores) on a real Vendure",
  },
];

/** Snippets that are whole test files, run by Jest as such. */
const OWN_TESTS = ['readme-recipe.e2e-spec.ts', 'store-contract.e2e-spec.ts'];

function snippetFiles(): Array<{ file: string; exports: string[]; identity: string }> {
  return readdirSync(SNIPPETS)
    .filter((file) => file.endsWith('.ts') && !OWN_TESTS.includes(file))
    .sort()
    .map((file) => {
      const text = readFileSync(join(SNIPPETS, file), 'utf8');
      const exports = [...text.matchAll(/^export (?:async )?(?:class|const|function|let) (\w+)/gm)].map((m) => m[1]);
      const firstPackage = /from '(nestjs-payments[^']*)'/.exec(text)?.[1] ?? '?';
      return { file, exports, identity: exports.length > 0 ? exports.join(', ') : `(no exports) ${firstPackage}` };
    });
}

const ENV = {
  PAYMENTS_WEBHOOK_SECRET: SECRET,
  PAYMENTS_RECONCILIATION_ENABLED: 'false',
  PAYMENTS_SUCCESS_LINK: 'https://shop.example.com/ok',
  PAYMENTS_FAIL_LINK: 'https://shop.example.com/ko',
};

let sandbox: PaymentsSandbox;
let server: Server;
let url: string;
const saved: Record<string, string | undefined> = {};
const running: INestApplication[] = [];

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start();
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { publicKey, privateKey } = sandbox.options();
  const env: Record<string, string> = {
    ...ENV,
    PAYMENTS_PUBLIC_KEY: publicKey,
    PAYMENTS_PRIVATE_KEY: privateKey,
    PAYMENTS_PUBLIC_KEY_SHOP: publicKey,
    PAYMENTS_PRIVATE_KEY_SHOP: privateKey,
    PAYMENTS_PUBLIC_KEY_OUTLET: publicKey,
    PAYMENTS_PRIVATE_KEY_OUTLET: privateKey,
    PAYMENTS_BASE_URL: sandbox.url,
    PAYMENTS_WEBHOOK_PUBLIC_URL: `${url}/payments/webhook`,
  };
  for (const [key, value] of Object.entries(env)) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
});

afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await sandbox.close();
});

/** The host's authentication as docs/desk.md assumes it: `request.user` from a header standing for a session. */
function signedIn(header: string | string[] | undefined): { email: string; name: string; roles: string[] } | undefined {
  if (header === 'ana') return { email: 'ana@shop.example', name: 'Ana', roles: ['payments'] };
  if (header === 'bob') return { email: 'bob@shop.example', name: 'Bob', roles: ['catalogue'] };
  return undefined;
}

/** A paid payment the desk must show, and the desk's answers to nobody, to Bob (not staff) and to Ana. */
async function checkDesk(desk: string, paymentId: string): Promise<void> {
  const as = (user?: string) => fetch(desk, { headers: user === undefined ? {} : { 'x-user': user } });
  expect((await as()).status).toBe(401);
  expect((await as('bob')).status).toBe(403);
  const page = await as('ana');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
  const body = await page.text();
  expect(body).toContain('Signed in as Ana');
  expect(body).toContain(paymentId);
}

SCENARIOS.push(
  {
    name: "Payments desk: the PostgreSQL store's story option keeps 100 entries a payment for 7 days, in 15-minute buckets, and tells a paid payment's story",
    uses: ['store'],
    env: () => ({ DATABASE_URL: POSTGRES_URL }),
    async run({ exports, sandbox }) {
      const store = exports.store as PostgresPaymentsStore;
      const log = storyLogOf(store);
      expect(log?.limits).toEqual({ maxEntries: 100, retentionMs: 7 * 24 * 3600 * 1000, bucketMs: 900_000 });
      const client = createPaymentsClient(sandbox.options({ store, reconciliation: { enabled: false } }));
      try {
        const { paymentId } = await client.generatePayment({ amount: '2700' });
        await sandbox.completePayment(paymentId);
        await client.reconcilePayment(paymentId);
        // The story is written after the paths that note it, never awaited by them.
        const told = ['created', 'verify', 'handlers', 'return'];
        let kinds: string[] = [];
        for (let i = 0; i < 50 && !told.every((k) => kinds.includes(k)); i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          kinds = (await log!.entries(client.name ?? '', paymentId)).map((e) => e.kind);
        }
        expect(kinds).toEqual(expect.arrayContaining(told));
      } finally {
        await client.close();
        await store.close();
      }
    },
  },
  {
    name: 'Payments desk (Nest): AdminModule serves the desk at /admin/payments behind PaymentsStaffGuard',
    uses: ['AdminModule', 'PaymentsStaffGuard'],
    async run({ exports, sandbox, url, boot }) {
      @Injectable()
      class Session implements CanActivate {
        canActivate(context: ExecutionContext): boolean {
          const request = context.switchToHttp().getRequest<{ headers: Record<string, string>; user?: unknown }>();
          request.user = signedIn(request.headers['x-user']);
          return true;
        }
      }
      const app = await boot({
        imports: [exports.AdminModule as Type],
        providers: [{ provide: APP_GUARD, useClass: Session }, ConfirmedPayments],
      });
      const payments = app.get(PaymentsService);
      const { paymentId } = await payments.generatePayment({ amount: '2500' });
      await expect(sandbox.completePayment(paymentId)).resolves.toMatchObject({ delivered: true });
      await checkDesk(`${url}/admin/payments`, paymentId);
    },
  },
  {
    name: 'Payments desk (Express): mountDesk serves the desk at /admin/payments behind authorize',
    uses: ['mountDesk'],
    async run({ exports, sandbox, port }) {
      const mountDesk = exports.mountDesk as (app: express.Express, client: PaymentsClient) => void;
      const client = createPaymentsClient(sandbox.options({ reconciliation: { enabled: false } }));
      const app = express();
      app.use((req, _res, next) => {
        (req as { user?: unknown }).user = signedIn(req.headers['x-user']);
        next();
      });
      mountDesk(app, client);
      const server = app.listen(port, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { paymentId } = await client.generatePayment({ amount: '2500' });
        await sandbox.completePayment(paymentId);
        await client.reconcilePayment(paymentId);
        await checkDesk(`http://127.0.0.1:${port}/admin/payments`, paymentId);
      } finally {
        await new Promise((resolve) => server.close(resolve));
        await client.close();
      }
    },
  },
);

/** Boots a Nest app (Express) serving the pre-listened server; closed after the scenario. */
async function boot(metadata: Parameters<Context['boot']>[0]): Promise<INestApplication> {
  @Module({
    imports: metadata.imports ?? [],
    controllers: metadata.controllers ?? [],
    providers: (metadata.providers ?? []) as never[],
  })
  class HostModule {}
  const moduleRef = await Test.createTestingModule({ imports: [HostModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  running.push(app);
  await app.init();
  server.removeAllListeners('request');
  server.on('request', app.getHttpAdapter().getInstance() as RequestListener);
  return app;
}

async function importSnippets(names: string[]): Promise<Record<string, unknown>> {
  const exports: Record<string, unknown> = {};
  for (const snippet of snippetFiles().filter((s) => s.exports.some((e) => names.includes(e)))) {
    Object.assign(exports, (await import(join(SNIPPETS, snippet.file))) as Record<string, unknown>);
  }
  return exports;
}

describe('README and guide snippets', () => {
  it('each one is run by a scenario below, is a test of its own, or is a declared fragment', () => {
    const used = new Set(SCENARIOS.flatMap((s) => s.uses));
    const fragments = new Set(FRAGMENTS.map((f) => f.identity));
    const snippets = snippetFiles();
    const unaccounted = snippets.filter(
      (s) => (s.exports.length === 0 || !s.exports.every((e) => used.has(e))) && !fragments.has(s.identity),
    );
    expect(unaccounted.map((s) => `${s.file}: ${s.identity}`)).toEqual([]);
    // And nothing stale: every name a scenario uses, and every fragment, is still in the docs.
    const exported = new Set(snippets.flatMap((s) => s.exports));
    // One name, one snippet: a scenario imports every snippet exporting a name it uses.
    expect(snippets.flatMap((s) => s.exports).filter((name, i, all) => all.indexOf(name) !== i)).toEqual([]);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    expect(FRAGMENTS.filter((f) => !snippets.some((s) => s.identity === f.identity))).toEqual([]);
    for (const file of OWN_TESTS) expect(readdirSync(SNIPPETS)).toContain(file);
  });

  it('each declared fragment (type-checked only) is exactly one snippet', () => {
    for (const { identity } of FRAGMENTS) expect(snippetFiles().filter((s) => s.identity === identity)).toHaveLength(1);
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
    const port = await freePort();
    const env = scenario.env?.(port) ?? {};
    const before = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
    Object.assign(process.env, env);
    try {
      const exports = await importSnippets(scenario.uses);
      expect(Object.keys(exports)).toEqual(expect.arrayContaining(scenario.uses));
      await scenario.run({ exports, sandbox, url, port, boot });
    } finally {
      for (const [key, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      for (const app of running.splice(0)) await app.close();
    }
  });
});
