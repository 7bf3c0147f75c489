import type { PaymentsOptions } from '../core/client/payments.options.js';

/** Route of the plugin's webhook controller, at the root of Vendure's server (not under the GraphQL APIs). */
export const NESTJS_PAYMENTS_WEBHOOK_PATH = 'nestjs-payments/webhook';

/** Code of the plugin's `PaymentMethodHandler` (the handler to pick when creating the PaymentMethod). */
export const NESTJS_PAYMENTS_HANDLER_CODE = 'nestjs-payments';

/** Injection token of the plugin's options. @internal */
export const NESTJS_PAYMENTS_PLUGIN_OPTIONS = Symbol.for('nestjs-payments.vendure.options');

/**
 * Options of `NestjsPaymentsPlugin.init()`: the client's options (credentials, `baseUrl`, signed
 * webhooks, store, reconciliation...), plus what is Vendure's. `webhook.path` is fixed
 * (`nestjs-payments/webhook`); `webhook.publicUrl` must be the public URL of that route.
 */
export interface NestjsPaymentsPluginOptions extends Omit<PaymentsOptions, 'logger'> {
  /**
   * Take pre-authorizations instead of payments: the amount is held, the Vendure payment is
   * `Authorized` (the order `PaymentAuthorized`), the Admin's settle captures it
   * (`confirm_payment`), cancelling it releases it. Default false.
   */
  preAuthorization?: boolean;
}

/** The metadata key of a zero-total order's payment, which the plugin adds without the service. @internal */
export const ZERO_TOTAL_MARK = 'nestjsPaymentsZeroTotal';
