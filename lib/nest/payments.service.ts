import { Inject, Injectable, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { inspect } from 'node:util';
import type {
  CardBinding,
  GeneratedPayment,
  GenerateOptions,
  GeneratePaymentInput,
  PaymentCancellation,
  PaymentCapture,
  PaymentRefund,
  ReconcileOptions,
  ReconcileResult,
  VerifiedPayment,
} from '../core/api/index.js';
import type { PaymentsClient } from '../core/client/index.js';
import type { ReconciliationRun } from '../core/settlement/index.js';
import type { OutcomePage, OutcomeQuery, OutcomeRecord } from '../core/store/index.js';
import { PAYMENTS_CLIENT } from './payments.tokens.js';

/**
 * The service's operations for Nest apps: a thin front end over one registration's
 * `PaymentsClient`, whose methods it offers as they are (`generatePayment`, `verifyPayment`,
 * `capturePayment`, `reconcilePayment`, `refundPayment`, `cancelPayment`, `listBindings`,
 * `getOutcome`, `listOutcomes`, `countPending`, `runReconciliation`). Inject it by type (the
 * default registration) or with `@InjectPayments(name)`. Outcomes, captures, refunds and
 * cancellations reach the `@OnPayment…` listeners through the module's event bridge.
 *
 * Lifecycle: when the module is destroyed, webhooks in flight finish (new ones get 503 and are
 * delivered again); on application shutdown the client closes (reconciliation stops, keep-alive
 * sockets and the store's own connections close).
 */
@Injectable()
export class PaymentsService implements OnModuleDestroy, OnApplicationShutdown {
  /** @param client the registration's core client */
  constructor(@Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient) {}

  /** The registration's `name`, if it has one. */
  get registration(): string | undefined {
    return this.client.name;
  }

  /** {@inheritDoc PaymentsClient.generatePayment} */
  generatePayment(input: GeneratePaymentInput, options?: GenerateOptions): Promise<GeneratedPayment> {
    return this.client.generatePayment(input, options);
  }

  /** {@inheritDoc PaymentsClient.verifyPayment} */
  verifyPayment(paymentId: string): Promise<VerifiedPayment> {
    return this.client.verifyPayment(paymentId);
  }

  /** {@inheritDoc PaymentsClient.capturePayment} */
  capturePayment(paymentId: string, options?: { amount?: string | number }): Promise<PaymentCapture> {
    return this.client.capturePayment(paymentId, options);
  }

  /** {@inheritDoc PaymentsClient.reconcilePayment} */
  reconcilePayment(paymentId: string, options?: ReconcileOptions): Promise<ReconcileResult> {
    return this.client.reconcilePayment(paymentId, options);
  }

  /** {@inheritDoc PaymentsClient.refundPayment} */
  refundPayment(paymentId: string): Promise<PaymentRefund> {
    return this.client.refundPayment(paymentId);
  }

  /** {@inheritDoc PaymentsClient.cancelPayment} */
  cancelPayment(paymentId: string): Promise<PaymentCancellation> {
    return this.client.cancelPayment(paymentId);
  }

  /** {@inheritDoc PaymentsClient.listBindings} */
  listBindings(clientId: string): Promise<CardBinding[]> {
    return this.client.listBindings(clientId);
  }

  /** {@inheritDoc PaymentsClient.getOutcome} */
  getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    return this.client.getOutcome(paymentId);
  }

  /** {@inheritDoc PaymentsClient.listOutcomes} */
  listOutcomes(query?: OutcomeQuery): Promise<OutcomePage> {
    return this.client.listOutcomes(query);
  }

  /** {@inheritDoc PaymentsClient.countPending} */
  countPending(): Promise<number> {
    return this.client.countPending();
  }

  /** {@inheritDoc PaymentsClient.runReconciliation} */
  runReconciliation(now?: number): Promise<ReconciliationRun> {
    return this.client.runReconciliation(now);
  }

  /** Lets webhooks in flight finish; new ones get 503 (delivered again later). */
  async onModuleDestroy(): Promise<void> {
    await this.client.webhooks.drain();
  }

  /** Closes the client: reconciliation stops, sockets and the store's own connections close. */
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
