import type { Order, RequestContext } from '@vendure/core';
import type { GeneratePaymentInput, PaymentRequestAdjustments } from '../core/api/index.js';
import type { PaymentsOptions } from '../core/client/index.js';
import type { PaymentsStore } from '../core/store/index.js';

/** Route of the plugin's webhook controller, at the root of Vendure's server (not under the GraphQL APIs). */
export const NESTJS_PAYMENTS_WEBHOOK_PATH = 'nestjs-payments/webhook';

/** Code of the plugin's `PaymentMethodHandler` (the handler to pick when creating the PaymentMethod). */
export const NESTJS_PAYMENTS_HANDLER_CODE = 'nestjs-payments';

/** Injection token of the plugin's options. @internal */
export const NESTJS_PAYMENTS_PLUGIN_OPTIONS = Symbol.for('nestjs-payments.vendure.options');

/**
 * Options of `NestjsPaymentsPlugin.init()`: the client's options (credentials, `baseUrl`, signed
 * webhooks, store, reconciliation...), plus what is Vendure's. `webhook.path` is fixed
 * (`nestjs-payments/webhook`); `webhook.publicUrl` must be the public URL of that route. The
 * inbox is the plugin's own (a table of Vendure's database, written in the order's transaction).
 */
export interface NestjsPaymentsPluginOptions extends Omit<PaymentsOptions, 'logger' | 'inbox'> {
  /**
   * Take pre-authorizations instead of payments: the amount is held, the Vendure payment is
   * `Authorized` (the order `PaymentAuthorized`), the Admin's settle captures it
   * (`confirm_payment`), cancelling it releases it. Default false.
   */
  preAuthorization?: boolean;
  /**
   * The store of a payment method that has its own account (its handler's `publicKey` and
   * `privateKey` arguments, e.g. one per channel): each account needs a store of its own, as two
   * registrations do. Called once per such method, with its code. Required when `store` is set
   * and a method has its own keys; default (no `store`): a new in-memory store per method.
   */
  storeForPaymentMethod?: (paymentMethodCode: string) => PaymentsStore;
  /**
   * Adjusts an order's payment request before it is sent (`createNestjsPaymentsLink`): called
   * with the shop's context, the order (with its payments) and the request the plugin made;
   * returns the fields to set, or nothing. It may set `successLink`, `failLink`,
   * `sessionTimeoutSecs`, `acceptCard` and `imageUrl` (e.g. return URLs naming the order); the
   * amount, tracking id, pre-authorization and webhook stay the plugin's, and another field is
   * refused with an error naming it. What it throws reaches the storefront. Default: none.
   */
  paymentRequest?: (
    ctx: RequestContext,
    order: Order,
    request: Readonly<GeneratePaymentInput>,
  ) => PaymentRequestAdjustments | undefined | Promise<PaymentRequestAdjustments | undefined>;
}

/** The metadata key of a zero-total order's payment, which the plugin adds without the service. @internal */
export const ZERO_TOTAL_MARK = 'nestjsPaymentsZeroTotal';
