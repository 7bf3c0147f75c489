import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, Post, Req, SetMetadata, UseGuards, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import {
  InjectPayments,
  InjectPaymentsClient,
  OnPaymentConfirmed,
  OnPaymentEvent,
  PAYMENTS_WEBHOOK_AUTHENTICATION,
  PaymentEvents,
  PaymentsClient,
  PaymentsModule,
  PaymentsService,
  PaymentsWebhookGuard,
  getPaymentsClientToken,
  paymentsOptionsFromConfig,
  type PaymentConfirmedEvent,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
  type PaymentsWebhookAuthentication,
} from '../../lib/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import { ADAPTERS, answerVerify, generateThrough, startNestApp } from '../support/nest-app.js';

const SECRET_A = 'whsec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const SECRET_B = 'whsec_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const IS_PUBLIC_KEY = 'isPublic';

let fake: FakeService;
beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function options(path: string, secret: string, extra: Partial<PaymentsModuleOptions> = {}): PaymentsModuleOptions {
  return {
    publicKey: 'pk',
    privateKey: 'sk_value',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    reconciliation: { enabled: false },
    webhook: { path, publicUrl: `https://shop.example/${path}`, secret },
    ...extra,
  };
}

function post(url: string, body: unknown) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Handlers of every registration, of registration b only, and refunds of b. */
@Injectable()
class Listeners {
  readonly all: PaymentConfirmedEvent[] = [];
  readonly onlyB: PaymentConfirmedEvent[] = [];
  readonly refundsB: PaymentRefundedEvent[] = [];
  constructor(
    readonly payments: PaymentsService,
    @InjectPayments('b') readonly paymentsB: PaymentsService,
    @InjectPaymentsClient('b') readonly clientB: PaymentsClient,
  ) {}
  @OnPaymentConfirmed()
  any(event: PaymentConfirmedEvent) {
    this.all.push(event);
  }
  @OnPaymentConfirmed({ registration: 'b' })
  b(event: PaymentConfirmedEvent) {
    this.onlyB.push(event);
  }
  @OnPaymentEvent(PaymentEvents.REFUNDED, { registration: 'b' })
  refundedB(event: PaymentRefundedEvent) {
    this.refundsB.push(event);
  }
}

describe.each(ADAPTERS)('several registrations on Nest-%s', (adapter) => {
  it('each has its own service, client, store, path and secret; events say which registration; filters apply', async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot(options('hooks/a', SECRET_A)),
        PaymentsModule.forRootAsync({ name: 'b', useFactory: async () => options('hooks/b', SECRET_B, { publicKey: 'pk_b' }) }),
      ],
      providers: [Listeners],
    });
    try {
      const listeners = running.app.get(Listeners);
      expect(listeners.payments).not.toBe(listeners.paymentsB);
      expect(listeners.paymentsB.registration).toBe('b');
      expect(listeners.clientB.name).toBe('b');
      expect(running.app.get(getPaymentsClientToken('b'))).toBe(listeners.clientB);
      expect(listeners.clientB.store).not.toBe(running.app.get<PaymentsClient>(getPaymentsClientToken()).store);

      const a = await generateThrough(fake, 'pay_a', () => listeners.payments.generatePayment({ amount: '12500' }));
      const b = await generateThrough(fake, 'pay_b', () => listeners.paymentsB.generatePayment({ amount: '12500' }));
      expect(fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer pk:sk_value', 'Bearer pk_b:sk_value']);
      expect(a.webhook.pathname.startsWith('/hooks/a/')).toBe(true);
      expect(b.webhook.pathname.startsWith('/hooks/b/')).toBe(true);
      answerVerify(fake, 'pay_a', { status: 'SUCCESS' });
      answerVerify(fake, 'pay_b', { status: 'SUCCESS' });

      // A token of one registration is refused on the other's route (other secret, other store).
      expect((await post(`${running.url}/hooks/b/${a.token}`, { payment_id: 'pay_a' })).status).toBe(401);
      expect((await post(`${running.url}${a.webhook.pathname}`, { payment_id: 'pay_a' })).status).toBe(200);
      expect((await post(`${running.url}${b.webhook.pathname}`, { payment_id: 'pay_b' })).status).toBe(200);
      expect(listeners.all.map((e) => [e.paymentId, e.registration])).toEqual([
        ['pay_a', undefined],
        ['pay_b', 'b'],
      ]);
      expect(listeners.onlyB.map((e) => e.paymentId)).toEqual(['pay_b']);

      fake.reply(PATHS.refund, OK.refund('pay_a'), OK.refund('pay_b'));
      await listeners.payments.refundPayment('pay_a');
      await listeners.paymentsB.refundPayment('pay_b');
      expect(listeners.refundsB.map((e) => [e.paymentId, e.registration])).toEqual([['pay_b', 'b']]);
    } finally {
      await running.close();
    }
  });

  it('a payment.confirmed that only other registrations listen to fails (undone), never done silently', async () => {
    @Injectable()
    class OnlyB {
      @OnPaymentConfirmed({ registration: 'b' })
      b() {}
    }
    const running = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot(options('hooks/a', SECRET_A)), PaymentsModule.forRoot(options('hooks/b', SECRET_B, { name: 'b' }))],
      providers: [OnlyB],
    });
    try {
      const a = await generateThrough(fake, 'pay_a', () => running.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      answerVerify(fake, 'pay_a', { status: 'SUCCESS' });
      expect((await post(`${running.url}${a.webhook.pathname}`, { payment_id: 'pay_a' })).status).toBe(500);
    } finally {
      await running.close();
    }
  });

  it('two apps in one process, each with its own path, both work', async () => {
    @Injectable()
    class Paid {
      readonly ids: string[] = [];
      @OnPaymentConfirmed()
      paid(event: PaymentConfirmedEvent) {
        this.ids.push(event.paymentId);
      }
    }
    const one = await startNestApp(adapter, { imports: [PaymentsModule.forRoot(options('one/hook', SECRET_A))], providers: [Paid] });
    const two = await startNestApp(adapter, { imports: [PaymentsModule.forRoot(options('two/hook', SECRET_B))], providers: [Paid] });
    try {
      const p1 = await generateThrough(fake, 'pay_1', () => one.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      const p2 = await generateThrough(fake, 'pay_2', () => two.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      answerVerify(fake, 'pay_1', { status: 'SUCCESS' });
      answerVerify(fake, 'pay_2', { status: 'SUCCESS' });
      expect((await post(`${two.url}${p1.webhook.pathname}`, { payment_id: 'pay_1' })).status).toBe(404);
      expect((await post(`${one.url}${p1.webhook.pathname}`, { payment_id: 'pay_1' })).status).toBe(200);
      expect((await post(`${two.url}${p2.webhook.pathname}`, { payment_id: 'pay_2' })).status).toBe(200);
      expect([one.app.get(Paid).ids, two.app.get(Paid).ids]).toEqual([['pay_1'], ['pay_2']]);
    } finally {
      await one.close();
      await two.close();
    }
  });
});

/** A JWT-style global guard: refuses everything not marked public. */
@Injectable()
class RefuseUnlessPublic implements CanActivate {
  constructor(private readonly reflector: Reflector) {}
  canActivate(context: ExecutionContext) {
    return this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, [context.getHandler(), context.getClass()]) === true;
  }
}

@Controller('account')
class AccountController {
  @Post()
  secret() {
    return { secret: true };
  }
}

/** A host route guarded by the exported guard, in a module of its own. */
@Controller('host-hook')
@SetMetadata(IS_PUBLIC_KEY, true)
class HostHookController {
  @Post(':token')
  @UseGuards(PaymentsWebhookGuard)
  receive(@Req() request: { [PAYMENTS_WEBHOOK_AUTHENTICATION]?: PaymentsWebhookAuthentication }) {
    return { paymentId: request[PAYMENTS_WEBHOOK_AUTHENTICATION]?.paymentId };
  }
}

@Module({ controllers: [HostHookController], providers: [PaymentsWebhookGuard] })
class HostHookModule {}

describe.each(ADAPTERS)('host guards on Nest-%s', (adapter) => {
  it('a global guard refusing everything lets the webhook through when webhook.decorators mark it public', async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot(
          options('payments/webhook', SECRET_A, {
            webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET_A, decorators: [SetMetadata(IS_PUBLIC_KEY, true)] },
          }),
        ),
      ],
      controllers: [AccountController],
      providers: [{ provide: APP_GUARD, useClass: RefuseUnlessPublic }],
    });
    try {
      expect((await post(`${running.url}/account`, {})).status).toBe(403);
      const { webhook } = await generateThrough(fake, 'pay_pub', () => running.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      answerVerify(fake, 'pay_pub', { status: 'FAILURE' });
      expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_pub' })).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('without the decorators, the same global guard blocks the webhook (the test can fail)', async () => {
    const running = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot(options('payments/webhook', SECRET_A))],
      providers: [{ provide: APP_GUARD, useClass: RefuseUnlessPublic }],
    });
    try {
      const { webhook } = await generateThrough(fake, 'pay_blocked', () => running.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_blocked' })).status).toBe(403);
      expect(fake.requests.filter((r) => r.path.includes('verify'))).toEqual([]);
    } finally {
      await running.close();
    }
  });

  it('PaymentsWebhookGuard provided in another module resolves the exported client token and attaches its result', async () => {
    const running = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot({ ...options('payments/webhook', SECRET_A), isGlobal: true }), HostHookModule],
    });
    try {
      const { token } = await generateThrough(fake, 'pay_host', () => running.app.get(PaymentsService).generatePayment({ amount: '12500' }));
      const ok = await post(`${running.url}/host-hook/${token}`, { payment_id: 'pay_host' });
      expect([ok.status, await ok.json()]).toEqual([201, { paymentId: 'pay_host' }]);
      expect((await post(`${running.url}/host-hook/forged`, { payment_id: 'pay_host' })).status).toBe(401);
      expect(fake.requests.filter((r) => r.path.includes('verify'))).toEqual([]);
    } finally {
      await running.close();
    }
  });
});

describe('paymentsOptionsFromConfig', () => {
  const env: Record<string, string> = {
    PAYMENTS_PUBLIC_KEY: 'pk',
    PAYMENTS_PRIVATE_KEY: 'sk',
    PAYMENTS_BASE_URL: 'https://pay.example',
    PAYMENTS_WEBHOOK_PATH: 'hooks/pay',
    PAYMENTS_WEBHOOK_PUBLIC_URL: 'https://shop.example/hooks/pay',
    PAYMENTS_WEBHOOK_SECRET: SECRET_A,
    PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED: 'true',
    PAYMENTS_RECONCILIATION_ENABLED: '0',
    PAYMENTS_RECONCILIATION_INTERVAL_SECS: '120',
    PAYMENTS_PRE_AUTHORIZATION_FLAG: 'both',
  };
  const config = { get: (key: string) => env[key] };

  it('reads the new variables and deep-merges webhook and reconciliation overrides', () => {
    const decorators = [SetMetadata(IS_PUBLIC_KEY, true)];
    const built = paymentsOptionsFromConfig(config, { webhook: { decorators, leaseMs: 5000 }, reconciliation: { batchSize: 5 } });
    expect(built).toEqual({
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'https://pay.example',
      preAuthorizationFlag: 'both',
      webhook: { path: 'hooks/pay', publicUrl: 'https://shop.example/hooks/pay', secret: SECRET_A, acceptUnsigned: true, decorators, leaseMs: 5000 },
      reconciliation: { enabled: false, intervalSecs: 120, batchSize: 5 },
    });
    expect(paymentsOptionsFromConfig(config, { webhook: { secret: SECRET_B } }).webhook).toMatchObject({ path: 'hooks/pay', secret: SECRET_B });
  });

  it('names the variable of an invalid value', () => {
    const bad = { get: (key: string) => ({ ...env, PAYMENTS_RECONCILIATION_INTERVAL_SECS: 'soon', PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED: 'maybe' })[key] };
    expect(() => paymentsOptionsFromConfig(bad)).toThrow(
      'Invalid payments options from the environment: PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED (webhook.acceptUnsigned) (must be a boolean), ' +
        'PAYMENTS_RECONCILIATION_INTERVAL_SECS (reconciliation.intervalSecs) (must be a positive integer)',
    );
  });
});
