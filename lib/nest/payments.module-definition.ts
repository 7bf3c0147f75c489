import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { PaymentsOptions } from '../core/payments.options.js';

/** Options of `PaymentsModule.forRoot()`; see the README's options table. */
export interface PaymentsModuleOptions extends PaymentsOptions {}

/** A class that `forRootAsync({ useClass })` instantiates to get the options. */
export interface PaymentsOptionsFactory {
  /** Returns the module's options (may be async, e.g. after reading a vault). */
  createPaymentsOptions(): PaymentsModuleOptions | Promise<PaymentsModuleOptions>;
}

/** Extras of forRoot/forRootAsync that shape the module rather than configure the client. */
export interface PaymentsModuleExtras {
  /** Register the module globally, so feature modules need not import it. Default false. */
  isGlobal?: boolean;
}

export const {
  ConfigurableModuleClass: PaymentsConfigurableModule,
  MODULE_OPTIONS_TOKEN: PAYMENTS_MODULE_OPTIONS,
  OPTIONS_TYPE: PAYMENTS_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: PAYMENTS_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<PaymentsModuleOptions>({ moduleName: 'Payments' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createPaymentsOptions')
  .setExtras<PaymentsModuleExtras>({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** Injection token of the framework-free `PaymentsClient` the module builds from its options. */
export const PAYMENTS_CLIENT = Symbol('PAYMENTS_CLIENT');
