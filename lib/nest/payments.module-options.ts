import type { ModuleMetadata, OptionalFactoryDependency, Provider, Type } from '@nestjs/common';
import type { PaymentsOptions, PaymentsWebhookOptions } from '../core/client/index.js';

/**
 * The webhook route of a registration, as Nest must know it when the module is defined (before
 * any options factory runs): `forRoot()` takes it from its options, `forRootAsync()` from its own
 * `webhook` setting beside `name`.
 */
export interface PaymentsWebhookRouteOptions {
  /**
   * Route of the webhook controller, under the host's global prefix. Default `'payments/webhook'`.
   * Two registrations of one app may not share it (nor may one be the other's path plus one
   * segment, which its token route would catch) when either serves webhooks: start-up fails
   * naming both.
   *
   * In `forRootAsync()`: when given, the factory's `webhook.path` must be the same or left out
   * (start-up fails otherwise); when not given, the factory's `webhook.path` is used, per app (one
   * module definition may serve different paths in different apps).
   */
  path?: string;
  /**
   * Decorators applied to the generated webhook controller class when the registration is
   * defined, e.g. `[SetMetadata(IS_PUBLIC_KEY, true)]` so that the host's global auth guard lets
   * the service's deliveries through (the service sends no credentials of the host; the signed
   * token in the URL is what authenticates it), or `[UseGuards(IpAllowList), UseInterceptors(Audit)]`.
   * Nest's metadata decorators (`SetMetadata`, `UseGuards`, `UseInterceptors`, `UseFilters`,
   * `applyDecorators`...) work on a class as on a method. Guards given here run before the
   * plugin's token guard. Guard and interceptor classes are instantiated in the registration's
   * module: their dependencies must be global providers (or, with `forRootAsync`, in `imports`).
   *
   * In `forRootAsync()` they must be given here, not by the factory: Nest reads them before the
   * factory runs (start-up fails when the factory returns other ones). Default: none.
   */
  decorators?: Array<ClassDecorator | MethodDecorator>;
}

/** Webhook options of the Nest module: the core's, plus how the generated controller is decorated. */
export interface PaymentsModuleWebhookOptions extends PaymentsWebhookOptions {
  /** See {@link PaymentsWebhookRouteOptions.decorators}. Default: none. */
  decorators?: Array<ClassDecorator | MethodDecorator>;
}

/** Options of `PaymentsModule.forRoot()` / of the `forRootAsync` factory; see the options table of docs/configuration.md. */
export interface PaymentsModuleOptions extends Omit<PaymentsOptions, 'webhook'> {
  /** Signed webhooks and the webhook route; see {@link PaymentsModuleWebhookOptions}. Default: off. */
  webhook?: PaymentsModuleWebhookOptions;
}

/** A class that `forRootAsync({ useClass })` instantiates to get the options. */
export interface PaymentsOptionsFactory {
  /** Returns the module's options (may be async, e.g. after reading a vault). */
  createPaymentsOptions(): PaymentsModuleOptions | Promise<PaymentsModuleOptions>;
}

/** Settings of `forRoot` / `forRootAsync` that shape the module rather than configure the client. */
export interface PaymentsModuleExtras {
  /** Register the module globally, so feature modules need not import it. Default false. */
  isGlobal?: boolean;
}

/** What `PaymentsModule.forRootAsync()` takes. Exactly one of `useFactory`, `useClass`, `useExisting`. */
export interface PaymentsModuleAsyncOptions extends PaymentsModuleExtras, Pick<ModuleMetadata, 'imports'> {
  /**
   * Name of this registration (several merchant accounts in one app). It must be known before the
   * factory runs, because it names the injection tokens (`@InjectPayments(name)`); the factory's
   * options must then have the same `name` or none. Default: the default registration.
   */
  name?: string;
  /**
   * The webhook route's path and decorators, fixed when the module is defined; see
   * {@link PaymentsWebhookRouteOptions}. Default: the path from the factory's options (else
   * `'payments/webhook'`), no decorators.
   */
  webhook?: PaymentsWebhookRouteOptions;
  /** Builds the options; its arguments are the `inject` tokens. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the inject tokens' types are the host's, as in Nest's own FactoryProvider
  useFactory?: (...args: any[]) => PaymentsModuleOptions | Promise<PaymentsModuleOptions>;
  /** Tokens to inject into `useFactory`. Default none. */
  inject?: Array<string | symbol | Type | OptionalFactoryDependency>;
  /** A class, provided in the module, whose `createPaymentsOptions()` gives the options. */
  useClass?: Type<PaymentsOptionsFactory>;
  /** An existing provider (from `imports`) whose `createPaymentsOptions()` gives the options. */
  useExisting?: Type<PaymentsOptionsFactory> | string | symbol;
  /** Extra providers for the factory's dependencies. Default none. */
  extraProviders?: Provider[];
}
