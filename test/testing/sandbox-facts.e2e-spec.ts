/**
 * One test per fact of docs/service-facts.md that the sandbox emulates, each named after its
 * section. Driven over HTTP only (node:http, exact paths, headers and bodies), as a client
 * written in another language would see the sandbox; the sandbox object is used only for what a
 * real service does by itself (the clock, the customer's click when no page is involved).
 */
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox, SANDBOX_VERIFY_STATUSES, type PaymentsSandboxOptions } from '../../lib/testing/index.js';
import { click, generate, getApi, ISO_UTC, postJson, rawRequest, verify, WebhookReceiver } from './sandbox.helpers.js';

const base = { amount: '12500', success_link: 'https://shop.example/ok', fail_link: 'https://shop.example/ko' };
const BAD_REQUEST = '{"result":{"status":400,"message":"Bad Request"}}';
const CAPTURE_NOT_ALLOWED = '{"status":"error","message":"Payment cannot be captured","code":"CAPTURE_NOT_ALLOWED"}';
const AMOUNT_EXCEEDS =
  '{"status":"error","message":"Amount exceeds the pre-authorized amount","code":"AMOUNT_EXCEEDS_AUTHORIZATION"}';

describe('PaymentsSandbox against docs/service-facts.md', () => {
  let receiver: WebhookReceiver;
  let clock = Date.parse('2031-03-04T05:06:07.089Z');
  const sandboxes: PaymentsSandbox[] = [];

  async function start(options: PaymentsSandboxOptions = {}): Promise<PaymentsSandbox> {
    const sandbox = await PaymentsSandbox.start({ now: () => clock, ...options });
    sandboxes.push(sandbox);
    return sandbox;
  }

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    await Promise.all(sandboxes.splice(0).map((s) => s.close()));
    receiver.received.length = 0;
    receiver.script.length = 0;
  });
  afterAll(() => receiver.close());

  /** Creates a payment and returns its id and link; fields override `base`. */
  async function create(
    sandbox: PaymentsSandbox,
    fields: Record<string, unknown> = {},
  ): Promise<{ id: string; link: string }> {
    const { payment_id, link } = await generate(sandbox, fields);
    return { id: payment_id, link };
  }

  describe('§1 verify_payment', () => {
    it('§1 verify: a paid payment answers the documented shape, key for key', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, {
        amount: '1250',
        developer_tracking_id: 'your_internal_tracking_id',
      });
      expect((await click(link, 'pay')).status).toBe(303);
      const res = await verify(sandbox, id);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.json).toEqual({
        success: true,
        result: {
          type: 'card',
          amount: 1250,
          status: 'SUCCESS',
          details: {
            order_number: expect.stringMatching(/^[0-9]+$/),
            name: 'SANDBOX CUSTOMER',
            pan: '450921**1119',
            payment_system: 'VISA',
            expiration: '202612',
            approval_code: expect.stringMatching(/^[0-9]{6}$/),
            currency: '788',
            phone_number: '',
            email: '',
            bank_country_code: '',
            destinations: [],
          },
          developer_tracking_id: 'your_internal_tracking_id',
        },
        status_code: 200,
        name: 'developers',
        code: 0,
        version: '2.0.0',
      });
      // Key order as on the page, so a byte-level fixture of the docs' example matches too.
      expect(Object.keys(res.json)).toEqual(['success', 'result', 'status_code', 'name', 'code', 'version']);
      expect(Object.keys(res.json.result)).toEqual(['type', 'amount', 'status', 'details', 'developer_tracking_id']);
    });

    it('§1 verify: amount is a JSON number of millimes, not a string', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox, { amount: '0012500' });
      const res = await verify(sandbox, id);
      expect(res.text).toContain('"amount":12500,');
      expect(typeof res.json.result.amount).toBe('number');
    });

    it('§1 verify: PENDING while the session is open, with empty card fields', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      const { json } = await verify(sandbox, id);
      expect(json.success).toBe(true);
      expect(json.result.status).toBe('PENDING');
      expect(json.result.details).toMatchObject({ name: '', pan: '', payment_system: '', approval_code: '' });
      expect(json.result).not.toHaveProperty('developer_tracking_id');
    });

    it('§1 verify: PENDING -> SUCCESS after Pay on the checkout page', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox);
      expect((await verify(sandbox, id)).json.result.status).toBe('PENDING');
      await click(link, 'pay');
      expect((await verify(sandbox, id)).json.result.status).toBe('SUCCESS');
    });

    it('§1 verify: SUCCESS after completePayment', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      await sandbox.completePayment(id);
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'SUCCESS', amount: 12500 });
    });

    it('§1 verify: FAILURE after Decline, details say why', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox);
      await click(link, 'decline');
      const { json } = await verify(sandbox, id);
      expect(json.success).toBe(true);
      expect(json.result.status).toBe('FAILURE');
      expect(json.result.details.reason).toBe('declined by the customer');
    });

    it('§1 verify: FAILURE after failPayment', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      await sandbox.failPayment(id);
      expect((await verify(sandbox, id)).json.result.status).toBe('FAILURE');
    });

    it('§1 verify: EXPIRED once session_timeout_secs have passed on the sandbox clock', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { session_timeout_secs: 30 });
      clock += 29_999;
      expect((await verify(sandbox, id)).json.result.status).toBe('PENDING');
      clock += 1;
      expect((await verify(sandbox, id)).json.result.status).toBe('EXPIRED');
      expect((await click(link, 'pay')).status).toBe(409);
      expect((await verify(sandbox, id)).json.result.status).toBe('EXPIRED');
    });

    it('§1 verify: EXPIRED after expirePayment, which sends no webhook', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox, { webhook: `${receiver.url}/wh` });
      const result = await sandbox.expirePayment(id);
      expect(result).toMatchObject({ status: 'EXPIRED', delivered: false, attempts: 0 });
      expect(result.payment).toMatchObject({ state: 'expired', expiredAt: new Date(clock).toISOString() });
      expect((await verify(sandbox, id)).json.result.status).toBe('EXPIRED');
      expect(receiver.received).toEqual([]);
      await expect(sandbox.expirePayment(id)).rejects.toThrow(
        `cannot expire payment ${id}: it is expired, not pending`,
      );
    });

    it('§1 verify: PREAUTH_SUCCESS for a paid pre-authorization, amount = held amount', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { amount: '40000', pre_auth: true });
      expect((await verify(sandbox, id)).json.result.status).toBe('PENDING');
      await click(link, 'pay');
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'PREAUTH_SUCCESS', amount: 40000 });
    });

    it('§1 verify: only documented status values ever come out', async () => {
      expect([...SANDBOX_VERIFY_STATUSES]).toEqual([
        'SUCCESS',
        'PENDING',
        'EXPIRED',
        'FAILURE',
        'PREAUTH_SUCCESS',
        'SYSTEM_FAILURE',
      ]);
      const sandbox = await start();
      const seen = new Set<string>();
      const ids = [
        (await create(sandbox)).id,
        (await create(sandbox)).id,
        (await create(sandbox)).id,
        (await create(sandbox, { pre_authorization: true })).id,
      ];
      await sandbox.completePayment(ids[0]);
      await sandbox.failPayment(ids[1]);
      await sandbox.expirePayment(ids[2]);
      await sandbox.completePayment(ids[3]);
      for (const id of ids) seen.add((await verify(sandbox, id)).json.result.status);
      expect([...seen].sort()).toEqual(['EXPIRED', 'FAILURE', 'PREAUTH_SUCCESS', 'SUCCESS']);
    });

    it('§1 verify: a refunded payment still verifies SUCCESS (the refund is its own record)', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      await sandbox.completePayment(id);
      expect((await postJson(sandbox, '/api/v2/refund_payment', { payment_id: id })).status).toBe(200);
      expect((await verify(sandbox, id)).json.result.status).toBe('SUCCESS');
    });

    it('§1 verify: a cancelled pre-authorization verifies EXPIRED (documented "no payment expected"; the real value is unknown)', async () => {
      const sandbox = await start();
      const id = await sandbox.createPreauthorizedPayment({ amount: '9000' });
      expect((await postJson(sandbox, '/api/v2/cancel_payment', { payment_id: id })).status).toBe(200);
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'EXPIRED', amount: 9000 });
    });

    it('§1 verify: an unknown payment id is 404 in the nested shape', async () => {
      const sandbox = await start();
      for (const id of ['pay_000000000000000000000000', 'x y', '%E0%A4%A']) {
        const res = await getApi(sandbox, `/api/v2/verify_payment/${id === 'x y' ? 'x%20y' : id}`);
        expect([res.status, res.text]).toEqual([404, '{"result":{"status":404,"message":"Payment not found"}}']);
      }
      const noId = await getApi(sandbox, '/api/v2/verify_payment');
      expect([noId.status, noId.text]).toEqual([404, '{"result":{"status":404,"message":"Not Found"}}']);
    });

    it('§1 verify: requires Authorization: Bearer <PUBLIC>:<PRIVATE> (401) and GET (405)', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      const path = `${sandbox.url}/api/v2/verify_payment/${id}`;
      for (const headers of [{}, { Authorization: 'Bearer sandbox_public_key:wrong' }] as Array<
        Record<string, string>
      >) {
        const res = await rawRequest(path, { headers });
        expect([res.status, res.text]).toEqual([401, '{"result":{"status":401,"message":"Unauthorized"}}']);
      }
      expect(sandbox.verifyCalls(id)).toBe(0);
      const post = await postJson(sandbox, `/api/v2/verify_payment/${id}`, {});
      expect([post.status, post.headers.allow, post.text]).toEqual([
        405,
        'GET',
        '{"result":{"status":405,"message":"Method Not Allowed"}}',
      ]);
    });

    it('§1 verify: the answer never echoes the Authorization header or the private key', async () => {
      const sandbox = await start({ privateKey: 'sk_must_not_leak_123' });
      const { id } = await create(sandbox);
      const answers = [await verify(sandbox, id), await verify(sandbox, 'pay_unknown')];
      for (const res of answers) {
        expect(res.text).not.toContain('sk_must_not_leak_123');
        expect(JSON.stringify(res.headers)).not.toContain('sk_must_not_leak_123');
      }
    });

    it('§1 verify: repeated calls get 429 with Retry-After once over verifyRateLimit, per payment id', async () => {
      const sandbox = await start({ verifyRateLimit: { max: 2, windowMs: 10_000 } });
      const a = (await create(sandbox)).id;
      const b = (await create(sandbox)).id;
      expect((await verify(sandbox, a)).status).toBe(200);
      clock += 4_000;
      expect((await verify(sandbox, a)).status).toBe(200);
      const limited = await verify(sandbox, a);
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toBe('6');
      expect(limited.text).toBe('{"result":{"status":429,"message":"Too Many Requests"}}');
      // Another payment id has its own window.
      expect((await verify(sandbox, b)).status).toBe(200);
      clock += 6_000;
      expect((await verify(sandbox, a)).status).toBe(200);
      expect([sandbox.verifyCalls(a), sandbox.verifyCalls(b), sandbox.verifyCalls()]).toEqual([4, 1, 5]);
    });

    it('§1 verify: setVerifyRateLimit changes the limit at run time; counts include 404s', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      sandbox.setVerifyRateLimit({ max: 1, windowMs: 60_000 });
      expect((await verify(sandbox, id)).status).toBe(200);
      expect((await verify(sandbox, id)).status).toBe(429);
      sandbox.setVerifyRateLimit(null);
      expect((await verify(sandbox, id)).status).toBe(200);
      expect((await verify(sandbox, 'pay_nope')).status).toBe(404);
      expect([sandbox.verifyCalls(id), sandbox.verifyCalls('pay_nope'), sandbox.verifyCalls()]).toEqual([3, 1, 4]);
      expect(() => sandbox.setVerifyRateLimit({ max: 1, windowMs: 0 })).toThrow(TypeError);
    });

    it('§1 verify: a fault on verify_payment/* answers SYSTEM_FAILURE-style bodies for every id', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox);
      const body = JSON.stringify({
        success: true,
        result: { type: 'card', amount: 12500, status: 'SYSTEM_FAILURE', details: {} },
      });
      sandbox.fault('/api/v2/verify_payment/*', { status: 200, body, times: 2 });
      expect((await verify(sandbox, id)).json.result.status).toBe('SYSTEM_FAILURE');
      expect((await verify(sandbox, 'pay_other')).text).toBe(body);
      expect((await verify(sandbox, id)).json.result.status).toBe('PENDING');
    });
  });

  describe('§2 webhooks', () => {
    const target = () => `${receiver.url}/hook?token=t.k`;

    it('§2 webhook: POST {payment_id, status} for success and for failure', async () => {
      const sandbox = await start();
      const paid = await create(sandbox, { webhook: target() });
      const declined = await create(sandbox, { webhook: target() });
      await click(paid.link, 'pay');
      await click(declined.link, 'decline');
      expect(receiver.received.map((r) => [r.method, r.headers['content-type'], JSON.parse(r.body)])).toEqual([
        ['POST', 'application/json', { payment_id: paid.id, status: 'SUCCESS' }],
        ['POST', 'application/json', { payment_id: declined.id, status: 'FAILURE' }],
      ]);
    });

    it('§2 webhook: a held pre-authorization is delivered as PREAUTH_SUCCESS', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { webhook: target(), pre_auth: true });
      await click(link, 'pay');
      expect(receiver.received.map((r) => r.body)).toEqual([
        JSON.stringify({ payment_id: id, status: 'PREAUTH_SUCCESS' }),
      ]);
    });

    it.each([
      ['append', (id: string) => `/hook?token=t.k&payment_id=${id}`],
      ['naive', (id: string) => `/hook?token=t.k?payment_id=${id}`],
      ['none', () => '/hook?token=t.k'],
    ] as const)('§2 webhook: POST with webhookPaymentIdInUrl %s', async (mode, expected) => {
      const sandbox = await start({ webhookPaymentIdInUrl: mode });
      const { id } = await create(sandbox, { webhook: target() });
      await sandbox.completePayment(id);
      expect(receiver.received.map((r) => [r.method, r.url, r.body])).toEqual([
        ['POST', expected(id), JSON.stringify({ payment_id: id, status: 'SUCCESS' })],
      ]);
    });

    it('§2 webhook: append uses ? on a URL without a query', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox, { webhook: `${receiver.url}/hook` });
      await sandbox.completePayment(id);
      expect(receiver.received[0].url).toBe(`/hook?payment_id=${id}`);
    });

    it.each([
      ['append', (id: string, s: string) => `/hook?token=t.k&payment_id=${id}&status=${s}`],
      ['naive', (id: string, s: string) => `/hook?token=t.k?payment_id=${id}&status=${s}`],
    ] as const)('§2 webhook: GET carries payment_id and status in the query (%s), no body', async (mode, expected) => {
      const sandbox = await start({ webhookMethod: 'GET', webhookPaymentIdInUrl: mode });
      const paid = await create(sandbox, { webhook: target() });
      const declined = await create(sandbox, { webhook: target() });
      await sandbox.completePayment(paid.id);
      await sandbox.failPayment(declined.id);
      expect(receiver.received.map((r) => [r.method, r.url, r.body, r.headers['content-type']])).toEqual([
        ['GET', expected(paid.id, 'SUCCESS'), '', undefined],
        ['GET', expected(declined.id, 'FAILURE'), '', undefined],
      ]);
      expect(sandbox.deliveries.map((d) => [d.method, d.payload])).toEqual([
        ['GET', ''],
        ['GET', ''],
      ]);
    });

    it('§2 webhook: retries a non-2xx answer (GET too) and reports the attempts', async () => {
      const sandbox = await start({ webhookMethod: 'GET' });
      receiver.script.push(502, 500);
      const { id } = await create(sandbox, { webhook: target() });
      const result = await sandbox.failPayment(id);
      expect(result).toMatchObject({ status: 'FAILURE', delivered: true, attempts: 3, lastStatus: 200 });
      expect(receiver.received).toHaveLength(3);
      expect(new Set(receiver.received.map((r) => r.url)).size).toBe(1);
    });

    it('§2 webhook: completePayment rejects when every attempt failed (undelivered is never silent)', async () => {
      const sandbox = await start({ webhookAttempts: 2 });
      receiver.script.push(500, 500);
      const { id } = await create(sandbox, { webhook: target() });
      await expect(sandbox.completePayment(id)).rejects.toMatchObject({
        name: 'SandboxWebhookError',
        paymentId: id,
        attempts: 2,
        lastStatus: 500,
      });
      // The customer did pay: the service's truth is unchanged by the lost webhook.
      expect((await verify(sandbox, id)).json.result.status).toBe('SUCCESS');
    });

    it('§2 webhook: none on session expiry (documented choice)', async () => {
      const sandbox = await start();
      const { id } = await create(sandbox, { webhook: target(), session_timeout_secs: 1 });
      clock += 1000;
      expect((await verify(sandbox, id)).json.result.status).toBe('EXPIRED');
      expect(receiver.received).toEqual([]);
    });
  });

  describe('§3 redirects back to the shop', () => {
    it.each([
      ['no query: ?payment_id=', 'https://shop.example/ok', (id: string) => `https://shop.example/ok?payment_id=${id}`],
      [
        'a query: &payment_id=',
        'https://shop.example/ok?order=7&lang=fr',
        (id: string) => `https://shop.example/ok?order=7&lang=fr&payment_id=${id}`,
      ],
      [
        'a bare ?: no extra separator',
        'https://shop.example/ok?',
        (id: string) => `https://shop.example/ok?payment_id=${id}`,
      ],
      [
        'a fragment: before the #, fragment kept',
        'https://shop.example/ok?o=1#done',
        (id: string) => `https://shop.example/ok?o=1&payment_id=${id}#done`,
      ],
      [
        'a port and path',
        'http://127.0.0.1:3000/orders/7/success',
        (id: string) => `http://127.0.0.1:3000/orders/7/success?payment_id=${id}`,
      ],
    ])('§3 redirect: success_link with %s', async (_label, successLink, expected) => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { success_link: successLink });
      const res = await click(link, 'pay');
      expect([res.status, res.headers.location]).toEqual([303, expected(id)]);
    });

    it('§3 redirect: fail_link gets payment_id the same way', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { fail_link: 'https://shop.example/ko?order=9' });
      const res = await click(link, 'decline');
      expect([res.status, res.headers.location]).toEqual([303, `https://shop.example/ko?order=9&payment_id=${id}`]);
    });

    it('§3 redirect: Unicode in the link is kept (percent-encoded as UTF-8 on the wire, IDN host in punycode)', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { success_link: 'https://bücher.example/café/réussi?note=été&x=✓' });
      const res = await click(link, 'pay');
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(
        `https://xn--bcher-kva.example/caf%C3%A9/r%C3%A9ussi?note=%C3%A9t%C3%A9&x=%E2%9C%93&payment_id=${id}`,
      );
      const url = new URL(res.headers.location as string);
      expect(decodeURIComponent(url.pathname)).toBe('/café/réussi');
      expect([...url.searchParams]).toEqual([
        ['note', 'été'],
        ['x', '✓'],
        ['payment_id', id],
      ]);
    });

    it('§3 redirect: a pre-authorization returns to success_link with payment_id too', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { pre_authorization: true });
      expect((await click(link, 'pay')).headers.location).toBe(`https://shop.example/ok?payment_id=${id}`);
    });
  });

  describe('§4 generate_payment', () => {
    it.each([
      ['a digit string', '12500'],
      ['a JSON integer', 12500],
    ])('§4 generate: amount as %s is accepted', async (_label, amount) => {
      const sandbox = await start();
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, amount });
      expect(res.status).toBe(200);
      const id = JSON.parse(res.text).result.payment_id;
      expect(sandbox.getPayment(id)?.amount).toBe('12500');
      expect((await verify(sandbox, id)).json.result.amount).toBe(12500);
    });

    it.each([
      ['an unsafe integer', 2 ** 53],
      ['a float', 1.5],
      ['a negative integer', -5],
      ['an exponent string', '1e3'],
    ])('§4 generate: amount as %s is refused with 400 Bad Request', async (_label, amount) => {
      const sandbox = await start();
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, amount });
      expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
    });

    it.each(['pre_auth', 'pre_authorization'])('§4 generate: %s: true makes a pre-authorization', async (flag) => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { [flag]: true });
      expect(sandbox.getPayment(id)).toMatchObject({ kind: 'preauthorized', state: 'pending' });
      await click(link, 'pay');
      expect((await verify(sandbox, id)).json.result.status).toBe('PREAUTH_SUCCESS');
    });

    it('§4 generate: pre-auth flags false (or both true) make a standard payment or pre-auth as said', async () => {
      const sandbox = await start();
      expect(sandbox.getPayment((await create(sandbox, { pre_auth: false })).id)?.kind).toBe('standard');
      expect(sandbox.getPayment((await create(sandbox, { pre_auth: true, pre_authorization: true })).id)?.kind).toBe(
        'preauthorized',
      );
    });

    it.each([
      ['the two flags disagreeing', { pre_auth: true, pre_authorization: false }],
      ['pre_auth a string', { pre_auth: 'true' }],
      ['pre_authorization null', { pre_authorization: null }],
    ])('§4 generate: %s is refused with 400 Bad Request', async (_label, fields) => {
      const sandbox = await start();
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, ...fields });
      expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
      expect(sandbox.payments()).toEqual([]);
    });

    it('§4 generate: client_id creates a binding once the payment is paid; verify shows its binding_id', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { client_id: 'customer-42' });
      const before = await getApi(sandbox, '/api/v2/bindings/list?client_id=customer-42');
      expect(JSON.parse(before.text).result.bindings).toEqual([]);
      expect((await verify(sandbox, id)).json.result.details).not.toHaveProperty('binding_id');

      await click(link, 'pay');
      const list = JSON.parse((await getApi(sandbox, '/api/v2/bindings/list?client_id=customer-42')).text);
      expect(list).toEqual({
        result: {
          success: true,
          bindings: [
            {
              binding_id: expect.stringMatching(
                /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
              ),
              client_id: 'customer-42',
              card_last_four: '1119',
              card_brand: 'VISA',
              status: 'active',
              created_at: new Date(clock).toISOString(),
            },
          ],
        },
        status: 'success',
      });
      expect((await verify(sandbox, id)).json.result.details.binding_id).toBe(list.result.bindings[0].binding_id);
    });

    it('§4 generate: a declined payment with client_id creates no binding', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { client_id: 'customer-43' });
      await click(link, 'decline');
      expect(
        JSON.parse((await getApi(sandbox, '/api/v2/bindings/list?client_id=customer-43')).text).result.bindings,
      ).toEqual([]);
      expect((await verify(sandbox, id)).json.result.details).not.toHaveProperty('binding_id');
    });

    it('§4 generate: an invalid client_id (by the plugin identifier rule: no rule is documented) is refused with 400 Bad Request', async () => {
      const sandbox = await start();
      for (const client_id of ['', '  ', 'a\nb', 'x'.repeat(257), 42, null]) {
        const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, client_id });
        expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
      }
    });

    it('§4 generate: destination shares up to the amount are accepted and echoed by verify', async () => {
      const sandbox = await start();
      const destination = [
        { amount: 10000, destination: 'merchant-a' },
        { amount: 2500, destination: 'merchant-b' },
      ];
      const { id } = await create(sandbox, { amount: '12500', destination });
      expect((await verify(sandbox, id)).json.result.details.destinations).toEqual(destination);
      const below = await create(sandbox, { amount: '12500', destination: [{ amount: 1, destination: 'm' }] });
      expect((await verify(sandbox, below.id)).json.result.details.destinations).toEqual([
        { amount: 1, destination: 'm' },
      ]);
    });

    it.each([
      [
        'a sum above the amount',
        [
          { amount: 10000, destination: 'a' },
          { amount: 2501, destination: 'b' },
        ],
      ],
      ['a string share', [{ amount: '100', destination: 'a' }]],
      ['a zero share', [{ amount: 0, destination: 'a' }]],
      ['a missing merchant', [{ amount: 100 }]],
      ['not a list', { amount: 100, destination: 'a' }],
    ])('§4 generate: destination with %s is refused with 400 nested', async (_label, destination) => {
      const sandbox = await start();
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, amount: '12500', destination });
      expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
      expect(sandbox.payments()).toEqual([]);
    });

    it('§4 generate: the full answer (default) has result.success, name, code and version', async () => {
      const sandbox = await start();
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, developer_tracking_id: 't-1' });
      const body = JSON.parse(res.text);
      expect(Object.keys(body)).toEqual(['result', 'name', 'code', 'version']);
      expect(body.result).toEqual({
        success: true,
        payment_id: expect.any(String),
        link: expect.any(String),
        developer_tracking_id: 't-1',
      });
      expect([body.code, body.version]).toEqual([0, 'v2']);
    });

    it('§4 generate: generateAnswer minimal answers {result:{payment_id, link}} only', async () => {
      const sandbox = await start({ generateAnswer: 'minimal' });
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, developer_tracking_id: 't-1' });
      expect(res.status).toBe(200);
      const { result } = JSON.parse(res.text);
      expect(res.text).toBe(
        JSON.stringify({
          result: {
            payment_id: result.payment_id,
            link: `${sandbox.url}/checkout/sandbox-merchant/${result.payment_id}`,
          },
        }),
      );
      // Still a real payment: payable and verifiable.
      await click(result.link, 'pay');
      expect((await verify(sandbox, result.payment_id)).json.result).toMatchObject({
        status: 'SUCCESS',
        developer_tracking_id: 't-1',
      });
    });

    it('§4 generate: errors keep the nested shape with generateAnswer minimal', async () => {
      const sandbox = await start({ generateAnswer: 'minimal' });
      const res = await postJson(sandbox, '/api/v2/generate_payment', { ...base, amount: '0' });
      expect([res.status, res.text]).toEqual([400, BAD_REQUEST]);
    });
  });

  describe('§5 confirm_payment', () => {
    async function held(sandbox: PaymentsSandbox, amount = '40000'): Promise<string> {
      const { id, link } = await create(sandbox, { amount, pre_auth: true });
      await click(link, 'pay');
      return id;
    }

    it('§5 capture: without amount captures all; verify then says SUCCESS with that amount', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      clock += 5_000;
      const res = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id });
      expect(res.status).toBe(200);
      expect(res.text).toBe(
        JSON.stringify({
          result: { payment_id: id, status: 'confirmed', amount: '40000', confirmed_at: new Date(clock).toISOString() },
          status: 'success',
        }),
      );
      expect(JSON.parse(res.text).result.confirmed_at).toMatch(ISO_UTC);
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'SUCCESS', amount: 40000 });
    });

    it('§5 capture: a partial amount captures that much and releases the rest', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      const res = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '15000' });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toMatchObject({
        result: { payment_id: id, status: 'confirmed', amount: '15000' },
        status: 'success',
      });
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'SUCCESS', amount: 15000 });
      expect(sandbox.getPayment(id)).toMatchObject({ state: 'captured', amount: '40000', capturedAmount: '15000' });
    });

    it('§5 capture: exactly the held amount is allowed', async () => {
      const sandbox = await start();
      const id = await held(sandbox, '700');
      expect((await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '700' })).status).toBe(200);
    });

    it('§5 capture: a second capture is refused with CAPTURE_NOT_ALLOWED (flat shape)', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      expect((await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '100' })).status).toBe(200);
      const again = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id });
      expect([again.status, again.text]).toEqual([400, CAPTURE_NOT_ALLOWED]);
      expect((await verify(sandbox, id)).json.result.amount).toBe(100);
    });

    it('§5 capture: above the held amount is refused with AMOUNT_EXCEEDS_AUTHORIZATION; the hold stays', async () => {
      const sandbox = await start();
      const id = await held(sandbox, '40000');
      const res = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '40001' });
      expect([res.status, res.text]).toEqual([400, AMOUNT_EXCEEDS]);
      expect((await verify(sandbox, id)).json.result).toMatchObject({ status: 'PREAUTH_SUCCESS', amount: 40000 });
      expect((await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '40000' })).status).toBe(
        200,
      );
    });

    it('§5 capture: only a held pre-authorization can be captured', async () => {
      const sandbox = await start();
      const pendingPreauth = (await create(sandbox, { pre_auth: true })).id;
      const paidStandard = (await create(sandbox)).id;
      await sandbox.completePayment(paidStandard);
      const cancelled = await sandbox.createPreauthorizedPayment({ amount: 500 });
      await postJson(sandbox, '/api/v2/cancel_payment', { payment_id: cancelled });
      for (const payment_id of [pendingPreauth, paidStandard, cancelled]) {
        const res = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id });
        expect([res.status, res.text]).toEqual([400, CAPTURE_NOT_ALLOWED]);
      }
      expect((await verify(sandbox, paidStandard)).json.result.status).toBe('SUCCESS');
    });

    it('§5 capture: a captured pre-authorization can no longer be cancelled', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id });
      const cancel = await postJson(sandbox, '/api/v2/cancel_payment', { payment_id: id });
      expect([cancel.status, JSON.parse(cancel.text).code]).toEqual([400, 'CANCELLATION_FAILED']);
    });

    it('§5 capture: amount must be a string of millimes; payment_id is required', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      for (const amount of [15000, '1.5', '0', '', null]) {
        const res = await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount });
        expect([res.status, res.text]).toEqual([
          400,
          '{"status":"error","message":"amount must be a positive number of millimes as a string of digits","code":"BAD_REQUEST"}',
        ]);
      }
      const missing = await postJson(sandbox, '/api/v2/confirm_payment', { amount: '1' });
      expect([missing.status, missing.text]).toEqual([
        400,
        '{"status":"error","message":"payment_id is required","code":"BAD_REQUEST"}',
      ]);
      expect((await verify(sandbox, id)).json.result.status).toBe('PREAUTH_SUCCESS');
    });

    it('§5 capture: requires credentials and POST', async () => {
      const sandbox = await start();
      const id = await held(sandbox);
      const anonymous = await rawRequest(`${sandbox.url}/api/v2/confirm_payment`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ payment_id: id }),
      });
      expect(anonymous.status).toBe(401);
      const get = await getApi(sandbox, '/api/v2/confirm_payment');
      expect([get.status, get.headers.allow, get.text]).toEqual([
        405,
        'POST',
        '{"status":"error","message":"Method Not Allowed","code":"METHOD_NOT_ALLOWED"}',
      ]);
      expect((await verify(sandbox, id)).json.result.status).toBe('PREAUTH_SUCCESS');
    });

    it('§5 capture: createPreauthorizedPayment makes a held pre-authorization, with a binding for clientId', async () => {
      const sandbox = await start();
      const id = await sandbox.createPreauthorizedPayment({ amount: '3000', clientId: 'cust-p' });
      const { json } = await verify(sandbox, id);
      expect(json.result).toMatchObject({ status: 'PREAUTH_SUCCESS', amount: 3000 });
      const bindings = JSON.parse((await getApi(sandbox, '/api/v2/bindings/list?client_id=cust-p')).text).result
        .bindings;
      expect(bindings.map((b: { binding_id: string }) => b.binding_id)).toEqual([json.result.details.binding_id]);
      expect((await postJson(sandbox, '/api/v2/confirm_payment', { payment_id: id, amount: '1000' })).status).toBe(200);
    });
  });

  describe('checkout page', () => {
    it('checkout: CSP forbids framing and scripts, allows only its own stylesheet by hash', async () => {
      const sandbox = await start();
      const { link } = await create(sandbox);
      const res = await rawRequest(link);
      const csp = res.headers['content-security-policy'] as string;
      expect(csp.split('; ')).toEqual(
        expect.arrayContaining(["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]),
      );
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('script-src');
      const style = /<style>([\s\S]*?)<\/style>/.exec(res.text)?.[1] as string;
      expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.text).not.toMatch(/<script/i);
    });

    it('checkout: every sandbox page carries the same headers (404 and message pages too)', async () => {
      const sandbox = await start();
      for (const path of ['/', '/sandbox/success', '/nowhere', '/checkout/sandbox-merchant/pay_none']) {
        const res = await rawRequest(sandbox.url + path);
        expect(res.headers['x-frame-options']).toBe('DENY');
        expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      }
    });

    it('checkout: no favicon 404: the page declares an empty data: icon and /favicon.ico answers 204', async () => {
      const sandbox = await start();
      const { link } = await create(sandbox);
      expect((await rawRequest(link)).text).toContain('<link rel="icon" href="data:,">');
      const icon = await rawRequest(`${sandbox.url}/favicon.ico`);
      expect([icon.status, icon.text]).toEqual([204, '']);
    });

    it.each([
      ['Origin of another site', { Origin: 'https://evil.example' }],
      ['Origin null', { Origin: 'null' }],
      ['Sec-Fetch-Site cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
      ['Sec-Fetch-Site same-site', { 'Sec-Fetch-Site': 'same-site' }],
      [
        'Sec-Fetch-Site cross-site despite a same-looking Origin',
        { 'Sec-Fetch-Site': 'cross-site', Origin: 'http://127.0.0.1' },
      ],
    ])('checkout: Pay / Decline from %s is refused with 403 and changes nothing', async (_label, headers) => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { webhook: `${receiver.url}/wh` });
      for (const action of ['pay', 'decline'] as const) {
        const res = await click(link, action, headers);
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      }
      expect((await verify(sandbox, id)).json.result.status).toBe('PENDING');
      expect(receiver.received).toEqual([]);
    });

    it('checkout: Pay from the page itself (same Origin, Sec-Fetch-Site same-origin) is accepted', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox);
      const res = await click(link, 'pay', { Origin: sandbox.url, 'Sec-Fetch-Site': 'same-origin' });
      expect(res.status).toBe(303);
      expect((await verify(sandbox, id)).json.result.status).toBe('SUCCESS');
    });

    it('checkout: Sec-Fetch-Site same-origin decides over Origin: null (what a browser may send under strict referrer policies)', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox);
      expect((await click(link, 'pay', { Origin: 'null', 'Sec-Fetch-Site': 'same-origin' })).status).toBe(303);
      expect((await verify(sandbox, id)).json.result.status).toBe('SUCCESS');
      expect((await rawRequest(link)).headers['referrer-policy']).toBe('same-origin');
    });

    it('checkout: a pre-authorization page says the amount will be held, and offers Pay / Decline', async () => {
      const sandbox = await start();
      const { id, link } = await create(sandbox, { amount: '34900', pre_auth: true });
      const html = (await rawRequest(link)).text;
      expect(html).toContain(
        '<p class="notice" id="hold">Paying holds 34.900 TND on your card: the merchant captures it later, in full or in part, or releases it.</p>',
      );
      expect(html).toContain('id="pay"');
      expect(html).toContain('id="decline"');
      await click(link, 'pay');
      expect((await rawRequest(link)).text).toContain('The amount is held on the card (pre-authorized)');
      expect(sandbox.getPayment(id)?.state).toBe('preauthorized');
    });

    it('checkout: a standard payment page says nothing about holding', async () => {
      const sandbox = await start();
      const { link } = await create(sandbox);
      expect((await rawRequest(link)).text).not.toContain('id="hold"');
    });
  });
});
