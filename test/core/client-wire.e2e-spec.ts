import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { SERVICE_PATHS } from '../../lib/core/api/wire.mapper.js';
import {
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsValidationError,
} from '../../lib/core/api/payments.errors.js';
import { FakeService } from '../support/fake-service.js';
import { generateAnswer, verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const PRIVATE_KEY = 'sk_wire_0123456789_secret';
const LINKS = { successLink: 'https://shop.example/ok', failLink: 'https://shop.example/ko' };

describe('the wire of the operations the public docs add (docs/service-facts.md §1, §4, §5)', () => {
  let fake: FakeService;
  let client: PaymentsClient;

  beforeAll(async () => {
    fake = await FakeService.start();
    client = new PaymentsClient({
      publicKey: 'pk_wire',
      privateKey: PRIVATE_KEY,
      baseUrl: fake.url,
      maxRetries: 0,
      reconciliation: { enabled: false },
      ...LINKS,
    });
  });
  afterEach(() => fake.reset());
  afterAll(async () => {
    await client.close();
    await fake.close();
  });

  const last = () => fake.requests[fake.requests.length - 1];

  describe('verifyPayment', () => {
    it('GETs /api/v2/verify_payment/{id} with the Bearer header and no body', async () => {
      fake.reply(verifyPath('pay_1'), {
        status: 200,
        body: verifyAnswer({ status: 'SUCCESS', amount: 1250, trackingId: 'order-1' }),
      });
      const verified = await client.verifyPayment('pay_1');
      expect(last()).toMatchObject({ method: 'GET', path: '/api/v2/verify_payment/pay_1', body: '' });
      expect(last().headers.authorization).toBe(`Bearer pk_wire:${PRIVATE_KEY}`);
      expect(last().headers['content-type']).toBeUndefined();
      expect(verified).toMatchObject({
        paymentId: 'pay_1',
        status: 'SUCCESS',
        amount: '1250',
        developerTrackingId: 'order-1',
        type: 'card',
      });
      expect(verified.details).toMatchObject({ pan: '450921**1119' });
    });

    it('percent-encodes the payment id into the path', async () => {
      fake.reply(verifyPath('a:b c'), { status: 200, body: verifyAnswer({ status: 'PENDING' }) });
      await client.verifyPayment('a:b c');
      expect(last().path).toBe('/api/v2/verify_payment/a%3Ab%20c');
    });

    it.each(['SUCCESS', 'PENDING', 'EXPIRED', 'FAILURE', 'PREAUTH_SUCCESS', 'SYSTEM_FAILURE', 'REVERSED_BY_BANK'])(
      'keeps the status %s exactly as sent',
      async (status) => {
        fake.reply(verifyPath('pay_s'), { status: 200, body: verifyAnswer({ status }) });
        await expect(client.verifyPayment('pay_s')).resolves.toMatchObject({ status });
      },
    );

    it('accepts the amount as a digit string too', async () => {
      const body = verifyAnswer({ status: 'SUCCESS' });
      (body.result as Record<string, unknown>).amount = '0012500';
      fake.reply(verifyPath('pay_str'), { status: 200, body });
      await expect(client.verifyPayment('pay_str')).resolves.toMatchObject({ amount: '12500' });
    });

    it('refuses an answer whose top-level success is not true, whatever result says', async () => {
      const body = { ...verifyAnswer({ status: 'SUCCESS' }), success: false };
      fake.reply(verifyPath('pay_f'), { status: 200, body });
      await expect(client.verifyPayment('pay_f')).rejects.toBeInstanceOf(PaymentsApiError);
    });

    it.each([
      ['no status', { success: true, result: { amount: 1 } }],
      ['a fractional amount', { success: true, result: { amount: 12.5, status: 'SUCCESS' } }],
      ['a negative amount', { success: true, result: { amount: -1, status: 'SUCCESS' } }],
    ])('answers INVALID_RESPONSE for %s', async (_name, body) => {
      fake.reply(verifyPath('pay_bad'), { status: 200, body });
      await expect(client.verifyPayment('pay_bad')).rejects.toMatchObject({ code: 'INVALID_RESPONSE' });
    });

    it('maps 404 to NOT_FOUND and 429 to RATE_LIMITED with the Retry-After', async () => {
      fake.reply(verifyPath('pay_404'), {
        status: 404,
        body: { result: { status: 404, message: 'Payment not found' } },
      });
      await expect(client.verifyPayment('pay_404')).rejects.toMatchObject({
        code: 'NOT_FOUND',
        httpStatus: 404,
        serviceMessage: 'Payment not found',
      });
      fake.reply(verifyPath('pay_429'), {
        status: 429,
        body: { result: { status: 429, message: 'Too Many Requests' } },
        headers: { 'retry-after': '7' },
      });
      await expect(client.verifyPayment('pay_429')).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterSecs: 7 });
    });

    it('refuses a malformed payment id before any request', async () => {
      await expect(client.verifyPayment('a\r\nb')).rejects.toBeInstanceOf(PaymentsValidationError);
      expect(fake.requests).toHaveLength(0);
    });
  });

  describe('capturePayment', () => {
    it('POSTs payment_id only when capturing everything', async () => {
      fake.reply(SERVICE_PATHS.capture, {
        status: 200,
        body: {
          result: { payment_id: 'pre_1', status: 'confirmed', amount: '20000', confirmed_at: '2026-11-22T10:00:00Z' },
          status: 'success',
        },
      });
      const capture = await client.capturePayment('pre_1');
      expect(last()).toMatchObject({ method: 'POST', path: '/api/v2/confirm_payment' });
      expect(last().headers['content-type']).toBe('application/json');
      expect(JSON.parse(last().body)).toStrictEqual({ payment_id: 'pre_1' });
      expect(capture).toStrictEqual({
        paymentId: 'pre_1',
        status: 'confirmed',
        amount: '20000',
        capturedAt: '2026-11-22T10:00:00Z',
      });
    });

    it('sends a partial amount as a digit string', async () => {
      fake.reply(SERVICE_PATHS.capture, {
        status: 200,
        body: {
          result: { payment_id: 'pre_2', status: 'confirmed', amount: '5000', confirmed_at: 'x' },
          status: 'success',
        },
      });
      await client.capturePayment('pre_2', { amount: 5000 });
      expect(JSON.parse(last().body)).toStrictEqual({ payment_id: 'pre_2', amount: '5000' });
    });

    it('reads the older answer shape { result: { status: "SUCCESS" } }', async () => {
      fake.reply(SERVICE_PATHS.capture, { status: 200, body: { result: { status: 'SUCCESS' } } });
      await expect(client.capturePayment('pre_3')).resolves.toStrictEqual({ paymentId: 'pre_3', status: 'SUCCESS' });
    });

    it('maps the flat error shape to an error with the service code, and refuses dinars before sending', async () => {
      fake.reply(SERVICE_PATHS.capture, {
        status: 400,
        body: { status: 'error', message: 'cannot capture', code: 'CAPTURE_NOT_ALLOWED' },
      });
      await expect(client.capturePayment('pre_4')).rejects.toMatchObject({
        code: 'CAPTURE_NOT_ALLOWED',
        serviceMessage: 'cannot capture',
      });
      const before = fake.requests.length;
      await expect(client.capturePayment('pre_4', { amount: 12.5 })).rejects.toThrow(/toMillimes\('12.5'\)/);
      expect(fake.requests).toHaveLength(before);
    });
  });

  describe('identifiers the service supplies are checked with the identifier rule (INVALID_RESPONSE, never passed on)', () => {
    const BAD: Array<[string, unknown]> = [
      ['a line break', 'pay_1\r\nSet-Cookie: x=1'],
      ['a NUL', 'pay\u00001'],
      ['257 characters', 'p'.repeat(257)],
      ['a lone surrogate', 'pay_\ud800'],
      ['only spaces', '   '],
      ['an object', { $gt: '' }],
    ];
    const ok = {
      refund: (paymentId: unknown) => ({
        result: {
          refund_id: 'ref_1',
          payment_id: paymentId,
          amount: '12500',
          status: 'success',
          refunded_at: '2026-11-22T10:00:00Z',
        },
        status: 'success',
      }),
      cancel: (paymentId: unknown) => ({
        result: { payment_id: paymentId, status: 'cancelled', cancelled_at: '2026-11-22T10:00:00Z' },
        status: 'success',
      }),
      capture: (paymentId: unknown) => ({
        result: { payment_id: paymentId, status: 'confirmed', amount: '20000' },
        status: 'success',
      }),
      generate: (tracking: unknown) => ({
        result: {
          success: true,
          payment_id: 'pay_g',
          link: 'https://checkout.example/pay_g',
          developer_tracking_id: tracking,
        },
      }),
      verify: (field: 'developer_tracking_id' | 'type', value: unknown) => {
        const body = verifyAnswer({ status: 'SUCCESS' });
        (body.result as Record<string, unknown>)[field] = value;
        return body;
      },
    };
    const calls: Array<[string, (bad: unknown) => { path: string; body: unknown; call: () => Promise<unknown> }]> = [
      [
        'refund: payment_id',
        (bad) => ({ path: SERVICE_PATHS.refund, body: ok.refund(bad), call: () => client.refundPayment('pay_1') }),
      ],
      [
        'cancel: payment_id',
        (bad) => ({ path: SERVICE_PATHS.cancel, body: ok.cancel(bad), call: () => client.cancelPayment('pay_1') }),
      ],
      [
        'capture: payment_id',
        (bad) => ({ path: SERVICE_PATHS.capture, body: ok.capture(bad), call: () => client.capturePayment('pay_1') }),
      ],
      [
        'generate: developer_tracking_id',
        (bad) => ({
          path: SERVICE_PATHS.generate,
          body: ok.generate(bad),
          call: () => client.generatePayment({ amount: '100' }),
        }),
      ],
      [
        'verify: developer_tracking_id',
        (bad) => ({
          path: verifyPath('pay_v'),
          body: ok.verify('developer_tracking_id', bad),
          call: () => client.verifyPayment('pay_v'),
        }),
      ],
      [
        'verify: type',
        (bad) => ({
          path: verifyPath('pay_v'),
          body: ok.verify('type', bad),
          call: () => client.verifyPayment('pay_v'),
        }),
      ],
    ];
    const table = calls.flatMap(([where, make]) =>
      BAD.map(([what, value]) => [`${where} with ${what}`, make, value] as const),
    );

    it.each(table)('%s', async (_name, make, bad) => {
      const { path, body, call } = make(bad);
      fake.reply(path, { status: 200, body });
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsApiError);
      expect([(error as PaymentsApiError).code, (error as PaymentsApiError).httpStatus]).toEqual([
        'INVALID_RESPONSE',
        200,
      ]);
      expect((error as Error).message).toMatch(/malformed/);
    });

    it.each(calls)('%s: a well-formed value (also a number) is passed on', async (_name, make) => {
      const { path, body, call } = make(12345);
      fake.reply(path, { status: 200, body });
      await expect(call()).resolves.toBeDefined();
    });

    it('an absent optional id is fine: capture without payment_id, verify and generate without tracking id or type', async () => {
      fake.reply(SERVICE_PATHS.capture, { status: 200, body: ok.capture(undefined) });
      await expect(client.capturePayment('pre_9')).resolves.toMatchObject({ paymentId: 'pre_9' });
      fake.reply(verifyPath('pay_v'), { status: 200, body: ok.verify('type', null) });
      await expect(client.verifyPayment('pay_v')).resolves.not.toHaveProperty('type');
      fake.reply(verifyPath('pay_v'), { status: 200, body: ok.verify('developer_tracking_id', '') });
      await expect(client.verifyPayment('pay_v')).resolves.not.toHaveProperty('developerTrackingId');
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: ok.generate(undefined) });
      await expect(client.generatePayment({ amount: '100' })).resolves.toEqual({
        paymentId: 'pay_g',
        link: 'https://checkout.example/pay_g',
      });
    });
  });

  describe('generatePayment input', () => {
    it('refuses dinars before sending, with the message the operations guide quotes', async () => {
      const message = "looks like dinars: amounts are whole millimes, e.g. toMillimes('12.5')";
      const error = await client.generatePayment({ amount: '12.5' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect((error as PaymentsValidationError).fields).toEqual([{ field: 'amount', messages: [message] }]);
      expect(fake.requests).toHaveLength(0);
      expect(readFileSync(new URL('../../docs/operations-api.md', import.meta.url), 'utf8')).toContain(`"${message}"`);
    });
  });

  describe('generatePayment with the documented extras', () => {
    it('sends pre_authorization, client_id and destination as the docs show them', async () => {
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: generateAnswer('pay_g1') });
      await client.generatePayment({
        amount: '20000',
        preAuthorization: true,
        clientId: 'cust-1',
        destinations: [{ merchantId: 'm-2', amount: '5000' }],
      });
      expect(JSON.parse(last().body)).toStrictEqual({
        amount: '20000',
        ...{ success_link: LINKS.successLink, fail_link: LINKS.failLink },
        pre_authorization: true,
        client_id: 'cust-1',
        destination: [{ amount: 5000, destination: 'm-2' }],
      });
    });

    it("sends an order's body as its fingerprint reads it: the JSON of the wire body, in the table's order", async () => {
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: generateAnswer('pay_g3') });
      await client.generatePayment({ developerTrackingId: 'order-7', sessionTimeoutSecs: 600, amount: 1500 });
      expect(last().headers['content-type']).toBe('application/json');
      expect(last().body).toBe(
        `{"amount":"1500","success_link":"${LINKS.successLink}","fail_link":"${LINKS.failLink}",` +
          '"developer_tracking_id":"order-7","session_timeout_secs":600}',
      );
    });

    it('uses the configured name of the pre-authorization flag', async () => {
      const other = new PaymentsClient({
        publicKey: 'pk',
        privateKey: 'sk',
        baseUrl: fake.url,
        preAuthorizationFlag: 'pre_auth',
        reconciliation: { enabled: false },
        ...LINKS,
      });
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: generateAnswer('pay_g2') });
      await other.generatePayment({ amount: '1000', preAuthorization: true });
      await other.close();
      expect(JSON.parse(last().body)).toMatchObject({ pre_auth: true });
      expect(JSON.parse(last().body)).not.toHaveProperty('pre_authorization');
    });

    it('recognises a created payment without result.success (the shorter documented answer)', async () => {
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: generateAnswer('pay_min', { minimal: true }) });
      await expect(client.generatePayment({ amount: '1000' })).resolves.toStrictEqual({
        paymentId: 'pay_min',
        link: 'https://checkout.example.test/shop/pay_min',
      });
    });

    it.each([
      ['a javascript: link', { result: { success: true, payment_id: 'p', link: 'javascript:alert(1)' } }],
      [
        'a payment id with CR/LF',
        { result: { success: true, payment_id: 'p\r\nX-Evil: 1', link: 'https://c.example/p' } },
      ],
      ['no link', { result: { success: true, payment_id: 'p' } }],
    ])('refuses %s from the service as INVALID_RESPONSE', async (_name, body) => {
      fake.reply(SERVICE_PATHS.generate, { status: 200, body });
      await expect(client.generatePayment({ amount: '1000' })).rejects.toMatchObject({ code: 'INVALID_RESPONSE' });
    });

    it('queues the payment for reconciliation after its session', async () => {
      fake.reply(SERVICE_PATHS.generate, { status: 200, body: generateAnswer('pay_q') });
      await client.generatePayment({ amount: '1000', developerTrackingId: 'order-q', sessionTimeoutSecs: 300 });
      const pending = await client.store.findPending('pay_q');
      expect(pending).toMatchObject({ paymentId: 'pay_q', amount: '1000', developerTrackingId: 'order-q', checks: 0 });
      expect(Date.parse(pending?.sessionEndsAt ?? '') - Date.parse(pending?.createdAt ?? '')).toBe(300_000);
    });
  });

  describe('secrets in answers', () => {
    it('redacts the private key when the service echoes the Authorization header', async () => {
      fake.reply(verifyPath('pay_echo'), {
        status: 500,
        body: `<html>bad request: Authorization: Bearer pk_wire:${PRIVATE_KEY}</html>`,
      });
      const error = await client.verifyPayment('pay_echo').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsApiError);
      expect(JSON.stringify(error)).not.toContain(PRIVATE_KEY);
      expect((error as Error).message).not.toContain(PRIVATE_KEY);
      expect((error as Error).message).toContain('[redacted]');
    });

    it('says what to check on a 401', async () => {
      fake.reply(verifyPath('pay_401'), { status: 401, body: { result: { status: 401, message: 'Unauthorized' } } });
      const error = await client.verifyPayment('pay_401').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsAuthenticationError);
      expect((error as Error).message).toMatch(/check publicKey\/privateKey, and that baseUrl is the environment/);
    });
  });
});

describe('reconcilePayment and the verify budget', () => {
  it('answers a payment verified as pending moments ago from the record, without another verify call', async () => {
    const fake = await FakeService.start();
    const client = new PaymentsClient({
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: fake.url,
      maxRetries: 0,
      reconciliation: { enabled: false },
      ...LINKS,
    });
    client.setHandlers(outcomeHandlers(async () => undefined));
    try {
      fake.always(verifyPath('pay_p'), { status: 200, body: verifyAnswer({ status: 'PENDING' }) });
      const verifies = () => fake.requests.filter((r) => r.path === verifyPath('pay_p')).length;
      await expect(client.reconcilePayment('pay_p')).resolves.toMatchObject({
        outcome: 'pending',
        status: 'PENDING',
        handled: false,
      });
      expect(verifies()).toBe(1);
      for (let i = 0; i < 5; i++)
        await expect(client.reconcilePayment('pay_p')).resolves.toMatchObject({ outcome: 'pending' });
      expect(verifies()).toBe(1);
      fake.always(verifyPath('pay_p'), { status: 200, body: verifyAnswer({ status: 'SUCCESS' }) });
      // Once the record is old enough, the service is asked again.
      const record = await client.store.getOutcome('pay_p');
      await client.store.saveOutcome(
        { ...(record as NonNullable<typeof record>), updatedAt: new Date(Date.now() - 60_000).toISOString() },
        60_000,
      );
      await expect(client.reconcilePayment('pay_p')).resolves.toMatchObject({ outcome: 'confirmed', handled: true });
      expect(verifies()).toBe(2);
    } finally {
      await client.close();
      await fake.close();
    }
  });
});
