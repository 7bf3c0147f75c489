import type { ModuleMetadata, OptionalFactoryDependency, Provider, Type } from '@nestjs/common';
import type { PaymentsOptions, PaymentsWebhookOptions } from '../core/payments.options.js';

/** Webhook options of the Nest module: the core's, plus how the generated controller is decorated. */
export interface PaymentsModuleWebhookOptions extends PaymentsWebhookOptions {
  /**
   * Decorators applied to the generated webhook controller class, e.g.
   * `[SetMetadata(IS_PUBLIC_KEY, true)]` so that the host's global auth guard lets the service's
   * deliveries through (the service sends no credentials of the host; the signed token in the URL
   * is what authenticates it). Nest's metadata decorators (`SetMetadata`, `UseGuards`,
   * `UseInterceptors`, `applyDecorators`...) work on a class as on a method. Default: none.
   */
  decorators?: Array<ClassDecorator | MethodDecorator>;
}

/** Options of `PaymentsModule.forRoot()` / of the `forRootAsync` factory; see the README's options table. */
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
