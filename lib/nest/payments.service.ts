import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { inspect } from 'node:util';
import { PaymentCancelledEvent, PaymentEvents, PaymentRefundedEvent } from '../core/payment.events.js';
import type { PaymentsClient } from '../core/payments.client.js';
import type {
  CardBinding,
  GeneratePaymentInput,
  GeneratedPayment,
  PaymentCancellation,
  PaymentRefund,
  PaymentsOperations,
} from '../core/payments.types.js';
import { PAYMENTS_CLIENT } from './payments.module-definition.js';

/**
 * The service's four operations for Nest apps. Inject it anywhere `PaymentsModule` is visible.
 * Refunds and cancellations also emit `payment.refunded` / `payment.cancelled`.
 */
@Injectable()
export class PaymentsService implements PaymentsOperations, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('Payments');

  constructor(
    @Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient,
    private readonly events: EventEmitter2,
  ) {}

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
   * Refunds a completed standard payment, then emits `payment.refunded`.
   * @throws RefundNotAllowedError when the service refuses the refund
   */
  async refundPayment(paymentId: string): Promise<PaymentRefund> {
    const refund = await this.client.refundPayment(paymentId);
    await this.emit(PaymentEvents.REFUNDED, new PaymentRefundedEvent(refund.paymentId, refund.refundId, refund.amount, refund.refundedAt));
    return refund;
  }

  /**
   * Cancels a pre-authorized payment, then emits `payment.cancelled`.
   * @throws CancellationFailedError when the service refuses the cancellation
   */
  async cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    const cancellation = await this.client.cancelPayment(paymentId);
    await this.emit(PaymentEvents.CANCELLED, new PaymentCancelledEvent(cancellation.paymentId, cancellation.cancelledAt));
    return cancellation;
  }

  /**
   * Lists a customer's card bindings.
   * @throws InvalidClientIdError when the service rejects the client id
   */
  listBindings(clientId: string): Promise<CardBinding[]> {
    return this.client.listBindings(clientId);
  }

  /** Lets webhooks in flight finish before the store and sockets close. */
  async onModuleDestroy(): Promise<void> {
    await this.client.webhooks.drain();
  }

  /** Closes keep-alive sockets and the store's own connections. */
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

  // The operation succeeded at the service; a failing listener must not turn that into an error.
  private async emit(event: string, payload: object): Promise<void> {
    try {
      await this.events.emitAsync(event, payload);
    } catch (error) {
      this.logger.error(`a ${event} handler failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
