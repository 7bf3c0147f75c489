import {
  LanguageCode,
  Logger,
  PaymentMethodHandler,
  UserInputError,
  type Injector,
  type PaymentMetadata,
} from '@vendure/core';
import { vendureToMillimes } from './vendure.money.js';
import { NESTJS_PAYMENTS_HANDLER_CODE } from './vendure.options.js';
import { NestjsPaymentsService } from './vendure.service.js';
import type { VerifiedPaymentMetadata } from './vendure.types.js';

const LOG_CONTEXT = 'NestjsPaymentsPlugin';

function verifiedMetadata(metadata: PaymentMetadata): VerifiedPaymentMetadata | undefined {
  const m = metadata as Partial<VerifiedPaymentMetadata>;
  const ok =
    m.nestjsPayments === true &&
    typeof m.paymentId === 'string' &&
    Number.isSafeInteger(m.amount) &&
    typeof m.millimes === 'string' &&
    (m.state === 'Settled' || m.state === 'Authorized');
  return ok ? (m as VerifiedPaymentMetadata) : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Builds the plugin's `PaymentMethodHandler` (code `nestjs-payments`); the plugin registers it.
 * Payments are added by the plugin only, after the service verified them: the shop API's
 * `addPaymentToOrder` with this method is refused with a GraphQL error saying so. Settling an `Authorized` payment captures the
 * pre-authorization (`confirm_payment`), cancelling it releases it, and a refund of the whole
 * payment refunds it; a partial refund is refused (the service's `refund_payment` takes no amount).
 */
export function createNestjsPaymentsHandler(): PaymentMethodHandler {
  // Set by Vendure's init() of this handler instance: the service of this application.
  let service: NestjsPaymentsService | undefined;
  const engine = (): NestjsPaymentsService => {
    if (!service) throw new Error('nestjs-payments: the handler is used before Vendure initialised it');
    return service;
  };
  return new PaymentMethodHandler({
    code: NESTJS_PAYMENTS_HANDLER_CODE,
    description: [{ languageCode: LanguageCode.en, value: 'nestjs-payments (redirect link, verified payments)' }],
    args: {
      preAuthorization: {
        type: 'boolean',
        defaultValue: false,
        label: [
          { languageCode: LanguageCode.en, value: 'Pre-authorize (hold the amount; settling the payment captures it)' },
        ],
      },
    },
    init: (injector: Injector) => {
      service = injector.get(NestjsPaymentsService);
    },
    createPayment: (ctx, _order, amount, _args, metadata) => {
      const verified = verifiedMetadata(metadata);
      const refused =
        'nestjs-payments: payments are added by the plugin once the service verified them; the storefront asks createNestjsPaymentsLink';
      // Thrown to the shop: Vendure's PaymentFailedError would say only "The payment failed", and
      // would leave an Error payment on the order.
      if (ctx.apiType === 'shop') throw new UserInputError(refused);
      if (!verified) return { amount, state: 'Error', errorMessage: refused };
      return {
        amount: verified.amount,
        state: verified.state,
        transactionId: verified.paymentId,
        metadata: { public: { paymentId: verified.paymentId, millimes: verified.millimes, source: verified.source } },
      };
    },
    settlePayment: async (_ctx, order, payment) => {
      try {
        const capture = await engine().client.capturePayment(payment.transactionId);
        return { success: true, metadata: { captureStatus: capture.status, capturedAt: capture.capturedAt } };
      } catch (error) {
        Logger.error(
          `capture of payment ${payment.transactionId} (order ${order.code}) failed: ${messageOf(error)}`,
          LOG_CONTEXT,
        );
        return { success: false, errorMessage: messageOf(error) };
      }
    },
    cancelPayment: async (_ctx, order, payment) => {
      try {
        const cancelled = await engine().client.cancelPayment(payment.transactionId);
        return { success: true, metadata: { cancelledAt: cancelled.cancelledAt } };
      } catch (error) {
        Logger.error(
          `cancellation of payment ${payment.transactionId} (order ${order.code}) failed: ${messageOf(error)}`,
          LOG_CONTEXT,
        );
        return { success: false, errorMessage: messageOf(error) };
      }
    },
    createRefund: async (_ctx, _input, amount, order, payment) => {
      if (amount !== payment.amount) {
        const errorMessage =
          `nestjs-payments: the service refunds whole payments only; refund ${vendureToMillimes(amount, engine().precision)} of ` +
          `${vendureToMillimes(payment.amount, engine().precision)} millimes refused (refund the whole payment, or the rest by other means)`;
        Logger.warn(`${errorMessage} (order ${order.code}, payment ${payment.transactionId})`, LOG_CONTEXT);
        return { state: 'Failed', metadata: { errorMessage } };
      }
      try {
        const refund = await engine().client.refundPayment(payment.transactionId);
        return {
          state: 'Settled',
          transactionId: refund.refundId,
          metadata: { refundedAt: refund.refundedAt, millimes: refund.amount },
        };
      } catch (error) {
        Logger.error(
          `refund of payment ${payment.transactionId} (order ${order.code}) failed: ${messageOf(error)}`,
          LOG_CONTEXT,
        );
        return { state: 'Failed', metadata: { errorMessage: messageOf(error) } };
      }
    },
  });
}
