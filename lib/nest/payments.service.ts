import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { inspect } from 'node:util';
import { PaymentCancelledEvent, PaymentCapturedEvent, PaymentEvents, PaymentRefundedEvent } from '../core/settlement/payment.events.js';
import type { PaymentsClient } from '../core/client/payments.client.js';
import type { ReconciliationRun } from '../core/settlement/reconciliation.scheduler.js';
import type { OutcomePage, OutcomeQuery, OutcomeRecord } from '../core/store/payments.store.js';
import type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  PaymentsOperations,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
} from '../core/api/payments.types.js';
import { emitAfterOperation } from './payments.events-bridge.js';
import { PAYMENTS_CLIENT } from './payments.tokens.js';

/**
 * The service's operations for Nest apps: a thin front end over one registration's
 * `PaymentsClient`, plus events. Inject it by type (the default registration) or with
 * `@InjectPayments(name)`. Captures, refunds and cancellations also emit `payment.captured`,
 * `payment.refunded` and `payment.cancelled`.
 *
 * Lifecycle: when the module is destroyed, webhooks in flight finish (new ones get 503 and are
 * delivered again); on application shutdown the client closes (reconciliation stops, keep-alive
 * sockets and the store's own connections close).
 */
@Injectable()
export class PaymentsService implements PaymentsOperations, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('Payments');

  /**
   * @param client the registration's core client
   * @param events the module's emitter, where the `@OnPayment…` listeners are
   */
  constructor(
    @Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient,
    private readonly events: EventEmitter2,
  ) {}

  /** The registration's `name`, if it has one. */
  get registration(): string | undefined {
    return this.client.name;
  }

  /**
   * Creates a payment; redirect the customer to `link`. Module defaults fill unset fields, and
   * with webhooks configured the plugin's signed webhook URL is sent.
   * @throws PaymentsValidationError before any request when the input is invalid
   * @throws PaymentsApiError when the service refuses it
   * @throws PaymentsConnectionError when no answer came (see `mayHaveBeenProcessed`)
   */
  generatePayment(input: GeneratePaymentInput): Promise<GeneratedPayment> {
    return this.client.generatePayment(input);
  }

  /**
   * Reads a payment from the service (`verify_payment`). Emits nothing and runs no handler: use
   * `reconcilePayment` for that. The service rate-limits this call.
   */
  verifyPayment(paymentId: string): Promise<VerifiedPayment> {
    return this.client.verifyPayment(paymentId);
  }

  /**
   * Captures a pre-authorized payment, all or part (`amount` in millimes; omitted: all), then
   * emits `payment.captured`.
   */
  async capturePayment(paymentId: string, options: { amount?: string | number } = {}): Promise<PaymentCapture> {
    const capture = await this.client.capturePayment(paymentId, options);
    await emitAfterOperation(
      this.events,
      PaymentEvents.CAPTURED,
      this.registration,
      new PaymentCapturedEvent(capture.paymentId, capture.amount, capture.capturedAt, capture.status, this.registration),
      this.logger,
    );
    return capture;
  }

  /**
   * Verifies a payment and, when its status is final, runs its outcome's handlers exactly as a
   * webhook would (one claim for every path: whichever comes first runs them, once). Call it on
   * the return page (`?payment_id=`).
   */
  reconcilePayment(paymentId: string, options?: ReconcileOptions): Promise<ReconcileResult> {
    return this.client.reconcilePayment(paymentId, options);
  }

  /**
   * Refunds a completed standard payment, then emits `payment.refunded`.
   * @throws RefundNotAllowedError when the service refuses the refund
   */
  async refundPayment(paymentId: string): Promise<PaymentRefund> {
    const refund = await this.client.refundPayment(paymentId);
    await emitAfterOperation(
      this.events,
      PaymentEvents.REFUNDED,
      this.registration,
      new PaymentRefundedEvent(refund.paymentId, refund.refundId, refund.amount, refund.refundedAt, this.registration),
      this.logger,
    );
    return refund;
  }

  /**
   * Cancels a pre-authorized payment, then emits `payment.cancelled`.
   * @throws CancellationFailedError when the service refuses the cancellation
   */
  async cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    const cancellation = await this.client.cancelPayment(paymentId);
    await emitAfterOperation(
      this.events,
      PaymentEvents.CANCELLED,
      this.registration,
      new PaymentCancelledEvent(cancellation.paymentId, cancellation.cancelledAt, this.registration),
      this.logger,
    );
    return cancellation;
  }

  /**
   * Lists a customer's card bindings.
   * @throws InvalidClientIdError when the service rejects the client id
   */
  listBindings(clientId: string): Promise<CardBinding[]> {
    return this.client.listBindings(clientId);
  }

  /** The record of a payment's outcome (what was verified, by which path, how its handlers did). */
  getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    return this.client.getOutcome(paymentId);
  }

  /** Records of outcomes, newest first; e.g. `{ handlers: 'failed' }` lists those to retry with `reconcilePayment`. */
  listOutcomes(query?: OutcomeQuery): Promise<OutcomePage> {
    return this.client.listOutcomes(query);
  }

  /** How many payments await reconciliation (the backlog). */
  countPending(): Promise<number> {
    return this.client.countPending();
  }

  /** Runs one reconciliation pass now (a timer does it every `reconciliation.intervalSecs`); for tests and admin tools. */
  runReconciliation(now?: number): Promise<ReconciliationRun> {
    return this.client.runReconciliation(now);
  }

  /** Lets webhooks in flight finish before the store and sockets close. */
  async onModuleDestroy(): Promise<void> {
    await this.client.webhooks.drain();
  }

  /** Stops reconciliation and closes keep-alive sockets and the store's own connections. */
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }

  /** Shows what is safe to show: never the private key. */
  [inspect.custom](): string {
    return `PaymentsService { client: ${inspect(this.client)} }`;
  }

  /** Serialises without credentials. */
  toJSON(): Record<string, unknown> {
    return { client: this.client.toJSON() };
  }
}

/**
 * The injection token of a registration's `PaymentsService`.
 * @param name the registration's `name`; omitted: the default registration (the `PaymentsService` class)
 */
export function getPaymentsServiceToken(name?: string): string | typeof PaymentsService {
  return name === undefined ? PaymentsService : `nestjs-payments:service:${name}`;
}
