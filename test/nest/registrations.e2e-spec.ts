import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  Controller,
  Injectable,
  Module,
  Post,
  Req,
  SetMetadata,
  UseGuards,
  UseInterceptors,
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_GUARD, HttpAdapterHost, Reflector } from '@nestjs/core';
import type { Observable } from 'rxjs';
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
  PaymentsValidationError,
  getPaymentsServiceToken,
  paymentsOptionsFromConfig,
  type PaymentConfirmedEvent,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { PAYMENTS_CLIENT, getPaymentsClientToken, type PaymentsWebhookAuthentication } from '../../lib/nest/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import {
  ADAPTERS,
  answerVerify,
  generateThrough,
  startNestApp,
  verifyCalls,
  type AdapterName,
} from '../support/nest-app.js';

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
        PaymentsModule.forRootAsync({
          name: 'b',
          useFactory: async () => options('hooks/b', SECRET_B, { publicKey: 'pk_b' }),
        }),
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

      // A token of one registration is refused on the other's route (other secret, other store):
      // misrouted, 421 (docs/security.md), never handled there.
      expect((await post(`${running.url}/hooks/b/${a.token}`, { payment_id: 'pay_a' })).status).toBe(421);
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
      imports: [
        PaymentsModule.forRoot(options('hooks/a', SECRET_A)),
        PaymentsModule.forRoot(options('hooks/b', SECRET_B, { name: 'b' })),
      ],
      providers: [OnlyB],
    });
    try {
      const a = await generateThrough(fake, 'pay_a', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
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
    const one = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot(options('one/hook', SECRET_A))],
      providers: [Paid],
    });
    const two = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot(options('two/hook', SECRET_B))],
      providers: [Paid],
    });
    try {
      const p1 = await generateThrough(fake, 'pay_1', () =>
        one.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      const p2 = await generateThrough(fake, 'pay_2', () =>
        two.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
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
    return (
      this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, [context.getHandler(), context.getClass()]) === true
    );
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

/** The exported guard, bound to the named registration 'b' as its doc comment shows. */
@Injectable()
class OutletWebhookGuard extends PaymentsWebhookGuard {
  constructor(@InjectPaymentsClient('b') client: PaymentsClient, adapterHost: HttpAdapterHost) {
    super(client, adapterHost);
  }
}

@Controller('outlet-hook')
class OutletHookController {
  @Post(':token')
  @UseGuards(OutletWebhookGuard)
  receive(@Req() request: { [PAYMENTS_WEBHOOK_AUTHENTICATION]?: PaymentsWebhookAuthentication }) {
    const auth = request[PAYMENTS_WEBHOOK_AUTHENTICATION];
    return { paymentId: auth?.paymentId, registration: auth?.client.name };
  }
}

@Module({ controllers: [OutletHookController] })
class OutletHookModule {}

describe.each(ADAPTERS)('host guards on Nest-%s', (adapter) => {
  it('a global guard refusing everything lets the webhook through when webhook.decorators mark it public', async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot(
          options('payments/webhook', SECRET_A, {
            webhook: {
              publicUrl: 'https://shop.example/payments/webhook',
              secret: SECRET_A,
              decorators: [SetMetadata(IS_PUBLIC_KEY, true)],
            },
          }),
        ),
      ],
      controllers: [AccountController],
      providers: [{ provide: APP_GUARD, useClass: RefuseUnlessPublic }],
    });
    try {
      expect((await post(`${running.url}/account`, {})).status).toBe(403);
      const { webhook } = await generateThrough(fake, 'pay_pub', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
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
      const { webhook } = await generateThrough(fake, 'pay_blocked', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
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
      const { token } = await generateThrough(fake, 'pay_host', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      const ok = await post(`${running.url}/host-hook/${token}`, { payment_id: 'pay_host' });
      expect([ok.status, await ok.json()]).toEqual([201, { paymentId: 'pay_host' }]);
      expect((await post(`${running.url}/host-hook/forged`, { payment_id: 'pay_host' })).status).toBe(401);
      expect(fake.requests.filter((r) => r.path.includes('verify'))).toEqual([]);
    } finally {
      await running.close();
    }
  });

  it("a subclass bound with @InjectPaymentsClient(name) guards a host route with a named registration's client", async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot(options('payments/webhook', SECRET_A)),
        PaymentsModule.forRoot({ ...options('payments/b/webhook', SECRET_B, { name: 'b' }), isGlobal: true }),
        OutletHookModule,
      ],
    });
    try {
      const b = await generateThrough(fake, 'pay_outlet', () =>
        running.app.get<PaymentsService>(getPaymentsServiceToken('b')).generatePayment({ amount: '12500' }),
      );
      const a = await generateThrough(fake, 'pay_shop', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      const ok = await post(`${running.url}/outlet-hook/${b.token}`, { payment_id: 'pay_outlet' });
      expect([ok.status, await ok.json()]).toEqual([201, { paymentId: 'pay_outlet', registration: 'b' }]);
      // The default registration's token is signed with another secret: refused by b's guard as misrouted (421).
      expect((await post(`${running.url}/outlet-hook/${a.token}`, { payment_id: 'pay_shop' })).status).toBe(421);
      expect(verifyCalls(fake)).toBe(0);
    } finally {
      await running.close();
    }
  });
});

/** Counts what a host's decorators saw; each test builds its own classes around its own counts. */
function hostDecorators(allow: boolean) {
  const counts = { guard: 0, interceptor: 0 };
  @Injectable()
  class HostGuard implements CanActivate {
    canActivate() {
      counts.guard++;
      return allow;
    }
  }
  @Injectable()
  class HostInterceptor implements NestInterceptor {
    intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
      counts.interceptor++;
      return next.handle();
    }
  }
  return { counts, decorators: [UseGuards(HostGuard), UseInterceptors(HostInterceptor)] };
}

const definitions = {
  forRoot: (path: string, decorators: ClassDecorator[]) =>
    PaymentsModule.forRoot(
      options(path, SECRET_A, {
        webhook: { path, publicUrl: `https://shop.example/${path}`, secret: SECRET_A, decorators },
      }),
    ),
  forRootAsync: (path: string, decorators: ClassDecorator[]) =>
    PaymentsModule.forRootAsync({ webhook: { decorators }, useFactory: async () => options(path, SECRET_A) }),
};

describe.each(ADAPTERS)('webhook.decorators on Nest-%s', (adapter) => {
  it.each(['forRoot', 'forRootAsync'] as const)(
    '%s: the host guard and interceptor run on the webhook route, the guard before the token check',
    async (how) => {
      const host = hostDecorators(true);
      const running = await startNestApp(adapter, { imports: [definitions[how]('hooks/decorated', host.decorators)] });
      try {
        const { webhook } = await generateThrough(fake, 'pay_dec', () =>
          running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
        );
        answerVerify(fake, 'pay_dec', { status: 'FAILURE' });
        expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_dec' })).status).toBe(200);
        expect(host.counts).toEqual({ guard: 1, interceptor: 1 });
        // A forged token passes the host guard, then the plugin's guard refuses it: no interceptor, no verify.
        expect((await post(`${running.url}/hooks/decorated/forged`, { payment_id: 'pay_dec' })).status).toBe(401);
        expect(host.counts).toEqual({ guard: 2, interceptor: 1 });
        expect(verifyCalls(fake, 'pay_dec')).toBe(1);
      } finally {
        await running.close();
      }
    },
  );

  it.each(['forRoot', 'forRootAsync'] as const)(
    '%s: a host guard refusing everything answers 403 to every delivery, and nothing is verified',
    async (how) => {
      const host = hostDecorators(false);
      const running = await startNestApp(adapter, { imports: [definitions[how]('hooks/denied', host.decorators)] });
      try {
        const { webhook } = await generateThrough(fake, 'pay_deny', () =>
          running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
        );
        answerVerify(fake, 'pay_deny', { status: 'FAILURE' });
        expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_deny' })).status).toBe(403);
        expect((await post(`${running.url}/hooks/denied/forged`, { payment_id: 'pay_deny' })).status).toBe(403);
        expect(host.counts).toEqual({ guard: 2, interceptor: 0 });
        expect(verifyCalls(fake)).toBe(0);
      } finally {
        await running.close();
      }
    },
  );
});

describe('forRootAsync: what Nest needs before the factory runs', () => {
  it('decorators returned by the factory (too late for Nest) stop the app at start-up, naming where they go', async () => {
    const { decorators } = hostDecorators(false);
    const starting = startNestApp('express', {
      imports: [
        PaymentsModule.forRootAsync({
          useFactory: () => options('hooks/late', SECRET_A, { webhook: { path: 'hooks/late', decorators } }),
        }),
      ],
    });
    await expect(starting).rejects.toThrow(PaymentsValidationError);
    await expect(starting).rejects.toThrow(/webhook\.decorators \(must be given to forRootAsync\(\) beside useFactory/);
  });

  it('the same decorators in both places are fine', async () => {
    const host = hostDecorators(false);
    const running = await startNestApp('express', {
      imports: [
        PaymentsModule.forRootAsync({
          webhook: { decorators: host.decorators },
          useFactory: () => ({
            ...options('hooks/both', SECRET_A),
            webhook: { ...options('hooks/both', SECRET_A).webhook, decorators: host.decorators },
          }),
        }),
      ],
    });
    try {
      expect((await post(`${running.url}/hooks/both/forged`, { payment_id: 'pay_x' })).status).toBe(403);
    } finally {
      await running.close();
    }
  });

  it('a factory path other than the static one stops the app at start-up; the same path (slashes aside) is fine', async () => {
    const starting = startNestApp('express', {
      imports: [
        PaymentsModule.forRootAsync({
          webhook: { path: 'hooks/static' },
          useFactory: () => options('hooks/other', SECRET_A),
        }),
      ],
    });
    await expect(starting).rejects.toThrow(
      "webhook.path (is 'hooks/other' but the route was defined as 'hooks/static'",
    );
    const running = await startNestApp('express', {
      imports: [
        PaymentsModule.forRootAsync({
          webhook: { path: '/hooks/static/' },
          useFactory: () => options('hooks/static', SECRET_A),
        }),
      ],
    });
    try {
      const { webhook } = await generateThrough(fake, 'pay_static', () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      answerVerify(fake, 'pay_static', { status: 'FAILURE' });
      expect(webhook.pathname.startsWith('/hooks/static/')).toBe(true);
      expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_static' })).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});

/** One app module, defined once, whose webhook path comes from the configuration at start-up. */
@Injectable()
class ConfiguredPaid {
  readonly ids: string[] = [];
  @OnPaymentConfirmed()
  paid(event: PaymentConfirmedEvent) {
    this.ids.push(event.paymentId);
  }
}

@Module({
  imports: [
    PaymentsModule.forRootAsync({
      imports: [ConfigModule.forRoot({ ignoreEnvFile: true })],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => options(config.getOrThrow<string>('TEST_WEBHOOK_PATH'), SECRET_A),
    }),
  ],
  providers: [ConfiguredPaid],
})
class ConfiguredAppModule {}

async function startConfigured(adapter: AdapterName, path: string) {
  process.env.TEST_WEBHOOK_PATH = path;
  try {
    return await startNestApp(adapter, { imports: [ConfiguredAppModule] });
  } finally {
    delete process.env.TEST_WEBHOOK_PATH;
  }
}

describe.each([
  ['express', 'express'],
  ['fastify', 'fastify'],
  ['express', 'fastify'],
] as const)('two apps (Nest-%s, then Nest-%s) from ONE app module with config-driven paths', (first, second) => {
  it('each serves its own path, before and after the other started', async () => {
    const one = await startConfigured(first, 'one/hook');
    let two: Awaited<ReturnType<typeof startConfigured>> | undefined;
    try {
      const p1 = await generateThrough(fake, 'pay_one', () =>
        one.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      two = await startConfigured(second, 'two/hook');
      const p2 = await generateThrough(fake, 'pay_two', () =>
        two!.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      expect([p1.webhook.pathname.startsWith('/one/hook/'), p2.webhook.pathname.startsWith('/two/hook/')]).toEqual([
        true,
        true,
      ]);
      answerVerify(fake, 'pay_one', { status: 'SUCCESS' });
      answerVerify(fake, 'pay_two', { status: 'SUCCESS' });
      expect((await post(`${one.url}/two/hook/${p2.token}`, { payment_id: 'pay_two' })).status).toBe(404);
      expect((await post(`${two.url}/one/hook/${p1.token}`, { payment_id: 'pay_one' })).status).toBe(404);
      expect((await post(`${one.url}${p1.webhook.pathname}`, { payment_id: 'pay_one' })).status).toBe(200);
      expect((await post(`${two.url}${p2.webhook.pathname}`, { payment_id: 'pay_two' })).status).toBe(200);
      expect([one.app.get(ConfiguredPaid).ids, two.app.get(ConfiguredPaid).ids]).toEqual([['pay_one'], ['pay_two']]);
    } finally {
      await one.close();
      await two?.close();
    }
  });
});

describe.each(ADAPTERS)('overrideProvider of the client token on Nest-%s', (adapter) => {
  it.each([
    ['forRoot', () => PaymentsModule.forRoot(options('hooks/kept', SECRET_A))],
    ['forRootAsync', () => PaymentsModule.forRootAsync({ useFactory: async () => options('hooks/kept', SECRET_A) })],
  ])(
    '%s: the webhook route stays where the options put it, served by the replacement client',
    async (_how, definition) => {
      const replacement = new PaymentsClient({
        ...options('hooks/kept', SECRET_A),
        publicKey: 'pk_test_double',
        logger: { log() {}, warn() {}, error() {} },
      });
      const running = await startNestApp(
        adapter,
        { imports: [definition()] },
        { override: (b) => b.overrideProvider(PAYMENTS_CLIENT).useValue(replacement) },
      );
      try {
        expect(running.app.get(PAYMENTS_CLIENT)).toBe(replacement);
        const { webhook } = await generateThrough(fake, 'pay_over', () =>
          running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
        );
        expect(fake.requests.at(-1)?.headers.authorization).toBe('Bearer pk_test_double:sk_value');
        expect(webhook.pathname.startsWith('/hooks/kept/')).toBe(true);
        answerVerify(fake, 'pay_over', { status: 'FAILURE' });
        expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_over' })).status).toBe(200);
        expect(await replacement.getOutcome('pay_over')).toMatchObject({ outcome: 'failed', status: 'FAILURE' });
      } finally {
        await running.close();
      }
    },
  );
});

describe('webhook paths of several registrations', () => {
  it.each([
    ['the same default path', undefined, undefined],
    ['the same explicit path', 'hooks/same', 'hooks/same'],
    ["one path being the other's plus one segment (its token route)", 'payments/webhook', 'payments/webhook/b'],
  ])('%s stops the app at start-up, naming both registrations', async (_case, pathA, pathB) => {
    const withPath = (path: string | undefined, secret: string): PaymentsModuleOptions => {
      const base = options('unused', secret);
      return { ...base, webhook: { ...base.webhook, path } };
    };
    const starting = startNestApp('express', {
      imports: [
        PaymentsModule.forRoot(withPath(pathA, SECRET_A)),
        PaymentsModule.forRootAsync({ name: 'b', useFactory: () => withPath(pathB, SECRET_B) }),
      ],
    });
    await expect(starting).rejects.toThrow(PaymentsValidationError);
    await expect(starting).rejects.toThrow(
      /of the default registration \(imported by RootTestModule\) overlaps '.*' of registration 'b' \(imported by RootTestModule\)/,
    );
  });

  it('registrations without webhooks may share the default path (neither serves it)', async () => {
    const bare = { publicKey: 'pk', privateKey: 'sk_value', baseUrl: fake.url, reconciliation: { enabled: false } };
    const running = await startNestApp('express', {
      imports: [PaymentsModule.forRoot(bare), PaymentsModule.forRoot({ ...bare, name: 'b' })],
    });
    try {
      expect((await post(`${running.url}/payments/webhook/forged`, { payment_id: 'pay_x' })).status).toBe(404);
    } finally {
      await running.close();
    }
  });

  it('a path two segments below another is its own route', async () => {
    const running = await startNestApp('express', {
      imports: [
        PaymentsModule.forRoot(options('payments/webhook', SECRET_A)),
        PaymentsModule.forRoot(options('payments/webhook/b/in', SECRET_B, { name: 'b' })),
      ],
    });
    try {
      const { webhook } = await generateThrough(fake, 'pay_deep', () =>
        running.app.get<PaymentsService>(getPaymentsServiceToken('b')).generatePayment({ amount: '12500' }),
      );
      answerVerify(fake, 'pay_deep', { status: 'FAILURE' });
      expect((await post(`${running.url}${webhook.pathname}`, { payment_id: 'pay_deep' })).status).toBe(200);
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
    const built = paymentsOptionsFromConfig(config, {
      webhook: { decorators, leaseMs: 5000 },
      reconciliation: { batchSize: 5 },
    });
    expect(built).toEqual({
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'https://pay.example',
      preAuthorizationFlag: 'both',
      webhook: {
        path: 'hooks/pay',
        publicUrl: 'https://shop.example/hooks/pay',
        secret: SECRET_A,
        acceptUnsigned: true,
        decorators,
        leaseMs: 5000,
      },
      reconciliation: { enabled: false, intervalSecs: 120, batchSize: 5 },
    });
    expect(paymentsOptionsFromConfig(config, { webhook: { secret: SECRET_B } }).webhook).toMatchObject({
      path: 'hooks/pay',
      secret: SECRET_B,
    });
  });

  it('names the variable of an invalid value', () => {
    const bad = {
      get: (key: string) =>
        ({ ...env, PAYMENTS_RECONCILIATION_INTERVAL_SECS: 'soon', PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED: 'maybe' })[key],
    };
    expect(() => paymentsOptionsFromConfig(bad)).toThrow(
      'Invalid payments options from the environment: PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED (webhook.acceptUnsigned) (must be a boolean), ' +
        'PAYMENTS_RECONCILIATION_INTERVAL_SECS (reconciliation.intervalSecs) (must be a positive integer)',
    );
  });
});
