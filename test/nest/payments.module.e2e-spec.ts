import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { inspect } from 'node:util';
import {
  InjectPaymentsOptions,
  PAYMENTS_ENV,
  PaymentsModule,
  PaymentsService,
  PaymentsValidationError,
  paymentsOptionsFromConfig,
  type PaymentsModuleOptions,
  type PaymentsOptionsFactory,
} from '../../lib/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';

const SECRET = 'sk_do_not_print_me_4451';

let fake: FakeService;
beforeAll(async () => {
  fake = await FakeService.start();
  fake.always(PATHS.generate, OK.generate('pay_mod'));
});
afterAll(() => fake.close());

function baseOptions(): PaymentsModuleOptions {
  return {
    publicKey: 'pk',
    privateKey: SECRET,
    baseUrl: fake.url,
    successLink: 'https://s.example/ok',
    failLink: 'https://s.example/ko',
  };
}

async function start(imports: unknown[], providers: unknown[] = []): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: imports as never[],
    providers: providers as never[],
  }).compile();
  return moduleRef.createNestApplication({ logger: false }).init();
}

async function generates(app: INestApplicationContext) {
  await expect(app.get(PaymentsService).generatePayment({ amount: '100' })).resolves.toMatchObject({
    paymentId: 'pay_mod',
  });
  await app.close();
}

describe('PaymentsModule configuration', () => {
  it('forRoot', async () => {
    await generates(await start([PaymentsModule.forRoot(baseOptions())]));
  });

  it('forRootAsync with useFactory + ConfigService reading the PAYMENTS_* variables', async () => {
    const env = {
      [PAYMENTS_ENV.publicKey]: 'pk_env',
      [PAYMENTS_ENV.privateKey]: SECRET,
      [PAYMENTS_ENV.baseUrl]: fake.url,
      [PAYMENTS_ENV.successLink]: 'https://env.example/ok',
      [PAYMENTS_ENV.failLink]: 'https://env.example/ko',
      [PAYMENTS_ENV.acceptCard]: 'true',
      [PAYMENTS_ENV.sessionTimeoutSecs]: '900',
    };
    fake.requests.length = 0;
    const app = await start([
      PaymentsModule.forRootAsync({
        imports: [ConfigModule.forRoot({ ignoreEnvFile: true, ignoreEnvVars: true, load: [() => env] })],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => paymentsOptionsFromConfig(config),
      }),
    ]);
    await generates(app);
    expect(fake.requests[0].headers.authorization).toBe(`Bearer pk_env:${SECRET}`);
    expect(JSON.parse(fake.requests[0].body)).toEqual({
      amount: '100',
      success_link: 'https://env.example/ok',
      fail_link: 'https://env.example/ko',
      accept_card: true,
      session_timeout_secs: 900,
    });
  });

  it('forRootAsync with useClass', async () => {
    @Injectable()
    class OptionsFactory implements PaymentsOptionsFactory {
      createPaymentsOptions() {
        return baseOptions();
      }
    }
    await generates(await start([PaymentsModule.forRootAsync({ useClass: OptionsFactory })]));
  });

  it('forRootAsync with useExisting', async () => {
    @Injectable()
    class ExistingFactory implements PaymentsOptionsFactory {
      async createPaymentsOptions() {
        return baseOptions();
      }
    }
    @Module({ providers: [ExistingFactory], exports: [ExistingFactory] })
    class FactoryModule {}
    await generates(
      await start([PaymentsModule.forRootAsync({ imports: [FactoryModule], useExisting: ExistingFactory })]),
    );
  });

  it('isGlobal makes PaymentsService injectable in modules that do not import it', async () => {
    @Injectable()
    class Checkout {
      constructor(readonly payments: PaymentsService) {}
    }
    @Module({ providers: [Checkout], exports: [Checkout] })
    class CheckoutModule {}
    const app = await start([PaymentsModule.forRoot({ ...baseOptions(), isGlobal: true }), CheckoutModule]);
    expect(app.get(Checkout).payments).toBe(app.get(PaymentsService));
    await app.close();
  });

  it('without isGlobal, a module that does not import it cannot inject it', async () => {
    @Injectable()
    class Checkout {
      constructor(readonly payments: PaymentsService) {}
    }
    @Module({ providers: [Checkout] })
    class CheckoutModule {}
    await expect(start([PaymentsModule.forRoot(baseOptions()), CheckoutModule])).rejects.toThrow(/PaymentsService/);
  });

  it('@InjectPaymentsOptions() gives the options as passed', async () => {
    @Injectable()
    class Reader {
      constructor(@InjectPaymentsOptions() readonly options: PaymentsModuleOptions) {}
    }
    const options = baseOptions();
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot({ ...options, isGlobal: true })],
      providers: [Reader],
    }).compile();
    expect(moduleRef.get(Reader).options).toMatchObject({ publicKey: 'pk', baseUrl: fake.url });
    await moduleRef.close();
  });

  it('refuses to start with missing or invalid options, naming each and never echoing the private key', async () => {
    let error: unknown;
    try {
      await start([
        PaymentsModule.forRoot({
          publicKey: '',
          privateKey: SECRET,
          baseUrl: 'localhost:8080',
          timeoutMs: -1,
          maxRetries: 99,
          successLink: SECRET,
          webhook: { publicUrl: 'https://shop.example/hook', secret: 'short' },
        }),
      ]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PaymentsValidationError);
    const fields = (error as PaymentsValidationError).fields.map((f) => f.field);
    expect(fields).toEqual(['publicKey', 'baseUrl', 'successLink', 'timeoutMs', 'maxRetries', 'webhook.secret']);
    const text = [String(error), JSON.stringify(error), inspect(error, { depth: 5 })].join('\n');
    expect(text).not.toContain(SECRET);
    expect((error as Error).message).toMatch(/^Invalid payments options: publicKey \(is required/);
  });

  it('refuses to start when the private key is missing', async () => {
    await expect(
      start([PaymentsModule.forRoot({ publicKey: 'pk', baseUrl: fake.url } as PaymentsModuleOptions)]),
    ).rejects.toThrow('Invalid payments options: privateKey (is required (a non-empty string))');
  });

  it('forRootAsync reports invalid options from the factory at start-up, naming the variables to set', async () => {
    await expect(
      start([PaymentsModule.forRootAsync({ useFactory: () => paymentsOptionsFromConfig({ get: () => undefined }) })]),
    ).rejects.toThrow(
      'Invalid payments options from the environment: PAYMENTS_PUBLIC_KEY (publicKey) (is required (a non-empty string)), ' +
        'PAYMENTS_PRIVATE_KEY (privateKey) (is required (a non-empty string)), PAYMENTS_BASE_URL (baseUrl) (is required (an absolute http(s) URL))',
    );
  });

  it('reports a malformed variable by its name and option; an option set in code keeps its own name', async () => {
    const env: Record<string, string> = {
      PAYMENTS_PUBLIC_KEY: 'pk',
      PAYMENTS_PRIVATE_KEY: 'x',
      PAYMENTS_BASE_URL: fake.url,
      PAYMENTS_TIMEOUT_MS: '10s',
    };
    const config = { get: (k: string) => env[k] };
    await expect(
      start([PaymentsModule.forRootAsync({ useFactory: () => paymentsOptionsFromConfig(config) })]),
    ).rejects.toThrow(
      'Invalid payments options from the environment: PAYMENTS_TIMEOUT_MS (timeoutMs) (must be a positive integer)',
    );
    const fields = (err: unknown) => (err as PaymentsValidationError).fields.map((f) => f.field);
    const inCode = (() => {
      try {
        return paymentsOptionsFromConfig(config, { timeoutMs: 0, webhook: { secret: 'short' } });
      } catch (error) {
        return error;
      }
    })();
    expect(inCode).toBeInstanceOf(PaymentsValidationError);
    expect(fields(inCode)).toEqual(['timeoutMs', 'webhook.secret', 'PAYMENTS_WEBHOOK_PUBLIC_URL (webhook.publicUrl)']);
  });
});
