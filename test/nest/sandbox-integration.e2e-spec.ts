import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createServer, type AddressInfo } from 'node:net';
import {
  CancellationFailedError,
  InvalidClientIdError,
  OnPaymentAuthorized,
  OnPaymentConfirmed,
  OnPaymentEvent,
  OnPaymentFailed,
  PaymentEvents,
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsModule,
  PaymentsService,
  RefundNotAllowedError,
  type PaymentAuthorizedEvent,
  type PaymentCapturedEvent,
  type PaymentConfirmedEvent,
  type PaymentFailedEvent,
} from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

@Injectable()
class Orders {
  readonly paid: PaymentConfirmedEvent[] = [];
  readonly failed: PaymentFailedEvent[] = [];
  readonly authorized: PaymentAuthorizedEvent[] = [];
  readonly captured: PaymentCapturedEvent[] = [];
  @OnPaymentAuthorized()
  markAuthorized(event: PaymentAuthorizedEvent) {
    this.authorized.push(event);
  }
  @OnPaymentEvent(PaymentEvents.CAPTURED)
  markCaptured(event: PaymentCapturedEvent) {
    this.captured.push(event);
  }
  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent) {
    this.paid.push(event);
  }
  @OnPaymentFailed()
  markFailed(event: PaymentFailedEvent) {
    this.failed.push(event);
  }
}

describe('the plugin against its own sandbox', () => {
  let sandbox: PaymentsSandbox;
  let app: INestApplication;
  let payments: PaymentsService;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
    // The webhook's public URL names the app's own port, so a free port is picked first.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const moduleRef = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot(
          sandbox.options({
            webhook: {
              publicUrl: `http://127.0.0.1:${port}/payments/webhook`,
              secret: 'sandbox-integration-secret-0123456789',
            },
          }),
        ),
      ],
      providers: [Orders],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(port, '127.0.0.1');
    payments = app.get(PaymentsService);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox.close();
  });

  it('pays end to end: generate, the customer pays, the signed webhook confirms, refund once', async () => {
    const { paymentId, link } = await payments.generatePayment({ amount: '12500', developerTrackingId: 'order-1' });
    expect(link).toBe(`${sandbox.url}/checkout/sandbox-merchant/${paymentId}`);
    const settlement = await sandbox.completePayment(paymentId);
    expect(settlement.webhook).toMatchObject({ status: 200, delivered: true });
    expect(app.get(Orders).paid).toEqual([
      expect.objectContaining({ paymentId, amount: '12500', developerTrackingId: 'order-1' }),
    ]);

    const refund = await payments.refundPayment(paymentId);
    expect(refund).toMatchObject({ paymentId, amount: '12500', status: 'success' });
    await expect(payments.refundPayment(paymentId)).rejects.toBeInstanceOf(RefundNotAllowedError);
  });

  it('a declined payment: its failure webhook emits payment.failed, never a confirmation, and it cannot be refunded', async () => {
    const { paymentId } = await payments.generatePayment({ amount: '500' });
    const settlement = await sandbox.failPayment(paymentId);
    expect(settlement.webhook).toMatchObject({ status: 200, delivered: true });
    expect(app.get(Orders).paid.map((e) => e.paymentId)).not.toContain(paymentId);
    expect(app.get(Orders).failed.map((e) => [e.paymentId, e.status])).toEqual([[paymentId, 'FAILURE']]);
    await expect(payments.refundPayment(paymentId)).rejects.toBeInstanceOf(RefundNotAllowedError);
  });

  it('pre-authorizes: generate with preAuthorization, the customer pays, payment.authorized, capture part, payment.captured', async () => {
    const orders = app.get(Orders);
    const { paymentId } = await payments.generatePayment({
      amount: '20000',
      developerTrackingId: 'order-pre',
      preAuthorization: true,
    });
    const settlement = await sandbox.completePayment(paymentId);
    expect([settlement.status, settlement.delivered]).toEqual(['PREAUTH_SUCCESS', true]);
    expect(orders.authorized).toEqual([
      expect.objectContaining({
        paymentId,
        amount: '20000',
        developerTrackingId: 'order-pre',
        status: 'PREAUTH_SUCCESS',
      }),
    ]);
    expect(orders.paid.map((e) => e.paymentId)).not.toContain(paymentId);

    const capture = await payments.capturePayment(paymentId, { amount: '15000' });
    expect(capture).toMatchObject({ paymentId, amount: '15000' });
    expect(orders.captured).toEqual([expect.objectContaining({ paymentId, amount: '15000', status: capture.status })]);
    // Captured once: the rest was released, a second capture is refused and emits nothing.
    await expect(payments.capturePayment(paymentId)).rejects.toMatchObject({ code: 'CAPTURE_NOT_ALLOWED' });
    expect(orders.captured).toHaveLength(1);
  });

  it('saves the card: generate with clientId, the customer pays, listBindings shows the binding named in verify', async () => {
    const clientId = 'customer-77';
    await expect(payments.listBindings(clientId)).resolves.toEqual([]);
    const { paymentId } = await payments.generatePayment({ amount: '3000', clientId });
    await sandbox.completePayment(paymentId);
    const bindings = await payments.listBindings(clientId);
    expect(bindings).toEqual([
      {
        bindingId: expect.any(String),
        clientId,
        cardLastFour: expect.stringMatching(/^[0-9]{4}$/),
        cardBrand: expect.any(String),
        status: 'active',
        createdAt: expect.any(String),
      },
    ]);
    const verified = await payments.verifyPayment(paymentId);
    expect(verified.details).toMatchObject({ binding_id: bindings[0].bindingId });
  });

  it('cancels a pre-authorized payment once', async () => {
    const id = await sandbox.createPreauthorizedPayment({ amount: '9000' });
    await expect(payments.cancelPayment(id)).resolves.toMatchObject({ paymentId: id, status: 'cancelled' });
    await expect(payments.cancelPayment(id)).rejects.toBeInstanceOf(CancellationFailedError);
  });

  it('lists bindings and maps an invalid client id', async () => {
    const binding = sandbox.addBinding({ clientId: 'cust-1', cardLastFour: '4242', cardBrand: 'VISA' });
    await expect(payments.listBindings('cust-1')).resolves.toEqual([
      {
        bindingId: binding.binding_id,
        clientId: 'cust-1',
        cardLastFour: '4242',
        cardBrand: 'VISA',
        status: 'active',
        createdAt: binding.created_at,
      },
    ]);
    // Any id the plugin sends is one the sandbox takes (the service documents no rule)...
    await expect(payments.listBindings('any id, even with spaces!')).resolves.toEqual([]);
    // ...and the service's documented refusal still maps to its typed error.
    sandbox.fault('/api/v2/bindings/list', {
      status: 400,
      body: '{"result":{"status":400,"message":"Invalid client_id"}}',
      times: 1,
    });
    await expect(payments.listBindings('cust-1')).rejects.toBeInstanceOf(InvalidClientIdError);
  });

  it('maps the sandbox faults to typed errors', async () => {
    sandbox.fault('/api/v2/generate_payment', { status: 502, body: '<html>Bad gateway</html>', times: 1 });
    const error = await payments.generatePayment({ amount: '1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentsApiError);
    expect((error as PaymentsApiError).code).toBe('API_ERROR');
  });

  it('wrong keys give PaymentsAuthenticationError', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot({ ...sandbox.options(), privateKey: 'wrong' })],
    }).compile();
    const other = await moduleRef.createNestApplication({ logger: false }).init();
    try {
      await expect(other.get(PaymentsService).listBindings('cust-1')).rejects.toBeInstanceOf(
        PaymentsAuthenticationError,
      );
    } finally {
      await other.close();
    }
  });
});
