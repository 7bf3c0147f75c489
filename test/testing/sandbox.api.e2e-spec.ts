import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { identifier } from '../../lib/core/api/wire.values.js';
import { PaymentsClient } from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { authHeader, generate, getApi, ISO_UTC, postJson, rawRequest } from './sandbox.helpers.js';

const UNAUTHORIZED = '{"result":{"status":401,"message":"Unauthorized"}}';
const BAD_REQUEST = '{"result":{"status":400,"message":"Bad Request"}}';
const REFUND_NOT_ALLOWED = '{"status":"error","message":"Payment cannot be refunded","code":"REFUND_NOT_ALLOWED"}';
const UNKNOWN_PAYMENT =
  '{"status":"error","message":"Unknown payment: the sandbox has no payment with this id","code":"PAYMENT_NOT_FOUND"}';
const CANCELLATION_FAILED =
  '{"status":"error","message":"Pre-auth payment cannot be cancelled","code":"CANCELLATION_FAILED"}';
const PAYMENT_ID_REQUIRED = '{"status":"error","message":"payment_id is required","code":"BAD_REQUEST"}';
const INVALID_CLIENT_ID = '{"result":{"status":400,"message":"Invalid client_id"}}';

describe('PaymentsSandbox API', () => {
  let sandbox: PaymentsSandbox;
  let clock = Date.parse('2030-01-02T03:04:05.678Z');

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start({ now: () => clock });
  });
  afterAll(() => sandbox.close());
  beforeEach(() => sandbox.clearRequests());

  describe('authentication', () => {
    const body = JSON.stringify({
      amount: '1000',
      success_link: 'https://a.example/ok',
      fail_link: 'https://a.example/ko',
    });

    it('refuses a request without Authorization with 401 in the nested shape', async () => {
      const res = await rawRequest(`${sandbox.url}/api/v2/generate_payment`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.text).toBe(UNAUTHORIZED);
      expect(sandbox.payments()).toHaveLength(0);
    });

    it.each([
      ['a wrong private key', 'Bearer sandbox_public_key:wrong'],
      ['a wrong public key', 'Bearer wrong:sandbox_private_key'],
      ['no Bearer scheme', 'sandbox_public_key:sandbox_private_key'],
      ['a lower-case scheme', 'bearer sandbox_public_key:sandbox_private_key'],
      ['two spaces', 'Bearer  sandbox_public_key:sandbox_private_key'],
      ['trailing text', 'Bearer sandbox_public_key:sandbox_private_key:x'],
    ])('refuses %s with 401', async (_label, authorization) => {
      const res = await rawRequest(`${sandbox.url}/api/v2/generate_payment`, {
        method: 'POST',
        headers: { Authorization: authorization, 'Content-Type': 'application/json' },
        body,
      });
      expect(res.status).toBe(401);
      expect(res.text).toBe(UNAUTHORIZED);
    });

    it('checks credentials on GET endpoints and unknown paths too', async () => {
      expect((await rawRequest(`${sandbox.url}/api/v2/bindings/list?client_id=c1`)).text).toBe(UNAUTHORIZED);
      expect((await rawRequest(`${sandbox.url}/api/v2/nope`)).status).toBe(401);
    });

    it('accepts the exact header and honours custom keys', async () => {
      const custom = await PaymentsSandbox.start({ publicKey: 'pk_1', privateKey: 'sk_2' });
      try {
        const ok = await getApi(custom, '/api/v2/bindings/list?client_id=c1', { Authorization: 'Bearer pk_1:sk_2' });
        expect(ok.status).toBe(200);
        const defaultKeys = await getApi(custom, '/api/v2/bindings/list?client_id=c1', {
          Authorization: 'Bearer sandbox_public_key:sandbox_private_key',
        });
        expect(defaultKeys.status).toBe(401);
      } finally {
        await custom.close();
      }
    });
  });

  describe('POST /api/v2/generate_payment', () => {
    it('creates a pending payment and answers the spec shape', async () => {
      const res = await postJson(sandbox, '/api/v2/generate_payment', {
        amount: '12500',
        success_link: 'https://shop.example/ok?order=1',
        fail_link: 'https://shop.example/ko',
        webhook: 'https://shop.example/hook?token=abc',
        developer_tracking_id: 'order-42',
        session_timeout_secs: 600,
        accept_card: true,
        image_url: 'https://shop.example/logo.png',
        unknown_field: 'ignored',
      });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const body = JSON.parse(res.text);
      const id: string = body.result.payment_id;
      expect(id).toMatch(/^pay_[0-9a-f]{24}$/);
      expect(res.text).toBe(
        JSON.stringify({
          result: {
            success: true,
            payment_id: id,
            link: `${sandbox.url}/checkout/sandbox-merchant/${id}`,
            developer_tracking_id: 'order-42',
          },
          name: 'Payment Service Sandbox',
          code: 0,
          version: 'v2',
        }),
      );
      expect(sandbox.getPayment(id)).toEqual({
        paymentId: id,
        kind: 'standard',
        state: 'pending',
        amount: '12500',
        developerTrackingId: 'order-42',
        successLink: 'https://shop.example/ok?order=1',
        failLink: 'https://shop.example/ko',
        webhook: 'https://shop.example/hook?token=abc',
        imageUrl: 'https://shop.example/logo.png',
        acceptCard: true,
        sessionTimeoutSecs: 600,
        link: `${sandbox.url}/checkout/sandbox-merchant/${id}`,
        orderNumber: expect.stringMatching(/^[0-9]+$/),
        createdAt: '2030-01-02T03:04:05.678Z',
        expiresAt: '2030-01-02T03:14:05.678Z',
      });
      expect(Object.isFrozen(sandbox.getPayment(id))).toBe(true);
    });

    it('omits developer_tracking_id when none was sent and applies the spec defaults', async () => {
      const res = await postJson(sandbox, '/api/v2/generate_payment', {
        amount: '1',
        success_link: 'http://localhost/ok',
        fail_link: 'http://localhost/ko',
      });
      expect(res.status).toBe(200);
      const { result } = JSON.parse(res.text);
      expect(Object.keys(result)).toEqual(['success', 'payment_id', 'link']);
      const payment = sandbox.getPayment(result.payment_id);
      expect(payment?.acceptCard).toBe(false);
      expect(payment?.sessionTimeoutSecs).toBe(1200);
      expect(payment?.webhook).toBeUndefined();
    });

    it('gives every payment a unique id', async () => {
      const ids = await Promise.all(Array.from({ length: 20 }, () => generate(sandbox).then((r) => r.payment_id)));
      expect(new Set(ids).size).toBe(20);
    });

    it('normalises leading zeros of the amount', async () => {
      const { payment_id } = await generate(sandbox, { amount: '0012500' });
      expect(sandbox.getPayment(payment_id)?.amount).toBe('12500');
    });

    const base = { amount: '12500', success_link: 'https://shop.example/ok', fail_link: 'https://shop.example/ko' };
    it.each<[string, Record<string, unknown>]>([
      ['amount as a negative JSON number', { ...base, amount: -1 }],
      ['amount as a fractional JSON number', { ...base, amount: 12.5 }],
      ['amount as JSON zero', { ...base, amount: 0 }],
      ['amount zero', { ...base, amount: '0' }],
      ['amount with decimals', { ...base, amount: '12.5' }],
      ['amount negative', { ...base, amount: '-1' }],
      ['amount empty', { ...base, amount: '' }],
      ['amount with non-ASCII digits', { ...base, amount: '١٢' }],
      ['amount missing', { success_link: base.success_link, fail_link: base.fail_link }],
      ['success_link missing', { amount: '1', fail_link: base.fail_link }],
      ['fail_link missing', { amount: '1', success_link: base.success_link }],
      ['success_link relative', { ...base, success_link: '/ok' }],
      ['fail_link not http', { ...base, fail_link: 'ftp://shop.example/ko' }],
      ['webhook not a URL', { ...base, webhook: 'not a url' }],
      ['webhook null', { ...base, webhook: null }],
      ['image_url javascript:', { ...base, image_url: 'javascript:alert(1)' }],
      ['developer_tracking_id a number', { ...base, developer_tracking_id: 42 }],
      ['session_timeout_secs zero', { ...base, session_timeout_secs: 0 }],
      ['session_timeout_secs fractional', { ...base, session_timeout_secs: 1.5 }],
      ['session_timeout_secs a string', { ...base, session_timeout_secs: '60' }],
      ['accept_card a string', { ...base, accept_card: 'true' }],
    ])('refuses %s with 400 Bad Request', async (_label, body) => {
      const before = sandbox.payments().length;
      const res = await postJson(sandbox, '/api/v2/generate_payment', body);
      expect(res.status).toBe(400);
      expect(res.text).toBe(BAD_REQUEST);
      expect(sandbox.payments()).toHaveLength(before);
    });

    it('refuses a wrong Content-Type, bad JSON and non-object bodies in the nested shape', async () => {
      const json = JSON.stringify(base);
      const wrongType = await postJson(sandbox, '/api/v2/generate_payment', json, { 'Content-Type': 'text/plain' });
      expect([wrongType.status, wrongType.text]).toEqual([400, BAD_REQUEST]);
      const noType = await rawRequest(`${sandbox.url}/api/v2/generate_payment`, {
        method: 'POST',
        headers: { Authorization: authHeader(sandbox) },
        body: json,
      });
      expect([noType.status, noType.text]).toEqual([400, BAD_REQUEST]);
      for (const bad of ['{"amount":', '[]', 'null', '"x"', '']) {
        const res = await postJson(sandbox, '/api/v2/generate_payment', bad);
        expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
      }
    });

    it('accepts a charset parameter on the Content-Type', async () => {
      const res = await postJson(sandbox, '/api/v2/generate_payment', base, {
        'Content-Type': 'Application/JSON; charset=utf-8',
      });
      expect(res.status).toBe(200);
    });

    it('answers 405 to a GET, with Allow', async () => {
      const res = await getApi(sandbox, '/api/v2/generate_payment');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.text).toBe('{"result":{"status":405,"message":"Method Not Allowed"}}');
    });
  });

  describe('POST /api/v2/refund_payment', () => {
    it('refunds a paid payment once, in millimes, then refuses', async () => {
      const { payment_id } = await generate(sandbox, { amount: '12500' });
      await sandbox.completePayment(payment_id);
      clock += 60_000;
      const res = await postJson(sandbox, '/api/v2/refund_payment', { payment_id });
      expect(res.status).toBe(200);
      const body = JSON.parse(res.text);
      expect(body.result.refund_id).toMatch(/^ref_[0-9a-f]{24}$/);
      expect(res.text).toBe(
        JSON.stringify({
          result: {
            refund_id: body.result.refund_id,
            payment_id,
            amount: '12500',
            status: 'success',
            refunded_at: new Date(clock).toISOString(),
          },
          status: 'success',
        }),
      );
      expect(body.result.refunded_at).toMatch(ISO_UTC);
      expect(sandbox.getPayment(payment_id)).toMatchObject({
        state: 'refunded',
        refundId: body.result.refund_id,
        refundedAt: body.result.refunded_at,
      });

      const again = await postJson(sandbox, '/api/v2/refund_payment', { payment_id });
      expect([again.status, again.text]).toEqual([400, REFUND_NOT_ALLOWED]);
    });

    it('refunds a captured pre-authorization once, for the captured amount (the docs are silent: the sandbox choice)', async () => {
      const payment_id = await sandbox.createPreauthorizedPayment({ amount: '20000' });
      expect((await postJson(sandbox, '/api/v2/confirm_payment', { payment_id, amount: '15000' })).status).toBe(200);
      const res = await postJson(sandbox, '/api/v2/refund_payment', { payment_id });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toMatchObject({
        result: { payment_id, amount: '15000', status: 'success' },
        status: 'success',
      });
      expect(sandbox.getPayment(payment_id)).toMatchObject({ state: 'refunded', capturedAmount: '15000' });
      const again = await postJson(sandbox, '/api/v2/refund_payment', { payment_id });
      expect([again.status, again.text]).toEqual([400, REFUND_NOT_ALLOWED]);
    });

    it('refuses pending, failed and pre-authorized (held, not captured) payments', async () => {
      const pending = (await generate(sandbox)).payment_id;
      const failed = (await generate(sandbox)).payment_id;
      await sandbox.failPayment(failed);
      const preauth = await sandbox.createPreauthorizedPayment({ amount: '5000' });
      for (const payment_id of [pending, failed, preauth]) {
        const res = await postJson(sandbox, '/api/v2/refund_payment', { payment_id });
        expect([res.status, res.text]).toEqual([400, REFUND_NOT_ALLOWED]);
      }
      expect(sandbox.getPayment(pending)?.state).toBe('pending');
      expect(sandbox.getPayment(preauth)?.state).toBe('preauthorized');
    });

    it('answers BAD_REQUEST for a missing, empty or non-string payment_id', async () => {
      for (const body of [{}, { payment_id: '' }, { payment_id: 42 }, { payment_id: null }]) {
        const res = await postJson(sandbox, '/api/v2/refund_payment', body);
        expect([res.status, res.text]).toEqual([400, PAYMENT_ID_REQUIRED]);
      }
    });

    it('answers a wrong Content-Type and bad JSON in the flat shape', async () => {
      const wrongType = await postJson(sandbox, '/api/v2/refund_payment', '{"payment_id":"x"}', {
        'Content-Type': 'application/x-www-form-urlencoded',
      });
      expect([wrongType.status, wrongType.text]).toEqual([
        400,
        '{"status":"error","message":"Content-Type must be application/json","code":"BAD_REQUEST"}',
      ]);
      const badJson = await postJson(sandbox, '/api/v2/refund_payment', '{nope');
      expect([badJson.status, badJson.text]).toEqual([
        400,
        '{"status":"error","message":"Request body must be a JSON object","code":"BAD_REQUEST"}',
      ]);
    });

    it('answers 405 in the flat shape to a GET', async () => {
      const res = await getApi(sandbox, '/api/v2/refund_payment');
      expect([res.status, res.text]).toEqual([
        405,
        '{"status":"error","message":"Method Not Allowed","code":"METHOD_NOT_ALLOWED"}',
      ]);
    });
  });

  describe('POST /api/v2/cancel_payment', () => {
    it('cancels a pre-authorized payment once, then refuses', async () => {
      const payment_id = await sandbox.createPreauthorizedPayment({
        amount: '7000',
        developerTrackingId: 't-1',
        clientId: 'client-1',
      });
      expect(payment_id).toMatch(/^pay_[0-9a-f]{24}$/);
      expect(sandbox.getPayment(payment_id)).toMatchObject({
        kind: 'preauthorized',
        state: 'preauthorized',
        amount: '7000',
        developerTrackingId: 't-1',
        clientId: 'client-1',
      });
      const res = await postJson(sandbox, '/api/v2/cancel_payment', { payment_id });
      expect(res.status).toBe(200);
      expect(res.text).toBe(
        JSON.stringify({
          result: { payment_id, status: 'cancelled', cancelled_at: new Date(clock).toISOString() },
          status: 'success',
        }),
      );
      expect(sandbox.getPayment(payment_id)?.state).toBe('cancelled');

      const again = await postJson(sandbox, '/api/v2/cancel_payment', { payment_id });
      expect([again.status, again.text]).toEqual([400, CANCELLATION_FAILED]);
    });

    it('refuses standard payments (pending or paid)', async () => {
      const pending = (await generate(sandbox)).payment_id;
      const paid = (await generate(sandbox)).payment_id;
      await sandbox.completePayment(paid);
      for (const payment_id of [pending, paid]) {
        const res = await postJson(sandbox, '/api/v2/cancel_payment', { payment_id });
        expect([res.status, res.text]).toEqual([400, CANCELLATION_FAILED]);
      }
      expect(sandbox.getPayment(paid)?.state).toBe('paid');
    });

    it('answers BAD_REQUEST for a missing payment_id', async () => {
      const res = await postJson(sandbox, '/api/v2/cancel_payment', { id: 'x' });
      expect([res.status, res.text]).toEqual([400, PAYMENT_ID_REQUIRED]);
    });

    it('refuses an invalid pre-authorization amount', async () => {
      await expect(sandbox.createPreauthorizedPayment({ amount: '1.5' })).rejects.toThrow(TypeError);
      await expect(sandbox.createPreauthorizedPayment({ amount: '0' })).rejects.toThrow(/amount/);
    });
  });

  describe('an operation on a payment the sandbox does not know', () => {
    it('refund, cancel and confirm answer 404 PAYMENT_NOT_FOUND "Unknown payment", not a refusal blaming its state', async () => {
      for (const path of ['/api/v2/refund_payment', '/api/v2/cancel_payment', '/api/v2/confirm_payment']) {
        const res = await postJson(sandbox, path, { payment_id: 'pay_unknown' });
        expect([path, res.status, res.text]).toEqual([path, 404, UNKNOWN_PAYMENT]);
      }
    });

    it('the plugin surfaces it as such: its error says "Unknown payment"', async () => {
      const client = new PaymentsClient(sandbox.options({ reconciliation: { enabled: false }, maxRetries: 0 }));
      try {
        for (const call of [
          () => client.refundPayment('pay_unknown'),
          () => client.capturePayment('pay_unknown'),
          () => client.cancelPayment('pay_unknown'),
        ])
          await expect(call()).rejects.toThrow(/Unknown payment: the sandbox has no payment with this id/);
      } finally {
        await client.close();
      }
    });
  });

  describe('GET /api/v2/bindings/list', () => {
    it('lists the bindings of one client, oldest first', async () => {
      const first = sandbox.addBinding({ clientId: 'user@shop.example', cardLastFour: '4242', cardBrand: 'VISA' });
      const second = sandbox.addBinding({
        clientId: 'user@shop.example',
        cardLastFour: '0005',
        cardBrand: 'MASTERCARD',
        status: 'expired',
      });
      sandbox.addBinding({ clientId: 'other', cardLastFour: '1111', cardBrand: 'VISA' });
      expect(first).toEqual({
        binding_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        client_id: 'user@shop.example',
        card_last_four: '4242',
        card_brand: 'VISA',
        status: 'active',
        created_at: new Date(clock).toISOString(),
      });
      expect(second.binding_id).not.toBe(first.binding_id);

      const res = await getApi(sandbox, '/api/v2/bindings/list?client_id=user%40shop.example');
      expect(res.status).toBe(200);
      expect(res.text).toBe(
        JSON.stringify({ result: { success: true, bindings: [first, second] }, status: 'success' }),
      );
    });

    it('answers an empty list for an unknown client', async () => {
      const res = await getApi(sandbox, '/api/v2/bindings/list?client_id=nobody');
      expect([res.status, res.text]).toEqual([200, '{"result":{"success":true,"bindings":[]},"status":"success"}']);
    });

    // The service documents no rule for client_id: the sandbox takes what the plugin sends (its
    // identifier rule), so it refuses only what the plugin refuses before sending.
    it.each([
      ['missing', ''],
      ['empty', '?client_id='],
      ['blank', '?client_id=%20%20'],
      ['of 257 characters', `?client_id=${'a'.repeat(257)}`],
      ['with a line break', '?client_id=a%0Ab'],
      ['with a NUL', '?client_id=a%00b'],
      ['repeated', '?client_id=a&client_id=b'],
    ])('refuses client_id %s', async (_label, query) => {
      const res = await getApi(sandbox, `/api/v2/bindings/list${query}`);
      expect([res.status, res.text]).toEqual([400, INVALID_CLIENT_ID]);
    });

    it.each([
      ['of 256 characters', 'a'.repeat(256)],
      ['with a space and a slash', 'a b/c'],
      ['with URL delimiters', 'x&y=z?#%'],
      ['in any script, astral characters included', 'ü-客户-😀'],
    ])('accepts client_id %s', async (_label, clientId) => {
      const res = await getApi(sandbox, `/api/v2/bindings/list?client_id=${encodeURIComponent(clientId)}`);
      expect([res.status, res.text]).toEqual([200, '{"result":{"success":true,"bindings":[]},"status":"success"}']);
    });

    it('never refuses a client id the plugin sends (random identifiers through listBindings and generatePayment)', async () => {
      const client = new PaymentsClient({ ...sandbox.options(), reconciliation: { enabled: false }, maxRetries: 0 });
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.string({ unit: 'binary', minLength: 1, maxLength: 256 }).filter((id) => identifier(id) === undefined),
            async (clientId) => {
              await expect(client.listBindings(clientId)).resolves.toEqual([]);
              await expect(client.generatePayment({ amount: '1000', clientId })).resolves.toMatchObject({
                paymentId: expect.any(String),
              });
            },
          ),
          { numRuns: 150 },
        );
      } finally {
        await client.close();
      }
    });

    it('refuses addBinding with a client id the list would refuse', () => {
      expect(() => sandbox.addBinding({ clientId: ' ', cardLastFour: '1', cardBrand: 'VISA' })).toThrow(TypeError);
      expect(() => sandbox.addBinding({ clientId: 'a\nb', cardLastFour: '1', cardBrand: 'VISA' })).toThrow(TypeError);
      expect(sandbox.addBinding({ clientId: 'a b', cardLastFour: '1', cardBrand: 'VISA' }).client_id).toBe('a b');
    });
  });

  describe('other paths and limits', () => {
    it('answers 404 JSON on an unknown API path', async () => {
      const res = await getApi(sandbox, '/api/v2/payments/123');
      expect([res.status, res.text]).toEqual([404, '{"result":{"status":404,"message":"Not Found"}}']);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    });

    it('answers 413 to a body over 1 MiB and still handles 1 MiB', async () => {
      const big = await postJson(sandbox, '/api/v2/generate_payment', `"${'x'.repeat(1024 * 1024)}"`);
      expect([big.status, big.text]).toEqual([413, '{"result":{"status":413,"message":"Payload Too Large"}}']);
      const limit = JSON.stringify({
        ...{ amount: '1', success_link: 'https://a.example/ok', fail_link: 'https://a.example/ko' },
        pad: '',
      });
      const exact = await postJson(
        sandbox,
        '/api/v2/generate_payment',
        limit.replace('"pad":""', `"pad":"${'y'.repeat(1024 * 1024 - limit.length)}"`),
      );
      expect(exact.status).toBe(200);
    });

    it('serves its own success and failure pages, and 404 HTML elsewhere', async () => {
      const ok = await rawRequest(sandbox.options().successLink);
      expect(ok.status).toBe(200);
      expect(ok.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(ok.text).toContain('Payment successful');
      const ko = await rawRequest(sandbox.options().failLink);
      expect(ko.status).toBe(200);
      expect(ko.text).toContain('Payment failed');
      const missing = await rawRequest(`${sandbox.url}/nothing-here`);
      expect(missing.status).toBe(404);
      expect(missing.headers['content-type']).toBe('text/html; charset=utf-8');
    });

    it('lists payments on its index page', async () => {
      const { payment_id } = await generate(sandbox, { amount: '2500' });
      const res = await rawRequest(`${sandbox.url}/`);
      expect(res.status).toBe(200);
      expect(res.text).toContain(
        `<a href="/checkout/sandbox-merchant/${payment_id}">${payment_id}: 2.500 TND, pending</a>`,
      );
    });
  });

  describe('requests log', () => {
    it('records every API request with method, path, query, headers and raw body', async () => {
      const raw = '{"payment_id": "pay_x"}';
      await postJson(sandbox, '/api/v2/refund_payment', raw);
      await getApi(sandbox, '/api/v2/bindings/list?client_id=c1&x=1&x=2');
      await rawRequest(`${sandbox.url}/api/v2/nope`);
      await rawRequest(`${sandbox.url}/sandbox/success`);
      expect(sandbox.requests).toHaveLength(3);
      expect(sandbox.requests[0]).toEqual({
        method: 'POST',
        path: '/api/v2/refund_payment',
        query: {},
        url: '/api/v2/refund_payment',
        headers: expect.objectContaining({
          authorization: 'Bearer sandbox_public_key:[redacted]',
          'content-type': 'application/json',
          'content-length': String(raw.length),
        }),
        authorized: true,
        body: raw,
      });
      expect(sandbox.requests[1]).toMatchObject({
        method: 'GET',
        path: '/api/v2/bindings/list',
        query: { client_id: 'c1', x: ['1', '2'] },
        body: '',
      });
      expect(sandbox.requests[2]).toMatchObject({
        method: 'GET',
        path: '/api/v2/nope',
        authorized: false,
        headers: expect.not.objectContaining({ authorization: expect.anything() }),
      });
    });

    it('never keeps the private key in the log, right or wrong', async () => {
      const own = await PaymentsSandbox.start({ privateKey: 'sk_secret_value_1' });
      try {
        await getApi(own, '/api/v2/bindings/list?client_id=c1');
        await getApi(own, '/api/v2/bindings/list?client_id=c1', {
          Authorization: 'Bearer sandbox_public_key:sk_wrong_value_2',
        });
        await getApi(own, '/api/v2/bindings/list?client_id=c1', { Authorization: 'sk_bare_value_3' });
        expect(own.requests.map((r) => [r.headers.authorization, r.authorized])).toEqual([
          ['Bearer sandbox_public_key:[redacted]', true],
          ['Bearer sandbox_public_key:[redacted]', false],
          ['[redacted]', false],
        ]);
        expect(JSON.stringify(own.requests)).not.toMatch(/sk_secret_value_1|sk_wrong_value_2|sk_bare_value_3/);
      } finally {
        await own.close();
      }
    });

    it('empties in place on clearRequests()', async () => {
      const log = sandbox.requests;
      await getApi(sandbox, '/api/v2/bindings/list?client_id=c1');
      expect(log).toHaveLength(1);
      sandbox.clearRequests();
      expect(log).toHaveLength(0);
      expect(sandbox.requests).toBe(log);
    });
  });
});
