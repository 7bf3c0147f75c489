import {
  Inject,
  Injectable,
  Logger,
  Module,
  Optional,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnModuleInit,
  type Provider,
  type Type,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { EventEmitter2, EventEmitterModule, EventEmitterReadinessWatcher } from '@nestjs/event-emitter';
import { PaymentsClient } from '../core/payments.client.js';
import { PaymentsValidationError } from '../core/payments.errors.js';
import { nestOutcomeDispatcher } from './payments.events-bridge.js';
import type { PaymentsModuleAsyncOptions, PaymentsModuleExtras, PaymentsModuleOptions, PaymentsOptionsFactory } from './payments.module-options.js';
import { getPaymentsServiceToken, PaymentsService } from './payments.service.js';
import { getPaymentsClientToken, getPaymentsOptionsToken } from './payments.tokens.js';
import { adaptWebhookRoutes, configureWebhookController, createWebhookController, type PaymentsWebhookController } from './webhook.controller.js';
import { PaymentsWebhookGuard } from './webhook.guard.js';
import { acceptAnyBodyOnWebhookRoutes } from './webhook.request.js';

/**
 * The emitter the plugin emits on. Not global, so it never shadows the host's own
 * EventEmitterModule; its loader registers every @OnEvent/@OnPayment… method on this emitter once,
 * whether or not the host has an emitter of its own. One module for every registration of an
 * app: events say which registration they are about.
 */
const PAYMENTS_EVENTS = EventEmitterModule.forRoot({ global: false, wildcard: true, delimiter: '.' });

/**
 * Connects a registration's client to Nest on module init: its outcomes become events on the
 * module's emitter (every listener awaited), and on Fastify the webhook route accepts any body.
 * Setting the dispatcher also starts reconciliation; `PaymentsService` stops it on shutdown.
 */
class PaymentsEventsBridge implements OnModuleInit {
  constructor(
    private readonly client: PaymentsClient,
    private readonly emitter: EventEmitter2,
    private readonly ready: EventEmitterReadinessWatcher | undefined,
    private readonly adapterHost: HttpAdapterHost | undefined,
    private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    acceptAnyBodyOnWebhookRoutes(this.adapterHost, (message) => this.logger.warn(message));
    this.client.setOutcomeDispatcher(nestOutcomeDispatcher(this.emitter, this.client.name, this.ready));
  }
}

/**
 * Per-registration facts the module instance needs: the same token in every registration's
 * module, each module resolving its own.
 */
const REGISTRATION = Symbol('nestjs-payments:registration');
interface Registration {
  controller: Type<PaymentsWebhookController>;
}

/** What `forRoot` options may carry beside the client's options. */
type ForRootOptions = PaymentsModuleOptions & PaymentsModuleExtras;

/**
 * The plugin's Nest module: `PaymentsModule.forRoot(options)` or
 * `PaymentsModule.forRootAsync({ name?, imports, inject, useFactory | useClass | useExisting, isGlobal })`.
 * Options are validated at start-up; a missing or invalid one stops the app with a message
 * naming it (never its value).
 *
 * Several registrations (several merchant accounts) live side by side when each has a `name`:
 * each has its own client, store, webhook route, guard and `PaymentsService`
 * (`@InjectPayments(name)`), and its events carry `registration: name`. The unnamed registration is
 * the default one (`PaymentsService` by type).
 */
@Module({})
export class PaymentsModule implements NestModule {
  /**
   * Created by Nest for each registration.
   * @internal
   * @param registration this registration's controller (absent if the class is imported bare)
   * @param adapterHost tells Express from Fastify
   */
  constructor(
    @Optional() @Inject(REGISTRATION) private readonly registration?: Registration,
    @Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost,
  ) {}

  /** Adapts the webhook routes to the HTTP platform (Nest calls it before registering routes); adds no middleware. */
  configure(_consumer: MiddlewareConsumer): void {
    if (this.registration) adaptWebhookRoutes(this.registration.controller, this.adapterHost?.httpAdapter?.getType?.());
  }

  /**
   * Registers the plugin with options known now.
   * @param options the plugin's options, plus `isGlobal` (default false)
   */
  static forRoot(options: PaymentsModuleOptions & PaymentsModuleExtras): DynamicModule {
    const { isGlobal, ...rest } = options ?? ({} as ForRootOptions);
    return PaymentsModule.register(rest.name, isGlobal, [{ provide: getPaymentsOptionsToken(rest.name), useValue: rest }], []);
  }

  /**
   * Registers the plugin with options computed at start-up (e.g. from `ConfigService`).
   * `name` must be given here, beside `useFactory`, when the registration has one.
   */
  static forRootAsync(options: PaymentsModuleAsyncOptions): DynamicModule {
    const { name, isGlobal, imports = [], extraProviders = [] } = options;
    const token = getPaymentsOptionsToken(name);
    const providers: Provider[] = [...extraProviders];
    if (options.useFactory) {
      providers.push({ provide: token, useFactory: options.useFactory, inject: options.inject ?? [] });
    } else if (options.useClass) {
      providers.push(options.useClass, { provide: token, useFactory: (f: PaymentsOptionsFactory) => f.createPaymentsOptions(), inject: [options.useClass] });
    } else if (options.useExisting) {
      providers.push({ provide: token, useFactory: (f: PaymentsOptionsFactory) => f.createPaymentsOptions(), inject: [options.useExisting] });
    } else {
      throw new TypeError('PaymentsModule.forRootAsync() needs useFactory, useClass or useExisting');
    }
    return PaymentsModule.register(name, isGlobal, providers, imports);
  }

  private static register(
    name: string | undefined,
    isGlobal: boolean | undefined,
    optionsProviders: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
  ): DynamicModule {
    const optionsToken = getPaymentsOptionsToken(name);
    const clientToken = getPaymentsClientToken(name);
    const serviceToken = getPaymentsServiceToken(name);
    const guard = name === undefined ? PaymentsWebhookGuard : registrationGuard(clientToken, name);
    const controller = createWebhookController(clientToken, guard, name);
    const logger = new Logger(name === undefined ? 'Payments' : `Payments:${name}`);

    const providers: Provider[] = [
      ...optionsProviders,
      {
        provide: clientToken,
        useFactory: (options: PaymentsModuleOptions) => createClient(options, name, controller, logger),
        inject: [optionsToken],
      },
      {
        provide: serviceToken,
        useFactory: (client: PaymentsClient, emitter: EventEmitter2) => new PaymentsService(client, emitter),
        inject: [clientToken, EventEmitter2],
      },
      {
        provide: Symbol(`nestjs-payments:bridge:${name ?? 'default'}`),
        useFactory: (client: PaymentsClient, emitter: EventEmitter2, ready?: EventEmitterReadinessWatcher, adapterHost?: HttpAdapterHost) =>
          new PaymentsEventsBridge(client, emitter, ready, adapterHost, logger),
        inject: [clientToken, EventEmitter2, { token: EventEmitterReadinessWatcher, optional: true }, { token: HttpAdapterHost, optional: true }],
      },
      guard,
      { provide: REGISTRATION, useValue: { controller } satisfies Registration },
    ];
    return {
      module: PaymentsModule,
      global: isGlobal ?? false,
      imports: [PAYMENTS_EVENTS, ...imports],
      controllers: [controller],
      providers,
      exports: [serviceToken, clientToken, optionsToken],
    };
  }
}

function createClient(options: PaymentsModuleOptions, name: string | undefined, controller: Type<PaymentsWebhookController>, logger: Logger): PaymentsClient {
  if (options?.name !== undefined && options.name !== name) {
    throw new PaymentsValidationError(
      [{ field: 'name', messages: ['must be given to forRootAsync() beside useFactory (it names the injection tokens), and the options may only repeat it'] }],
      'payments options',
    );
  }
  const { webhook, ...rest } = options ?? ({} as PaymentsModuleOptions);
  const { decorators: _decorators, ...coreWebhook } = webhook ?? {};
  const client = new PaymentsClient({ ...rest, ...(webhook ? { webhook: coreWebhook } : {}), name, logger: options?.logger ?? logger });
  configureWebhookController(controller, client, options);
  return client;
}

/** A guard class bound to a named registration's client (the exported guard is the default one's). */
function registrationGuard(clientToken: string | symbol, name: string): Type<PaymentsWebhookGuard> {
  @Injectable()
  class RegistrationWebhookGuard extends PaymentsWebhookGuard {
    constructor(@Inject(clientToken) client: PaymentsClient, @Inject(HttpAdapterHost) adapterHost: HttpAdapterHost) {
      super(client, adapterHost);
    }
  }
  Object.defineProperty(RegistrationWebhookGuard, 'name', { value: `PaymentsWebhookGuard_${name}` });
  return RegistrationWebhookGuard;
}
