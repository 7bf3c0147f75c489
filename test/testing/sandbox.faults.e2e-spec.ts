import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { generate, getApi, postJson, rawRequest } from './sandbox.helpers.js';

const REFUND = '/api/v2/refund_payment';
const UNKNOWN_PAYMENT =
  '{"status":"error","message":"Unknown payment: the sandbox has no payment with this id","code":"PAYMENT_NOT_FOUND"}';

describe('PaymentsSandbox fault injection', () => {
  let sandbox: PaymentsSandbox;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
  });
  afterEach(() => {
    for (const path of [REFUND, '/api/v2/bindings/list', '/api/v2/generate_payment']) sandbox.fault(path, null);
    sandbox.clearRequests();
  });
  afterAll(() => sandbox.close());

  it('answers a raw status and body until cleared, after logging the request', async () => {
    sandbox.fault(REFUND, { status: 502, body: '<html><body>Bad gateway</body></html>' });
    for (let i = 0; i < 2; i += 1) {
      const res = await postJson(sandbox, REFUND, { payment_id: 'pay_x' });
      expect(res.status).toBe(502);
      expect(res.headers['content-type']).toBe('text/html');
      expect(res.text).toBe('<html><body>Bad gateway</body></html>');
    }
    expect(sandbox.requests.map((r) => [r.path, r.body])).toEqual([
      [REFUND, '{"payment_id":"pay_x"}'],
      [REFUND, '{"payment_id":"pay_x"}'],
    ]);
    sandbox.fault(REFUND, null);
    const normal = await postJson(sandbox, REFUND, { payment_id: 'pay_x' });
    expect([normal.status, normal.text]).toEqual([404, UNKNOWN_PAYMENT]);
  });

  it('picks the content type from the body, unless given', async () => {
    sandbox.fault(REFUND, { status: 500, body: '{"status":"error","message":"boom","code":"INTERNAL"}', times: 1 });
    const json = await postJson(sandbox, REFUND, { payment_id: 'p' });
    expect([json.status, json.headers['content-type'], json.text]).toEqual([
      500,
      'application/json',
      '{"status":"error","message":"boom","code":"INTERNAL"}',
    ]);

    sandbox.fault(REFUND, { status: 503, times: 1 });
    const empty = await postJson(sandbox, REFUND, { payment_id: 'p' });
    expect([empty.status, empty.headers['content-type'], empty.text]).toEqual([503, 'text/html', '']);

    sandbox.fault(REFUND, { body: 'not json', contentType: 'text/plain', times: 1 });
    const plain = await postJson(sandbox, REFUND, { payment_id: 'p' });
    expect([plain.status, plain.headers['content-type'], plain.text]).toEqual([200, 'text/plain', 'not json']);
  });

  it('applies before authentication', async () => {
    sandbox.fault('/api/v2/bindings/list', { status: 429, body: '', times: 1 });
    const res = await rawRequest(`${sandbox.url}/api/v2/bindings/list?client_id=c`);
    expect(res.status).toBe(429);
    expect(sandbox.requests).toHaveLength(1);
  });

  it('times: 1 applies once, then the endpoint answers normally', async () => {
    sandbox.fault('/api/v2/bindings/list', { status: 500, body: 'oops', times: 1 });
    expect((await getApi(sandbox, '/api/v2/bindings/list?client_id=c')).status).toBe(500);
    const normal = await getApi(sandbox, '/api/v2/bindings/list?client_id=c');
    expect([normal.status, normal.text]).toEqual([200, '{"result":{"success":true,"bindings":[]},"status":"success"}']);
  });

  it('delayMs delays, then handles the request normally', async () => {
    sandbox.fault('/api/v2/generate_payment', { delayMs: 150 });
    const started = Date.now();
    const { payment_id } = await generate(sandbox);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(sandbox.getPayment(payment_id)?.state).toBe('pending');
  });

  it('delayMs with a status delays, then answers the fault', async () => {
    sandbox.fault(REFUND, { delayMs: 100, status: 504, body: 'gateway timeout', times: 1 });
    const started = Date.now();
    const res = await postJson(sandbox, REFUND, { payment_id: 'p' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect([res.status, res.text]).toEqual([504, 'gateway timeout']);
  });

  it('reset drops the connection without an answer', async () => {
    sandbox.fault(REFUND, { reset: true, times: 1 });
    const error = await postJson(sandbox, REFUND, { payment_id: 'p' }).then(
      () => undefined,
      (e: NodeJS.ErrnoException) => e,
    );
    expect(error?.code).toBe('ECONNRESET');
    expect(error?.message).toMatch(/ECONNRESET|socket hang up/);
    expect(sandbox.requests).toHaveLength(1);
    expect((await postJson(sandbox, REFUND, { payment_id: 'p' })).status).toBe(404);
  });

  it('reset is seen by fetch as a failed request', async () => {
    sandbox.fault(REFUND, { reset: true, times: 1 });
    await expect(fetch(sandbox.url + REFUND, { method: 'POST', body: '{}', redirect: 'manual' })).rejects.toThrow(
      'fetch failed',
    );
  });

  it('works on checkout paths too', async () => {
    const { link } = await generate(sandbox);
    const path = new URL(link).pathname;
    sandbox.fault(path, { status: 500, body: 'checkout down', times: 1 });
    expect((await rawRequest(link)).status).toBe(500);
    expect((await rawRequest(link)).status).toBe(200);
  });

  it.each([
    ['a relative path', 'api/v2/refund_payment', {}],
    ['a status out of range', REFUND, { status: 99 }],
    ['a fractional status', REFUND, { status: 200.5 }],
    ['a negative delay', REFUND, { delayMs: -1 }],
    ['zero times', REFUND, { times: 0 }],
  ])('refuses %s', (_label, path, spec) => {
    expect(() => sandbox.fault(path, spec)).toThrow(TypeError);
  });

  it('close() during a delayed request drops it and clears the timer', async () => {
    const own = await PaymentsSandbox.start();
    own.fault('/api/v2/generate_payment', { delayMs: 60_000 });
    const pending = postJson(own, '/api/v2/generate_payment', {}).then(
      () => 'answered',
      (e: NodeJS.ErrnoException) => e.code,
    );
    while (own.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await own.close();
    expect(await pending).toBe('ECONNRESET');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
