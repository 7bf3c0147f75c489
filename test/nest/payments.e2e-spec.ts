import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import net from 'node:net';
import { inspect } from 'node:util';
import {
  CancellationFailedError,
  InvalidClientIdError,
  OnPaymentEvent,
  PaymentEvents,
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsModule,
  PaymentsService,
  PaymentsValidationError,
  RefundNotAllowedError,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';

const PRIVATE_KEY = 'sk_live_Zx81-never-to-be-seen-QQ';
const CONFIRM_PATH = '/api/v2/confirm_payment';
const PUBLIC_KEY = 'pk_live_123';

@Injectable()
class RecordingListener {
  readonly refunded: PaymentRefundedEvent[] = [];
  readonly cancelled: PaymentCancelledEvent[] = [];
  readonly captured: PaymentCapturedEvent[] = [];

  @OnPaymentEvent(PaymentEvents.CAPTURED)
  onCapture(event: PaymentCapturedEvent) {
    this.captured.push(event);
  }

  @OnPaymentEvent(PaymentEvents.REFUNDED)
  onRefund(event: PaymentRefundedEvent) {
    this.refunded.push(event);
  }

  @OnPaymentEvent(PaymentEvents.CANCELLED)
  onCancel(event: PaymentCancelledEvent) {
    this.cancelled.push(event);
  }
}

async function boot(options: Partial<PaymentsModuleOptions>): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PaymentsModule.forRoot({
        publicKey: PUBLIC_KEY,
        privateKey: PRIVATE_KEY,
        baseUrl: 'http://127.0.0.1:1',
        ...options,
      }),
    ],
    providers: [RecordingListener],
  }).compile();
  return moduleRef.createNestApplication({ logger: false }).init();
}

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function caught(promise: Promise<unknown>): Promise<PaymentsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PaymentsError);
    return error as PaymentsError;
  }
  throw new Error('expected a rejection');
}

function expectNoSecret(value: unknown) {
  for (const text of [String(value), JSON.stringify(value), inspect(value, { depth: 10, showHidden: true })]) {
    expect(text).not.toContain(PRIVATE_KEY);
  }
}

describe('PaymentsService against a loopback service', () => {
  let fake: FakeService;
  let app: INestApplicationContext;
  let payments: PaymentsService;

  beforeAll(async () => {
    fake = await FakeService.start();
    app = await boot({
      baseUrl: fake.url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      timeoutMs: 300,
      maxRetries: 2,
    });
    payments = app.get(PaymentsService);
  });
  afterEach(() => fake.reset());
  afterAll(async () => {
    await app.close();
    await fake.close();
  });

  describe('the wire', () => {
    it('generate_payment: exact method, path, headers and snake_case body with module defaults', async () => {
      fake.reply(PATHS.generate, OK.generate('pay_42', { developer_tracking_id: 'order-7' }));
      const result = await payments.generatePayment({
        amount: '12500',
        developerTrackingId: 'order-7',
        acceptCard: true,
      });

      expect(result).toEqual({
        paymentId: 'pay_42',
        link: 'https://checkout.example/merchant/pay_42',
        developerTrackingId: 'order-7',
      });
      expect(fake.requests).toHaveLength(1);
      const [req] = fake.requests;
      expect(req.method).toBe('POST');
      expect(req.path).toBe('/api/v2/generate_payment');
      expect(req.query).toEqual({});
      expect(req.headers.authorization).toBe(`Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`);
      expect(req.headers['content-type']).toBe('application/json');
      expect(JSON.parse(req.body)).toStrictEqual({
        amount: '12500',
        success_link: 'https://shop.example/ok',
        fail_link: 'https://shop.example/ko',
        developer_tracking_id: 'order-7',
        accept_card: true,
      });
    });

    it('sends a numeric amount as a digit string, every optional field in snake_case, input over defaults', async () => {
      fake.reply(PATHS.generate, OK.generate());
      await payments.generatePayment({
        amount: 7000,
        successLink: 'http://localhost:3000/paid',
        failLink: 'http://localhost:3000/failed',
        webhook: 'https://shop.example/hook?x=1',
        sessionTimeoutSecs: 600,
        acceptCard: false,
        imageUrl: 'https://cdn.example/logo.png',
      });
      expect(fake.requests[0].body).toBe(
        JSON.stringify({
          amount: '7000',
          success_link: 'http://localhost:3000/paid',
          fail_link: 'http://localhost:3000/failed',
          webhook: 'https://shop.example/hook?x=1',
          session_timeout_secs: 600,
          accept_card: false,
          image_url: 'https://cdn.example/logo.png',
        }),
      );
    });

    it('omits optional fields given as undefined or null (never sends null)', async () => {
      fake.reply(PATHS.generate, OK.generate());
      await payments.generatePayment({
        amount: '1',
        developerTrackingId: undefined,
        imageUrl: null as unknown as string,
      });
      expect(JSON.parse(fake.requests[0].body)).toStrictEqual({
        amount: '1',
        success_link: 'https://shop.example/ok',
        fail_link: 'https://shop.example/ko',
      });
    });

    it('refund_payment: exact wire and mapping, then payment.refunded', async () => {
      const listener = app.get(RecordingListener);
      fake.reply(PATHS.refund, OK.refund('pay_9'));
      const refund = await payments.refundPayment('pay_9');
      expect(refund).toEqual({
        refundId: 'ref_1',
        paymentId: 'pay_9',
        amount: '12500',
        status: 'success',
        refundedAt: '2026-11-22T10:00:00Z',
      });
      const [req] = fake.requests;
      expect([req.method, req.path, req.headers.authorization, req.headers['content-type'], req.body]).toEqual([
        'POST',
        '/api/v2/refund_payment',
        `Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`,
        'application/json',
        '{"payment_id":"pay_9"}',
      ]);
      expect(listener.refunded.at(-1)).toMatchObject({ paymentId: 'pay_9', refundId: 'ref_1', amount: '12500' });
    });

    it('cancel_payment: exact wire and mapping, then payment.cancelled', async () => {
      const listener = app.get(RecordingListener);
      fake.reply(PATHS.cancel, OK.cancel('pay_pre'));
      const result = await payments.cancelPayment('pay_pre');
      expect(result).toEqual({ paymentId: 'pay_pre', status: 'cancelled', cancelledAt: '2026-11-22T10:00:00Z' });
      const [req] = fake.requests;
      expect([req.method, req.path, req.body, req.headers['content-type']]).toEqual([
        'POST',
        '/api/v2/cancel_payment',
        '{"payment_id":"pay_pre"}',
        'application/json',
      ]);
      expect(listener.cancelled.at(-1)).toMatchObject({ paymentId: 'pay_pre', cancelledAt: '2026-11-22T10:00:00Z' });
    });

    it.each([
      ['part', { amount: 15000 }, '{"payment_id":"pay_pre","amount":"15000"}', '15000'],
      ['all', {}, '{"payment_id":"pay_pre"}', '20000'],
    ] as const)(
      'confirm_payment (capture %s): exact wire and mapping, then payment.captured',
      async (_what, options, body, amount) => {
        const listener = app.get(RecordingListener);
        listener.captured.length = 0;
        fake.reply(CONFIRM_PATH, {
          status: 200,
          body: {
            result: { payment_id: 'pay_pre', status: 'confirmed', amount, confirmed_at: '2026-11-22T11:00:00Z' },
            status: 'success',
          },
        });
        const capture = await payments.capturePayment('pay_pre', options);
        expect(capture).toEqual({
          paymentId: 'pay_pre',
          status: 'confirmed',
          amount,
          capturedAt: '2026-11-22T11:00:00Z',
        });
        const [req] = fake.requests;
        expect([req.method, req.path, req.headers.authorization, req.headers['content-type'], req.body]).toEqual([
          'POST',
          CONFIRM_PATH,
          `Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`,
          'application/json',
          body,
        ]);
        expect(listener.captured).toHaveLength(1);
        expect(listener.captured[0]).toMatchObject({
          paymentId: 'pay_pre',
          amount,
          capturedAt: '2026-11-22T11:00:00Z',
          status: 'confirmed',
        });
      },
    );

    it('a refused capture emits no payment.captured', async () => {
      const listener = app.get(RecordingListener);
      listener.captured.length = 0;
      fake.reply(CONFIRM_PATH, {
        status: 400,
        body: { status: 'error', message: 'Payment cannot be captured', code: 'CAPTURE_NOT_ALLOWED' },
      });
      const error = (await caught(payments.capturePayment('pay_pre'))) as PaymentsApiError;
      expect([error.code, error.serviceMessage]).toEqual(['CAPTURE_NOT_ALLOWED', 'Payment cannot be captured']);
      expect(listener.captured).toEqual([]);
    });

    it('bindings/list: GET with client_id in the query, no body, no content-type', async () => {
      fake.reply(PATHS.bindings, OK.bindings('client a&b=c'));
      const bindings = await payments.listBindings('client a&b=c');
      expect(bindings).toEqual([
        {
          bindingId: '6f1c2b1e-8f3a-4c55-9d7e-2b8a1f0c9e11',
          clientId: 'client a&b=c',
          cardLastFour: '4242',
          cardBrand: 'VISA',
          status: 'active',
          createdAt: '2026-11-01T08:00:00Z',
        },
      ]);
      const [req] = fake.requests;
      expect(req.method).toBe('GET');
      expect(req.path).toBe('/api/v2/bindings/list');
      expect(req.query).toEqual({ client_id: 'client a&b=c' });
      expect(req.body).toBe('');
      expect(req.headers['content-type']).toBeUndefined();
      expect(req.headers.authorization).toBe(`Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`);
    });
  });

  describe('validation happens before any request', () => {
    it('lists every bad field of generatePayment and sends nothing', async () => {
      const error = await caught(
        payments.generatePayment({
          amount: '12.5',
          successLink: 'ftp://x',
          failLink: 'not a url',
          sessionTimeoutSecs: -3,
          acceptCard: 'yes' as unknown as boolean,
          developerTrackingId: '',
        }),
      );
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect(error.code).toBe('VALIDATION_FAILED');
      expect((error as PaymentsValidationError).fields.map((f) => f.field).sort()).toEqual(
        ['acceptCard', 'amount', 'developerTrackingId', 'failLink', 'sessionTimeoutSecs', 'successLink'].sort(),
      );
      expect(fake.requests).toHaveLength(0);
    });

    // Every amount rule is a row of the field table (test/core/payment.fields.spec.ts); here, that a
    // refused amount reaches the Nest service as a validation error with nothing sent.
    it('refuses a bad amount with nothing sent', async () => {
      const error = await caught(payments.generatePayment({ amount: '12.5' }));
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect((error as PaymentsValidationError).fields).toEqual([
        { field: 'amount', messages: [expect.stringContaining("toMillimes('12.5')")] },
      ]);
      expect(fake.requests).toHaveLength(0);
    });

    it('refuses unknown fields (a typo must not silently drop a setting)', async () => {
      const error = await caught(payments.generatePayment({ amount: '10', sucessLink: 'https://x.example' } as never));
      expect((error as PaymentsValidationError).fields.map((f) => f.field)).toEqual(['sucessLink']);
    });

    it.each([[''], ['   '], [undefined], [42], [null]])(
      'refuses the payment id %p for refund and cancel, and the client id for bindings',
      async (id) => {
        for (const call of [
          () => payments.refundPayment(id as string),
          () => payments.cancelPayment(id as string),
          () => payments.listBindings(id as string),
        ]) {
          expect(await caught(call())).toBeInstanceOf(PaymentsValidationError);
        }
        expect(fake.requests).toHaveLength(0);
      },
    );
  });

  describe('error shapes, whatever the HTTP status', () => {
    it.each([200, 400, 409, 422, 500])(
      'flat REFUND_NOT_ALLOWED on HTTP %i -> RefundNotAllowedError',
      async (status) => {
        fake.reply(PATHS.refund, {
          status,
          body: { status: 'error', message: 'Payment cannot be refunded', code: 'REFUND_NOT_ALLOWED' },
        });
        const error = (await caught(payments.refundPayment('pay_1'))) as RefundNotAllowedError;
        expect(error).toBeInstanceOf(RefundNotAllowedError);
        expect(error).toBeInstanceOf(PaymentsApiError);
        expect([error.code, error.httpStatus, error.serviceMessage]).toEqual([
          'REFUND_NOT_ALLOWED',
          status,
          'Payment cannot be refunded',
        ]);
        expect(fake.requests).toHaveLength(1);
      },
    );

    it.each([200, 400, 500])('flat CANCELLATION_FAILED on HTTP %i -> CancellationFailedError', async (status) => {
      fake.reply(PATHS.cancel, {
        status,
        body: { status: 'error', message: 'Pre-auth payment cannot be cancelled', code: 'CANCELLATION_FAILED' },
      });
      const error = (await caught(payments.cancelPayment('pay_1'))) as CancellationFailedError;
      expect(error).toBeInstanceOf(CancellationFailedError);
      expect([error.code, error.httpStatus, error.serviceMessage]).toEqual([
        'CANCELLATION_FAILED',
        status,
        'Pre-auth payment cannot be cancelled',
      ]);
    });

    it('keeps an unknown flat code as the error code', async () => {
      fake.reply(PATHS.refund, {
        status: 400,
        body: { status: 'error', message: 'Too late', code: 'REFUND_WINDOW_CLOSED' },
      });
      const error = (await caught(payments.refundPayment('pay_1'))) as PaymentsApiError;
      expect(error.constructor).toBe(PaymentsApiError);
      expect([error.code, error.serviceMessage]).toEqual(['REFUND_WINDOW_CLOSED', 'Too late']);
    });

    it.each([200, 400])(
      'nested 400 "Bad Request" from generate on HTTP %i -> PaymentsApiError BAD_REQUEST',
      async (status) => {
        fake.reply(PATHS.generate, { status, body: { result: { status: 400, message: 'Bad Request' } } });
        const error = (await caught(payments.generatePayment({ amount: '100' }))) as PaymentsApiError;
        expect(error.constructor).toBe(PaymentsApiError);
        expect([error.code, error.httpStatus, error.serviceMessage]).toEqual(['BAD_REQUEST', status, 'Bad Request']);
      },
    );

    it.each([200, 400])('nested "Invalid client_id" on HTTP %i -> InvalidClientIdError', async (status) => {
      fake.reply(PATHS.bindings, { status, body: { result: { status: 400, message: 'Invalid client_id' } } });
      const error = (await caught(payments.listBindings('bad'))) as InvalidClientIdError;
      expect(error).toBeInstanceOf(InvalidClientIdError);
      expect([error.code, error.httpStatus]).toEqual(['INVALID_CLIENT_ID', status]);
    });

    it.each([401, 403])('HTTP %i -> PaymentsAuthenticationError, whatever the body', async (status) => {
      for (const body of [
        { result: { status, message: 'Unauthorized' } },
        '<html>denied</html>',
        { status: 'error', message: 'bad key', code: 'X' },
      ]) {
        fake.reply(PATHS.refund, { status, body });
        const error = (await caught(payments.refundPayment('pay_1'))) as PaymentsAuthenticationError;
        expect(error).toBeInstanceOf(PaymentsAuthenticationError);
        expect([error.code, error.httpStatus]).toEqual(['AUTHENTICATION_FAILED', status]);
        expectNoSecret(error);
      }
    });

    it.each([
      // An unrecognised body is INVALID_RESPONSE on a 2xx, API_ERROR (the service failed) otherwise.
      [
        502,
        '<html><body><h1>502 Bad Gateway</h1></body></html>',
        'API_ERROR',
        '<html><body><h1>502 Bad Gateway</h1></body></html>',
      ],
      [200, '', 'INVALID_RESPONSE', ''],
      [200, '{"result": {"success": tru', 'INVALID_RESPONSE', '{"result": {"success": tru'],
      [500, '[1,2]', 'API_ERROR', '[1,2]'],
      [200, '{"status":"success"}', 'INVALID_RESPONSE', '{"status":"success"}'],
      [503, '{"unexpected":true}', 'API_ERROR', '{"unexpected":true}'],
    ])(
      'HTTP %i with body %p -> PaymentsApiError %s with an excerpt, never a crash',
      async (status, body, code, excerpt) => {
        fake.reply(PATHS.refund, { status, body, headers: { 'content-type': 'text/html' } });
        const error = (await caught(payments.refundPayment('pay_1'))) as PaymentsApiError;
        expect(error.constructor).toBe(PaymentsApiError);
        expect([error.code, error.httpStatus, error.bodyExcerpt]).toEqual([code, status, excerpt]);
      },
    );

    it('cuts long excerpts to 200 characters', async () => {
      fake.reply(PATHS.generate, { status: 500, body: `<html>${'x'.repeat(5000)}</html>` });
      const error = (await caught(payments.generatePayment({ amount: '1' }))) as PaymentsApiError;
      expect(error.bodyExcerpt).toHaveLength(201);
    });

    it('never follows a redirect: the credentials stay with the service', async () => {
      const other = await FakeService.start();
      try {
        fake.reply(PATHS.refund, { status: 302, body: '', headers: { location: `${other.url}/steal` } });
        const error = (await caught(payments.refundPayment('pay_1'))) as PaymentsApiError;
        expect([error.code, error.httpStatus]).toEqual(['UNEXPECTED_REDIRECT', 302]);
        expect(other.requests).toHaveLength(0);
        expect(fake.requests).toHaveLength(1);
      } finally {
        await other.close();
      }
    });
  });

  describe('timeouts, retries and refused connections', () => {
    it('a POST that hangs past timeoutMs: TIMEOUT, may have been processed, sent once', async () => {
      fake.always(PATHS.refund, { hang: true });
      const error = (await caught(payments.refundPayment('pay_1'))) as PaymentsConnectionError;
      expect(error).toBeInstanceOf(PaymentsConnectionError);
      expect([error.code, error.mayHaveBeenProcessed, error.attempts]).toEqual(['TIMEOUT', true, 1]);
      expect(fake.requests).toHaveLength(1);
    });

    it('a POST whose connection is reset after sending: CONNECTION_FAILED, may have been processed, sent once', async () => {
      fake.always(PATHS.generate, { destroy: true });
      const error = (await caught(payments.generatePayment({ amount: '5' }))) as PaymentsConnectionError;
      expect([error.code, error.mayHaveBeenProcessed, error.attempts]).toEqual(['CONNECTION_FAILED', true, 1]);
      expect(fake.requests).toHaveLength(1);
    });

    it('a POST answered 503 is not retried', async () => {
      fake.always(PATHS.refund, { status: 503, body: '<html>busy</html>' });
      await caught(payments.refundPayment('pay_1'));
      expect(fake.requests).toHaveLength(1);
    });

    it('a GET that hangs is retried up to maxRetries, then TIMEOUT (a read is never "processed")', async () => {
      fake.always(PATHS.bindings, { hang: true });
      const error = (await caught(payments.listBindings('c1'))) as PaymentsConnectionError;
      expect([error.code, error.mayHaveBeenProcessed, error.attempts]).toEqual(['TIMEOUT', false, 3]);
      expect(fake.requests).toHaveLength(3);
    });

    it('a GET answered 503 then 429 then 200 succeeds on the third attempt', async () => {
      fake.reply(PATHS.bindings, { status: 503, body: 'busy' }, { status: 429, body: '' }, OK.bindings());
      const bindings = await payments.listBindings('client-1');
      expect(bindings).toHaveLength(1);
      expect(fake.requests).toHaveLength(3);
    });

    it('a refused connection is retried (nothing was sent) and reported as not processed', async () => {
      const port = await closedPort();
      const refused = await boot({
        baseUrl: `http://127.0.0.1:${port}`,
        successLink: 'https://a.example/s',
        failLink: 'https://a.example/f',
        maxRetries: 1,
      });
      try {
        const error = (await caught(
          refused.get(PaymentsService).generatePayment({ amount: '5' }),
        )) as PaymentsConnectionError;
        expect([error.code, error.mayHaveBeenProcessed, error.attempts, error.reason]).toEqual([
          'CONNECTION_FAILED',
          false,
          2,
          'ECONNREFUSED',
        ]);
        expectNoSecret(error);
      } finally {
        await refused.close();
      }
    });
  });

  describe('the private key never leaks', () => {
    it('is absent from every error kind and from the service itself', async () => {
      fake.reply(PATHS.refund, { status: 400, body: { status: 'error', message: 'no', code: 'REFUND_NOT_ALLOWED' } });
      fake.reply(PATHS.generate, { status: 502, body: '<html>bad gateway</html>' });
      fake.always(PATHS.cancel, { hang: true });
      const errors = [
        await caught(payments.refundPayment('pay_1')),
        await caught(payments.generatePayment({ amount: '9' })),
        await caught(payments.cancelPayment('pay_1')),
        await caught(payments.generatePayment({ amount: 'x' })),
      ];
      expect(errors.map((e) => e.code)).toEqual(['REFUND_NOT_ALLOWED', 'API_ERROR', 'TIMEOUT', 'VALIDATION_FAILED']);
      for (const error of errors) {
        expectNoSecret(error);
        expectNoSecret(error.message);
        expectNoSecret(error.stack);
      }
      expectNoSecret(payments);
      expect(inspect(payments)).toContain(PUBLIC_KEY);
    });
  });
});
