import type { GeneratePaymentInput, PaymentRequestAdjustments } from '../core/api/index.js';
import type { PaymentsOptions } from '../core/client/index.js';
import type { PaymentsLogger } from '../core/common/index.js';
import type { MedusaAmountInput } from './medusa.types.js';

/**
 * Options of the provider, given in medusa-config (`providers: [{ resolve:
 * 'nestjs-payments/medusa', id, options }]`): those of `createPaymentsClient` (keys, `baseUrl`,
 * `successLink`, `failLink`, `store`...), without the signed `webhook` (Medusa's route carries no
 * token: `webhookUrl` replaces it), plus the Medusa settings below.
 */
export interface MedusaPaymentsOptions extends Omit<PaymentsOptions, 'webhook'> {
  /**
   * The public URL of Medusa's webhook route for this provider,
   * `https://<backend>/hooks/payment/nestjs-payments_<id>`, sent with every payment so that the
   * service calls it. Deliveries are hints: the payment id they name is verified with the service,
   * and only payments this provider's store knows are looked at. Default: none (no webhook; the
   * storefront's cart completion settles the payment).
   */
  webhookUrl?: string;
  /**
   * `true`: payments take the money at once (Medusa sees `captured`). `false`: payments are
   * pre-authorizations (Medusa sees `authorized`; capture with Medusa's capture, release with its
   * cancel). Default true.
   */
  capture?: boolean;
  /**
   * Card bindings: the customer's Medusa id is sent as the service's `client_id`, so paying
   * creates a binding, which Medusa lists as the account holder's payment methods. Paying with a
   * binding is not offered (it takes the card's CVC on the shop's server). Default false.
   */
  cardBindings?: boolean;
  /**
   * Adjusts a payment session's request before it is sent (`initiatePayment`, and a new amount's
   * new payment): called with Medusa's input (`amount`, `currency_code`, the session's `data`,
   * its `context` with the customer when there is one) and the request the provider made;
   * returns the fields to set, or nothing. It may set `successLink`, `failLink`,
   * `sessionTimeoutSecs`, `acceptCard` and `imageUrl` (e.g. return URLs naming the cart); the
   * amount, tracking id, pre-authorization and webhook stay the provider's, and another field is
   * refused with an error naming it. Default: none.
   */
  paymentRequest?: (
    input: Readonly<MedusaAmountInput>,
    request: Readonly<GeneratePaymentInput>,
  ) => PaymentRequestAdjustments | undefined | Promise<PaymentRequestAdjustments | undefined>;
}

/** Medusa's logger, as the payment module's container holds it. */
export interface MedusaLogger {
  /** Routine detail. */
  debug?(message: string): void;
  /** Information. */
  info(message: string): void;
  /** Handled problems. */
  warn(message: string): void;
  /** Problems that need attention. */
  error(message: string): void;
}

/** The core's logger over Medusa's: routine lines at debug level. */
export function loggerOver(logger: MedusaLogger): PaymentsLogger {
  return {
    log: (message) => (logger.debug ? logger.debug(`[nestjs-payments] ${message}`) : undefined),
    warn: (message) => logger.warn(`[nestjs-payments] ${message}`),
    error: (message) => logger.error(`[nestjs-payments] ${message}`),
  };
}

/** Medusa's logger from the module's container, when it has one (awilix throws on a missing name). */
export function containerLogger(container: Record<string, unknown>): MedusaLogger | undefined {
  try {
    const logger = container.logger as MedusaLogger | undefined;
    return logger && typeof logger.warn === 'function' && typeof logger.error === 'function' ? logger : undefined;
  } catch {
    return undefined;
  }
}
