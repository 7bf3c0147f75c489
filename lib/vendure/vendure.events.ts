import { VendureEvent, type RequestContext } from '@vendure/core';
import type { UnexpectedPaymentReason } from './vendure.decision.js';

/**
 * Published on Vendure's `EventBus` when the service verified a payment that the plugin does not
 * add to its order: the order was cancelled, is already paid (a second payment), cannot take a
 * payment any more, is unknown, or the verified amount differs from the link's. The money is
 * with the merchant: nothing is refunded automatically; subscribe to refund or contact the
 * customer. Also logged as an error.
 */
export class NestjsPaymentsUnexpectedPaymentEvent extends VendureEvent {
  /**
   * @param ctx an admin context of the order's channel
   * @param reason why the payment was not added
   * @param orderCode the order (the payment's tracking id)
   * @param paymentId the service's payment id
   * @param millimes the verified amount, in millimes
   * @param orderState the order's state then, when it was found
   */
  constructor(
    readonly ctx: RequestContext,
    readonly reason: UnexpectedPaymentReason,
    readonly orderCode: string | undefined,
    readonly paymentId: string,
    readonly millimes: string,
    readonly orderState: string | undefined,
  ) {
    super();
  }
}
