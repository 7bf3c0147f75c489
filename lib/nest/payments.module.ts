import {
  Inject,
  Logger,
  Module,
  Optional,
  type DynamicModule,
  type OnModuleInit,
  type Provider,
  type Type,
} from '@nestjs/common';
import { HttpAdapterHost, ModuleRef, ModulesContainer } from '@nestjs/core';
import { EventEmitter2, EventEmitterModule, EventEmitterReadinessWatcher } from '@nestjs/event-emitter';
import { PaymentsClient } from '../core/client/index.js';
import { PaymentsValidationError } from '../core/api/index.js';
import { inboxInModule } from './inbox.transaction-host.js';
import { nestHandlerLookup } from './payments.events-bridge.js';
import type {
  PaymentsModuleAsyncOptions,
  PaymentsModuleExtras,
  PaymentsModuleOptions,
  PaymentsOptionsFactory,
} from './payments.module-options.js';
import { getPaymentsServiceToken, PaymentsService } from './payments.service.js';
import { getPaymentsClientToken, getPaymentsOptionsToken } from './payments.tokens.js';
import {
  acceptAnyBodyOnWebhookRoutes,
  createWebhookController,
  PaymentsWebhookGuard,
  registrationGuard,
} from './webhook.controller.js';
import {
  importersOf,
  refuseSharedRoutes,
  registrationLabel,
  resolveWebhookRoute,
  servedWebhookPath,
  staticWebhookRoute,
  type RegistrationRoute,
  type ScannedModuleShape,
  type StaticWebhookRoute,
} from './webhook.route.js';

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
    this.client.setHandlers(nestHandlerLookup(this.emitter, this.client.name, this.ready));
  }
}

/**
 * A registration's webhook route, resolved at start-up: the same token in every registration's
 * module, each module resolving its own.
 */
const REGISTRATION = Symbol('nestjs-payments:registration');

/** Nest's MODULE_PATH key (what RouterModule writes); spelled out as its import path differs between Nest 11 and 12. */
const MODULE_PATH = '__module_path__';

/** What `forRoot` options may carry beside the client's options. */
type ForRootOptions = PaymentsModuleOptions & PaymentsModuleExtras;

/**
 * The plugin's Nest module: `PaymentsModule.forRoot(options)` or
 * `PaymentsModule.forRootAsync({ name?, webhook?, imports, inject, useFactory | useClass | useExisting, isGlobal })`.
 * Options are validated at start-up; a missing or invalid one stops the app with a message
 * naming it (never its value).
 *
 * Several registrations (several merchant accounts) live side by side when each has a `name`:
 * each has its own client, store, webhook route (its own `webhook.path`: overlapping routes stop
 * the app at start-up), guard and `PaymentsService` (`@InjectPayments(name)`), and its events
 * carry `registration: name`. The unnamed registration is the default one (`PaymentsService` by type).
 *
 * The webhook controller of a registration is built, with its path and `webhook.decorators`,
 * when the registration is defined: nothing about routes is written once Nest has scanned it.
 */
@Module({})
export class PaymentsModule implements OnModuleInit {
  /**
   * Created by Nest for each registration.
   * @internal
   * @param route this registration's webhook route (absent if the class is imported bare)
   * @param modules the app's modules, to compare routes with the other registrations
   * @param moduleRef where the app's global prefix is read
   */
  constructor(
    @Optional() @Inject(REGISTRATION) private readonly route?: RegistrationRoute,
    @Optional() @Inject(ModulesContainer) private readonly modules?: ModulesContainer,
    @Optional() @Inject(ModuleRef) private readonly moduleRef?: ModuleRef,
  ) {}

  /**
   * Refuses a webhook route that overlaps another registration's in the same app (where either
   * serves webhooks); warns when `webhook.publicUrl` does not reach the route served; tells the
   * client whether it is the app's only registration (which decides whether tokens that name no
   * registration are accepted).
   */
  onModuleInit(): void {
    if (!this.route || !this.modules) return;
    const all = [...(this.modules.values() as Iterable<ScannedModuleShape>)];
    const served = all.flatMap((m) => {
      const route = m.providers.get(REGISTRATION)?.instance as RegistrationRoute | undefined;
      if (!route) return [];
      // A client replaced in a test may not say: count its route as served.
      const client = m.providers.get(getPaymentsClientToken(route.name))?.instance as
        Partial<PaymentsClient> | undefined;
      return [{ route, served: client?.webhooksEnabled !== false, client, importers: importersOf(all, m) }];
    });
    const own = served.find((r) => r.route === this.route);
    refuseSharedRoutes(
      this.route,
      served.filter((r) => r.served || own?.served).map((r) => r.route),
      (route) => served.find((r) => r.route === route)?.importers ?? [],
    );
    own?.client?.webhooks?.setSoleRegistration?.(served.length === 1);
    const path = servedWebhookPath(this.moduleRef, this.route);
    if (own) {
      // Another registration's token reaching this route is answered 421 and named, whatever its secret.
      const others = served
        .filter((r) => r !== own)
        .map((r) => ({
          label: registrationLabel(r.route, r.importers),
          minted: (token: string) => r.client?.webhooks?.minted?.(token) === true,
        }));
      own.client?.webhooks?.setRegistrations?.({
        label: registrationLabel(this.route, own.importers),
        route: path,
        others: () => others,
      });
    }
    // Logged by the client, so through the registration's own logger.
    if (own?.served) own.client?.webhooks?.warnIfUnreachable?.(path, registrationLabel(this.route, own.importers));
  }

  /**
   * Registers the plugin with options known now.
   * @param options the plugin's options, plus `isGlobal` (default false)
   */
  static forRoot(options: PaymentsModuleOptions & PaymentsModuleExtras): DynamicModule {
    const { isGlobal, ...rest } = options ?? ({} as ForRootOptions);
    const route = staticWebhookRoute(rest.webhook, true);
    return PaymentsModule.register(
      rest.name,
      isGlobal,
      route,
      [{ provide: getPaymentsOptionsToken(rest.name), useValue: rest }],
      [],
    );
  }

  /**
   * Registers the plugin with options computed at start-up (e.g. from `ConfigService`).
   * `name`, and the webhook route's `webhook: { path?, decorators? }`, are given here, beside
   * `useFactory`: Nest needs them before the factory runs. Without a `webhook.path` here, the
   * factory's is used (per app).
   */
  static forRootAsync(options: PaymentsModuleAsyncOptions): DynamicModule {
    const { name, isGlobal, imports = [], extraProviders = [] } = options;
    const token = getPaymentsOptionsToken(name);
    const providers: Provider[] = [...extraProviders];
    if (options.useFactory) {
      providers.push({ provide: token, useFactory: options.useFactory, inject: options.inject ?? [] });
    } else if (options.useClass) {
      providers.push(options.useClass, {
        provide: token,
        useFactory: (f: PaymentsOptionsFactory) => f.createPaymentsOptions(),
        inject: [options.useClass],
      });
    } else if (options.useExisting) {
      providers.push({
        provide: token,
        useFactory: (f: PaymentsOptionsFactory) => f.createPaymentsOptions(),
        inject: [options.useExisting],
      });
    } else {
      throw new TypeError('PaymentsModule.forRootAsync() needs useFactory, useClass or useExisting');
    }
    return PaymentsModule.register(name, isGlobal, staticWebhookRoute(options.webhook, false), providers, imports);
  }

  private static register(
    name: string | undefined,
    isGlobal: boolean | undefined,
    route: StaticWebhookRoute,
    optionsProviders: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
  ): DynamicModule {
    const optionsToken = getPaymentsOptionsToken(name);
    const clientToken = getPaymentsClientToken(name);
    const serviceToken = getPaymentsServiceToken(name);
    const guard = name === undefined ? PaymentsWebhookGuard : registrationGuard(clientToken, name);
    // A path known now is the controller's; one from the factory is this registration's module
    // path, written per app (below) as Nest's RouterModule does, so apps never share it.
    const controller = createWebhookController({
      clientToken,
      guard,
      registration: name,
      path: route.path ?? '',
      decorators: route.decorators,
    });
    const module = route.path === undefined ? registrationModule() : PaymentsModule;
    const logger = new Logger(name === undefined ? 'Payments' : `Payments:${name}`);

    const providers: Provider[] = [
      ...optionsProviders,
      {
        provide: REGISTRATION,
        useFactory: (options: PaymentsModuleOptions, modules?: ModulesContainer) => {
          const resolved = resolveWebhookRoute(options, name, route);
          if (route.path === undefined && modules)
            Reflect.defineMetadata(MODULE_PATH + modules.applicationId, resolved.path, module);
          return resolved;
        },
        inject: [optionsToken, { token: ModulesContainer, optional: true }],
      },
      {
        provide: clientToken,
        useFactory: (options: PaymentsModuleOptions, resolved: RegistrationRoute, moduleRef?: ModuleRef) =>
          createClient(options, name, resolved, logger, moduleRef),
        inject: [optionsToken, REGISTRATION, { token: ModuleRef, optional: true }],
      },
      {
        provide: serviceToken,
        useFactory: (client: PaymentsClient) => new PaymentsService(client),
        inject: [clientToken],
      },
      {
        provide: Symbol(`nestjs-payments:bridge:${name ?? 'default'}`),
        useFactory: (
          client: PaymentsClient,
          emitter: EventEmitter2,
          ready?: EventEmitterReadinessWatcher,
          adapterHost?: HttpAdapterHost,
        ) => new PaymentsEventsBridge(client, emitter, ready, adapterHost, logger),
        inject: [
          clientToken,
          EventEmitter2,
          { token: EventEmitterReadinessWatcher, optional: true },
          { token: HttpAdapterHost, optional: true },
        ],
      },
      guard,
    ];
    return {
      module,
      global: isGlobal ?? false,
      imports: [PAYMENTS_EVENTS, ...imports],
      controllers: [controller],
      providers,
      exports: [serviceToken, clientToken, optionsToken],
    };
  }
}

/**
 * A module class of one registration's own, for a route path that only the options factory
 * knows: Nest prefixes a module's routes with its per-app module path, so the path can differ
 * between apps built from one module definition. Named `PaymentsModule` in Nest's logs.
 */
function registrationModule(): Type<PaymentsModule> {
  class RegistrationPaymentsModule extends PaymentsModule {}
  Object.defineProperty(RegistrationPaymentsModule, 'name', { value: 'PaymentsModule' });
  return RegistrationPaymentsModule;
}

function createClient(
  options: PaymentsModuleOptions,
  name: string | undefined,
  route: RegistrationRoute,
  logger: Logger,
  moduleRef: ModuleRef | undefined,
): PaymentsClient {
  if (options?.name !== undefined && options.name !== name) {
    throw new PaymentsValidationError(
      [
        {
          field: 'name',
          messages: [
            'must be given to forRootAsync() beside useFactory (it names the injection tokens), and the options may only repeat it',
          ],
        },
      ],
      'payments options',
    );
  }
  const { webhook, ...rest } = options ?? ({} as PaymentsModuleOptions);
  const { decorators: _decorators, ...coreWebhook } = webhook ?? {};
  return new PaymentsClient({
    ...rest,
    webhook: { ...coreWebhook, path: route.path },
    inbox: inboxInModule(rest.inbox, moduleRef),
    name,
    logger: options?.logger ?? logger,
  });
}
