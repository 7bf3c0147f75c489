import { AbstractPaymentProvider, MedusaError } from '@medusajs/framework/utils';
import { PaymentsClient } from '../core/client/index.js';
import {
  adjustedPaymentRequest,
  cardDetailsOf,
  type GeneratePaymentInput,
  PaymentsApiError,
  PaymentsValidationError,
} from '../core/api/index.js';
import { defaultPaymentsLogger, type PaymentsLogger } from '../core/common/index.js';
import {
  medusaCardData,
  type MedusaCardData,
  type MedusaPaymentData,
  paymentDataOf,
  stored,
  stringField,
} from './medusa.data.js';
import { dinarsOf, MEDUSA_CURRENCY, MedusaAmountError, millimesOf } from './medusa.money.js';
import { containerLogger, loggerOver, type MedusaPaymentsOptions } from './medusa.options.js';
import { medusaOutcomeOf } from './medusa.status.js';
import { medusaWebhookResultOf } from './medusa.webhook.js';
import {
  medusaMemoryStoreWarning,
  providerLabel,
  REPLACED_TTL_MS,
  replacedCartKey,
  replacedKey,
  replacedPaidMessage,
  type ReplacedPayment,
} from './medusa.replaced.js';
import { everyEventTo, type PaymentDuplicateEvent, refundOnce } from '../core/settlement/index.js';
import type {
  MedusaAmountInput,
  MedusaInitiateResult,
  MedusaProviderInput,
  MedusaProviderOutput,
  MedusaProviderRecord,
  MedusaRefundInput,
  MedusaSessionResult,
  MedusaStatusResult,
  MedusaWebhookPayload,
  MedusaWebhookResult,
} from './medusa.types.js';
import { MedusaBindings } from './medusa.bindings.js';

/** The core's errors as Medusa's: the message (never a secret) and a type Medusa's HTTP layer maps. */
export function medusaErrorOf(error: unknown): unknown {
  if (error instanceof PaymentsValidationError) return new MedusaError(MedusaError.Types.INVALID_DATA, error.message);
  if (
    error instanceof PaymentsApiError &&
    (error.code === 'REFUND_NOT_ALLOWED' || error.code === 'CANCELLATION_FAILED')
  ) {
    return new MedusaError(
      MedusaError.Types.NOT_ALLOWED,
      `${error.message} (the service refuses; the payment may have been refunded or released already)`,
    );
  }
  return error;
}

/** Runs a call to the core, its failure thrown as {@link medusaErrorOf} maps it. */
export async function medusaCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw medusaErrorOf(error);
  }
}

/** {@link millimesOf}, an amount it refuses thrown as Medusa's `INVALID_DATA`. */
export function medusaMillimesOf(amount: unknown, currencyCode: string): string {
  try {
    return millimesOf(amount, currencyCode);
  } catch (error) {
    if (error instanceof MedusaAmountError) throw new MedusaError(MedusaError.Types.INVALID_DATA, error.message);
    throw error;
  }
}

/**
 * The service as a Medusa v2 payment module provider (`resolve: 'nestjs-payments/medusa'`).
 * Built on the core's client: `verify_payment`, through the core's settlement (one verify per
 * payment, coalesced across paths), is the only thing that decides whether a payment is paid;
 * a webhook's body only names the payment to look at.
 */
export class NestjsPaymentsProvider extends AbstractPaymentProvider<MedusaPaymentsOptions> {
  /** Makes the provider id `pp_nestjs-payments_<id>`. */
  static override identifier = 'nestjs-payments';

  readonly #client: PaymentsClient;
  readonly #logger: PaymentsLogger;
  readonly #options: MedusaPaymentsOptions;
  readonly #bindings: MedusaBindings;

  /** Checks the options when Medusa loads the provider: a wrong setting fails the start, naming it. */
  static override validateOptions(options: Record<string, unknown>): void {
    let check: PaymentsClient;
    try {
      // Without the store: closing this throwaway client must not close the one the provider shares.
      check = new PaymentsClient({
        ...(options as unknown as MedusaPaymentsOptions),
        store: undefined,
        reconciliation: { enabled: false },
      });
    } catch (error) {
      // Medusa names no provider when this throws: the message says which one (several may be configured).
      throw new MedusaError(
        MedusaError.Types.INVALID_DATA,
        `${providerLabel(options ?? {})}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    check.close().catch(() => undefined);
  }

  /**
   * @param cradle the payment module's container (its `logger` is used)
   * @param options the provider's options from medusa-config
   */
  constructor(cradle: Record<string, unknown>, options: MedusaPaymentsOptions) {
    super(cradle, options);
    const medusaLogger = containerLogger(cradle);
    this.#logger = options.logger ?? (medusaLogger ? loggerOver(medusaLogger) : defaultPaymentsLogger);
    this.#options = options;
    const warning = medusaMemoryStoreWarning(options.store, process.env.NODE_ENV);
    if (warning) this.#logger.warn(warning);
    const {
      webhookUrl: _url,
      capture: _capture,
      cardBindings: _bindings,
      paymentRequest: _paymentRequest,
      ...client
    } = options;
    // Reconciliation off unless asked: it would record outcomes that no Medusa workflow acts on.
    this.#client = new PaymentsClient({
      ...client,
      logger: this.#logger,
      reconciliation: { enabled: false, ...client.reconciliation },
    });
    // Medusa's workflows are the effect of an outcome: the core's handlers only report mismatches.
    this.#client.setHandlers(
      everyEventTo((name, event) => {
        if (name === 'payment.mismatch')
          this.#logger.error(`payment ${event.paymentId} does not match its Medusa session: never settled`);
        if (name === 'payment.duplicate') {
          const duplicate = event as PaymentDuplicateEvent;
          this.#logger.error(
            `payment ${duplicate.paymentId} (${dinarsOf(duplicate.amount)} TND) of payment session ${duplicate.developerTrackingId ?? '?'} ` +
              `was paid after payment ${duplicate.settledBy.paymentId} had paid that session: a second charge, ` +
              `${duplicate.refund ? `refunded (${duplicate.refund.refundId})` : 'not refunded: refund it (refund_payment) or contact the customer'}`,
          );
        }
      }),
    );
    this.#bindings = new MedusaBindings(this.#client, options.cardBindings === true);
  }

  /** The client of the service this provider uses (tests, admin tools). */
  get client(): PaymentsClient {
    return this.#client;
  }

  /** Creates the service's payment for a session; its checkout `link` is in `data`. */
  async initiatePayment(input: MedusaAmountInput): Promise<MedusaInitiateResult> {
    const amount = medusaMillimesOf(input.amount, input.currency_code);
    const sessionId = stringField(input.data, 'session_id');
    const clientId = this.#bindings.clientIdOf(input.context);
    const preAuthorization = this.#options.capture === false;
    const request: GeneratePaymentInput = {
      amount,
      developerTrackingId: sessionId,
      successLink: stringField(input.data, 'success_link'),
      failLink: stringField(input.data, 'fail_link'),
      webhook: this.#options.webhookUrl,
      ...(preAuthorization ? { preAuthorization: true } : {}),
      ...(clientId ? { clientId } : {}),
    };
    const adjusted = await medusaCall(async () =>
      adjustedPaymentRequest(request, await this.#options.paymentRequest?.(input, { ...request }), 'paymentRequest'),
    );
    const payment = await medusaCall(() => this.#client.generatePayment(adjusted));
    const data: MedusaPaymentData = {
      payment_id: payment.paymentId,
      link: payment.link,
      amount,
      pre_authorization: preAuthorization,
    };
    if (sessionId) data.session_id = sessionId;
    const cartId = stringField(input.data, 'cart_id');
    if (cartId) data.cart_id = cartId;
    return { id: payment.paymentId, status: 'pending', data: stored(data) };
  }

  /**
   * The service cannot change a payment's amount: the same amount keeps the payment, another one
   * creates a new payment, and the old one is retired as a deleted session's is ({@link deletePayment}).
   */
  async updatePayment(input: MedusaAmountInput): Promise<MedusaStatusResult> {
    const current = input.data?.payment_id ? paymentDataOf(input.data, 'updatePayment') : undefined;
    if (current && current.amount === medusaMillimesOf(input.amount, input.currency_code))
      return { data: stored(current) };
    const { data, status } = await this.initiatePayment({
      ...input,
      data: {
        ...input.data,
        session_id: current?.session_id ?? input.data?.session_id,
        cart_id: current?.cart_id ?? input.data?.cart_id,
      },
    });
    if (current) await this.#retire(current);
    return { status, data };
  }

  /**
   * A session removed (replaced by another tab's, or by a new session after the cart changed): a
   * pre-authorization is released (`cancel_payment`); one not held yet (the customer still on its
   * checkout page) is released when its webhook says it is held. A standard payment cannot be
   * cancelled at the service (its `cancel_payment` takes pre-authorizations only): its link stays
   * payable until its checkout session ends. So the provider remembers it as replaced: found paid now, or paid
   * later (its webhook), it is logged as an error naming its cart and session, and its webhook
   * makes nothing in Medusa (`not_supported`) instead of Medusa's "PaymentSession was not found".
   */
  async deletePayment(input: MedusaProviderInput): Promise<MedusaProviderOutput> {
    if (!input.data?.payment_id) return { data: input.data };
    const data = paymentDataOf(input.data, 'deletePayment');
    return { data: stored(await this.#retire(data)) };
  }

  /** Retires a payment whose session was replaced or deleted (see {@link deletePayment}). */
  async #retire(data: MedusaPaymentData): Promise<MedusaPaymentData> {
    const replaced: ReplacedPayment = {
      paymentId: data.payment_id,
      amount: data.amount,
      sessionId: data.session_id,
      cartId: data.cart_id,
    };
    const binding = { paymentId: data.payment_id, amount: data.amount, createdAt: new Date().toISOString() };
    try {
      await this.#client.store.saveBinding(
        replacedKey(data.payment_id),
        { ...binding, developerTrackingId: data.session_id },
        REPLACED_TTL_MS,
      );
      if (data.cart_id)
        await this.#client.store.saveBinding(
          replacedCartKey(data.payment_id),
          { ...binding, developerTrackingId: data.cart_id },
          REPLACED_TTL_MS,
        );
    } catch (error) {
      this.#logger.warn(
        `payment ${data.payment_id} of a replaced payment session could not be recorded as replaced: ${(error as Error).message}`,
      );
    }
    if (data.pre_authorization) {
      const { data: released } = await this.cancelPayment({ data: stored(data) });
      return released as unknown as MedusaPaymentData;
    }
    try {
      const verified = await this.#client.verifyPayment(data.payment_id);
      if (verified.status === 'SUCCESS')
        this.#logger.error(replacedPaidMessage(replaced, dinarsOf(data.amount), 'now'));
    } catch (error) {
      this.#logger.warn(
        `payment ${data.payment_id} of a replaced payment session could not be checked: ${(error as Error).message}`,
      );
    }
    return data;
  }

  /** The verified status of the session's payment: `captured`, `authorized`, `pending` (never completes a cart), `error`, `canceled`. */
  async authorizePayment(input: MedusaProviderInput): Promise<MedusaSessionResult> {
    return this.#settle(paymentDataOf(input.data, 'authorizePayment'));
  }

  /** As {@link authorizePayment}. */
  async getPaymentStatus(input: MedusaProviderInput): Promise<MedusaSessionResult> {
    return this.#settle(paymentDataOf(input.data, 'getPaymentStatus'));
  }

  /** The service's current account of the payment (`verify_payment`), in `data.status`. */
  async retrievePayment(input: MedusaProviderInput): Promise<MedusaProviderOutput> {
    const data = paymentDataOf(input.data, 'retrievePayment');
    const verified = await medusaCall(() => this.#client.verifyPayment(data.payment_id));
    return { data: stored({ ...data, status: verified.status }) };
  }

  /**
   * Captures a pre-authorization, whole (Medusa does not tell a provider a capture's amount), once:
   * a capture already recorded, or one the service already made (verify says `SUCCESS`), is not
   * asked again. A standard payment was taken when paid: nothing to capture.
   */
  async capturePayment(input: MedusaProviderInput): Promise<MedusaProviderOutput> {
    const data = paymentDataOf(input.data, 'capturePayment');
    if (data.captured || !data.pre_authorization) return { data: stored(data) };
    try {
      const capture = await this.#client.capturePayment(data.payment_id);
      return {
        data: stored({
          ...data,
          status: 'SUCCESS',
          captured: { amount: capture.amount ?? data.amount, at: capture.capturedAt ?? new Date().toISOString() },
        }),
      };
    } catch (error) {
      if (!(error instanceof PaymentsApiError)) throw error;
      const verified = await this.#client.verifyPayment(data.payment_id);
      if (verified.status !== 'SUCCESS') throw medusaErrorOf(error);
      return {
        data: stored({
          ...data,
          status: verified.status,
          captured: { amount: verified.amount, at: new Date().toISOString() },
        }),
      };
    }
  }

  /**
   * Releases a pre-authorization, once; a payment already released, never held or not a
   * pre-authorization has nothing to release.
   */
  async cancelPayment(input: MedusaProviderInput): Promise<MedusaProviderOutput> {
    const data = paymentDataOf(input.data, 'cancelPayment');
    if (data.cancelled_at || !data.pre_authorization || data.captured) return { data: stored(data) };
    try {
      const cancellation = await this.#client.cancelPayment(data.payment_id);
      return { data: stored({ ...data, cancelled_at: cancellation.cancelledAt }) };
    } catch (error) {
      if (!(error instanceof PaymentsApiError)) throw error;
      // Refused: released earlier (a retry), or never held. Only a hold still in place is an error.
      const verified = await this.#client.verifyPayment(data.payment_id);
      if (verified.status === 'PREAUTH_SUCCESS' || verified.status === 'SUCCESS') throw medusaErrorOf(error);
      return { data: stored({ ...data, status: verified.status, cancelled_at: new Date().toISOString() }) };
    }
  }

  /**
   * Refunds the payment, whole (the service's refund takes a payment id and no amount), once per
   * Medusa refund: the same refund retried (same idempotency key) returns what was done; another
   * refund of a payment refunded already, or a partial amount, is refused with a Medusa error. The
   * service is asked at most once per payment (the provider's record in its store): a retry whose
   * data missed an earlier refund returns that refund; one after a call whose answer was lost is
   * refused (`unknown`: a person checks with the service).
   */
  async refundPayment(input: MedusaRefundInput): Promise<MedusaProviderOutput> {
    const data = paymentDataOf(input.data, 'refundPayment');
    const key = input.context?.idempotency_key;
    if (data.refund) {
      if (data.refund.key === key) return { data: stored(data) };
      throw new MedusaError(
        MedusaError.Types.NOT_ALLOWED,
        `payment ${data.payment_id} was refunded in full already (refund ${data.refund.refund_id})`,
      );
    }
    const taken = data.captured?.amount ?? data.amount;
    const asked = medusaMillimesOf(input.amount, MEDUSA_CURRENCY);
    if (asked !== taken) {
      throw new MedusaError(
        MedusaError.Types.NOT_ALLOWED,
        `the service refunds whole payments only: refund ${dinarsOf(taken)} TND, not ${dinarsOf(asked)} TND (partial refunds are not supported)`,
      );
    }
    // At most once per payment, by the provider's own record in its store: Medusa may fail to
    // record a refund the service made, and its retry (another refund, another key) must find it.
    const client = this.#client;
    const result = await medusaCall(() =>
      refundOnce(
        { store: client.store, registration: client.name, refund: (id) => client.refundPayment(id) },
        data.payment_id,
      ),
    );
    if (result.kind === 'unknown') {
      this.#logger.error(`refund of payment ${data.payment_id}: ${result.message}`);
      throw new MedusaError(MedusaError.Types.NOT_ALLOWED, result.message);
    }
    const { refund } = result;
    if (result.unrecorded)
      this.#logger.warn(
        `payment ${data.payment_id} was refunded (${refund.refundId}) but the provider's store did not record it: ${result.unrecorded}`,
      );
    if (result.earlier)
      this.#logger.warn(
        `payment ${data.payment_id} was refunded earlier (${refund.refundId || 'refund id not recorded'}): recorded, nothing sent`,
      );
    return {
      data: stored({
        ...data,
        refund: { refund_id: refund.refundId, amount: refund.amount, refunded_at: refund.refundedAt, key },
      }),
    };
  }

  /**
   * A delivery on `/hooks/payment/...`: its body only names a payment. A payment this provider's
   * store does not know is not looked at (a stranger's id costs no call to the service); a known
   * one is settled through the core (verified once, duplicates cost nothing), and the verified
   * outcome, never the body, picks the action. The session id is the payment's verified tracking id.
   */
  async getWebhookActionAndData(payload: MedusaWebhookPayload): Promise<MedusaWebhookResult> {
    return medusaWebhookResultOf(this.#client, this.#logger, payload);
  }

  /** Creates the customer's account holder: the customer's id is the service's `client_id` (`cardBindings`). */
  async createAccountHolder(input: MedusaProviderInput): Promise<MedusaProviderRecord | Record<string, never>> {
    return this.#bindings.createAccountHolder(input.context);
  }

  /** Nothing to update at the service. */
  async updateAccountHolder(): Promise<MedusaProviderOutput> {
    return {};
  }

  /** Nothing to delete at the service (it has no endpoint for it). */
  async deleteAccountHolder(): Promise<MedusaProviderOutput> {
    return {};
  }

  /** The customer's card bindings (`bindings/list`), as Medusa payment methods. */
  async listPaymentMethods(input: MedusaProviderInput): Promise<MedusaProviderRecord[]> {
    return this.#bindings.list(input.context);
  }

  /** Not offered: a binding is created by paying with `cardBindings` on. */
  async savePaymentMethod(): Promise<MedusaProviderRecord> {
    throw new MedusaError(
      MedusaError.Types.NOT_ALLOWED,
      'the service creates a card binding when the customer pays (cardBindings option); it has no endpoint to save one',
    );
  }

  /** Not offered: the service has no endpoint to delete a binding. */
  async deletePaymentMethod(): Promise<MedusaProviderOutput> {
    throw new MedusaError(MedusaError.Types.NOT_ALLOWED, 'the service has no endpoint to delete a card binding');
  }

  async #settle(data: MedusaPaymentData): Promise<MedusaSessionResult> {
    const result = await medusaCall(() =>
      this.#client.reconcilePayment(data.payment_id, {
        expected: { amount: data.amount, developerTrackingId: data.session_id },
        source: 'return',
      }),
    );
    const status = medusaOutcomeOf(result.outcome).status;
    const card = status === 'captured' || status === 'authorized' ? await this.#cardOf(data) : undefined;
    return { status, data: stored({ ...data, ...card, status: result.status || data.status }) };
  }

  /**
   * The card of a paid or held payment as the merchant may see it (brand, masked number, approval
   * code; never the whole number), for the payment's `data`: kept from an earlier call, else read
   * from the service. A failed read leaves them out: the payment is settled all the same.
   */
  async #cardOf(data: MedusaPaymentData): Promise<MedusaCardData> {
    if (data.card_brand !== undefined || data.masked_pan !== undefined || data.approval_code !== undefined) return {};
    try {
      return medusaCardData(cardDetailsOf((await this.#client.verifyPayment(data.payment_id)).details));
    } catch (error) {
      this.#logger.warn(
        `payment ${data.payment_id}: its card details could not be read (${(error as Error).message}); settled without them`,
      );
      return {};
    }
  }
}
