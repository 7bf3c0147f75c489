import {
  LanguageCode,
  Logger,
  PaymentMethodHandler,
  UserInputError,
  type Injector,
  type PaymentMetadata,
} from '@vendure/core';
import { cardDetailsOf, isCancelled } from '../core/api/index.js';
import { refundOnce } from '../core/settlement/index.js';
import { CREDENTIAL_ARGS } from './vendure.credentials.js';
import { vendureToMillimes } from './vendure.money.js';
import { NESTJS_PAYMENTS_HANDLER_CODE, ZERO_TOTAL_MARK } from './vendure.options.js';
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
 * Arguments: `preAuthorization`, and the method's own account (`publicKey`, `privateKey`,
 * `webhookSecret`; blank: the plugin's options).
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
      // This method's own merchant account (a channel's, a shop's): both keys, or neither for the
      // plugin's. The secrets are shown masked in the Admin, and never logged by the plugin.
      [CREDENTIAL_ARGS.publicKey]: {
        type: 'string',
        required: false,
        label: [{ languageCode: LanguageCode.en, value: 'Public key (blank: the plugin options)' }],
      },
      [CREDENTIAL_ARGS.privateKey]: {
        type: 'string',
        required: false,
        ui: { component: 'password-form-input' },
        label: [{ languageCode: LanguageCode.en, value: 'Private key (blank: the plugin options)' }],
      },
      [CREDENTIAL_ARGS.webhookSecret]: {
        type: 'string',
        required: false,
        ui: { component: 'password-form-input' },
        label: [{ languageCode: LanguageCode.en, value: 'Webhook secret (blank: the plugin options)' }],
      },
    },
    init: (injector: Injector) => {
      service = injector.get(NestjsPaymentsService);
    },
    createPayment: (ctx, order, amount, _args, metadata) => {
      const verified = verifiedMetadata(metadata);
      const refused =
        'nestjs-payments: payments are added by the plugin once the service verified them; the storefront asks createNestjsPaymentsLink';
      // An order that totals zero, settled by the plugin without the service: nothing is owed, so
      // nothing is taken on trust (even through the shop API).
      if (amount === 0 && order.totalWithTax === 0 && metadata[ZERO_TOTAL_MARK] === true)
        return { amount: 0, state: 'Settled', metadata: { public: { zeroTotal: true } } };
      // Thrown to the shop: Vendure's PaymentFailedError would say only "The payment failed", and
      // would leave an Error payment on the order.
      if (ctx.apiType === 'shop') throw new UserInputError(refused);
      if (!verified) return { amount, state: 'Error', errorMessage: refused };
      return {
        amount: verified.amount,
        state: verified.state,
        transactionId: verified.paymentId,
        // Public (the storefront's and the Admin's): the card as the service showed it, never its number.
        metadata: {
          public: {
            paymentId: verified.paymentId,
            millimes: verified.millimes,
            source: verified.source,
            // Checked again here: the metadata reaches the handler through Vendure's API.
            ...cardDetailsOf({
              payment_system: verified.card?.cardBrand,
              pan: verified.card?.maskedPan,
              approval_code: verified.card?.approvalCode,
            }),
          },
        },
      };
    },
    settlePayment: async (ctx, order, payment) => {
      try {
        const client = await engine().clientOfMethod(ctx, payment.method);
        const capture = await client.capturePayment(payment.transactionId);
        return { success: true, metadata: { captureStatus: capture.status, capturedAt: capture.capturedAt } };
      } catch (error) {
        Logger.error(
          `capture of payment ${payment.transactionId} (order ${order.code}) failed: ${messageOf(error)}`,
          LOG_CONTEXT,
        );
        return { success: false, errorMessage: messageOf(error) };
      }
    },
    cancelPayment: async (ctx, order, payment) => {
      try {
        const client = await engine().clientOfMethod(ctx, payment.method);
        // Released by an earlier call whose result Vendure did not record (its save failed after
        // the call): the plugin's note says so, and the service would refuse a second release.
        if (await isCancelled(client.store, client.name, payment.transactionId)) {
          Logger.info(
            `payment ${payment.transactionId} (order ${order.code}) was released earlier: recorded as cancelled, nothing sent`,
            LOG_CONTEXT,
          );
          return { success: true, metadata: { releasedEarlier: true } };
        }
        const cancelled = await client.cancelPayment(payment.transactionId);
        return { success: true, metadata: { cancelledAt: cancelled.cancelledAt } };
      } catch (error) {
        Logger.error(
          `cancellation of payment ${payment.transactionId} (order ${order.code}) failed: ${messageOf(error)}`,
          LOG_CONTEXT,
        );
        return { success: false, errorMessage: messageOf(error) };
      }
    },
    createRefund: async (ctx, _input, amount, order, payment) => {
      if (amount !== payment.amount) {
        const errorMessage =
          `nestjs-payments: the service refunds whole payments only; refund ${vendureToMillimes(amount, engine().precision)} of ` +
          `${vendureToMillimes(payment.amount, engine().precision)} millimes refused (refund the whole payment, or the rest by other means)`;
        Logger.warn(`${errorMessage} (order ${order.code}, payment ${payment.transactionId})`, LOG_CONTEXT);
        return { state: 'Failed', metadata: { errorMessage } };
      }
      try {
        const client = await engine().clientOfMethod(ctx, payment.method);
        // At most once per payment (the plugin's record): Vendure may fail to save a refund the
        // service made (its own bug, a locked database), and its retry must record it, not resend it.
        const result = await refundOnce(
          { store: client.store, registration: client.name, refund: (id) => client.refundPayment(id) },
          payment.transactionId,
        );
        if (result.kind === 'unknown') {
          Logger.error(
            `refund of payment ${payment.transactionId} (order ${order.code}): ${result.message}`,
            LOG_CONTEXT,
          );
          return { state: 'Failed', metadata: { errorMessage: result.message, refundUnknown: true } };
        }
        const { refund, earlier } = result;
        if (result.unrecorded)
          Logger.warn(
            `payment ${payment.transactionId} (order ${order.code}) was refunded (${refund.refundId}) but the plugin's store did not record it: ${result.unrecorded}`,
            LOG_CONTEXT,
          );
        if (earlier)
          Logger.info(
            `payment ${payment.transactionId} (order ${order.code}) was refunded earlier (${refund.refundId || 'refund id not recorded'}): recorded, nothing sent`,
            LOG_CONTEXT,
          );
        return {
          state: 'Settled',
          transactionId: refund.refundId,
          metadata: {
            refundedAt: refund.refundedAt,
            millimes: refund.amount,
            ...(earlier ? { refundedEarlier: true } : {}),
          },
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
