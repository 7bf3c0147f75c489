/**
 * An Express host receives the capture, refund and cancellation events as a Nest host does: the
 * core emits them after the operation succeeds, and the router's callbacks are their handlers.
 * Against the sandbox (a real loopback service).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentRefundedEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

describe('Express hosts receive capture, refund and cancellation events', () => {
  let sandbox: PaymentsSandbox;
  let client: PaymentsClient;
  const captured: PaymentCapturedEvent[] = [];
  const refunded: PaymentRefundedEvent[] = [];
  const cancelled: PaymentCancelledEvent[] = [];
  const errors: string[] = [];
  let refundHandlerThrows = false;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
    client = createPaymentsClient({
      publicKey: 'sandbox_public_key',
      privateKey: 'sandbox_private_key',
      baseUrl: sandbox.url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      logger: { log: () => undefined, warn: () => undefined, error: (m) => errors.push(m) },
    });
    createWebhookRouter({
      client,
      onPaymentConfirmed: () => undefined,
      onPaymentCaptured: (event) => void captured.push(event),
      onPaymentRefunded: (event) => {
        if (refundHandlerThrows) throw new Error('mailer down');
        refunded.push(event);
      },
      onPaymentCancelled: (event) => void cancelled.push(event),
    });
  });

  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('capturePayment: onPaymentCaptured gets the captured payment', async () => {
    const id = await sandbox.createPreauthorizedPayment({ amount: '30000' });
    const capture = await client.capturePayment(id, { amount: '20000' });
    expect(captured).toHaveLength(1);
    expect(captured[0]).toMatchObject({ paymentId: id, status: capture.status, amount: capture.amount });
  });

  it('refundPayment: onPaymentRefunded gets the refund; a throwing callback is logged, the refund still resolves', async () => {
    const { paymentId } = await client.generatePayment({ amount: '12500' });
    await sandbox.completePayment(paymentId);
    const refund = await client.refundPayment(paymentId);
    expect(refunded).toEqual([
      expect.objectContaining({ paymentId, refundId: refund.refundId, amount: refund.amount }),
    ]);

    const second = await client.generatePayment({ amount: '4000' });
    await sandbox.completePayment(second.paymentId);
    refundHandlerThrows = true;
    await expect(client.refundPayment(second.paymentId)).resolves.toMatchObject({ paymentId: second.paymentId });
    expect(errors.some((m) => m.includes('payment.refunded') && m.includes('mailer down'))).toBe(true);
  });

  it('cancelPayment: onPaymentCancelled gets the cancellation', async () => {
    const id = await sandbox.createPreauthorizedPayment({ amount: '15000' });
    const cancellation = await client.cancelPayment(id);
    expect(cancelled).toEqual([expect.objectContaining({ paymentId: id, cancelledAt: cancellation.cancelledAt })]);
  });
});
