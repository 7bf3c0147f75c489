import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox, SandboxWebhookError } from '../../lib/testing/index.js';
import { closedPort, generate, WebhookReceiver } from './sandbox.helpers.js';

describe('PaymentsSandbox webhook delivery', () => {
  let receiver: WebhookReceiver;
  const sandboxes: PaymentsSandbox[] = [];

  async function start(options: Parameters<typeof PaymentsSandbox.start>[0] = {}): Promise<PaymentsSandbox> {
    const sandbox = await PaymentsSandbox.start(options);
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

  it('§2 completePayment POSTs {payment_id, status: SUCCESS} to the URL with payment_id appended, and reports it', async () => {
    const sandbox = await start();
    const webhook = `${receiver.url}/wh?token=x.y.z&payment=1`;
    const { payment_id } = await generate(sandbox, { amount: '12500', developer_tracking_id: 'o-1', webhook });
    const result = await sandbox.completePayment(payment_id);
    expect(result).toEqual({
      payment: sandbox.getPayment(payment_id),
      status: 'SUCCESS',
      delivered: true,
      attempts: 1,
      lastStatus: 200,
      webhook: { status: 200, attempts: 1, delivered: true },
    });
    expect(result.payment.state).toBe('paid');
    expect(receiver.received).toHaveLength(1);
    const [hit] = receiver.received;
    expect(hit.method).toBe('POST');
    expect(hit.url).toBe(`/wh?token=x.y.z&payment=1&payment_id=${payment_id}`);
    expect(hit.headers['content-type']).toBe('application/json');
    expect(hit.body).toBe(`{"payment_id":"${payment_id}","status":"SUCCESS"}`);
  });

  it('§2 failPayment delivers the failure webhook too: {payment_id, status: FAILURE}', async () => {
    const sandbox = await start();
    const { payment_id } = await generate(sandbox, { amount: '700', webhook: `${receiver.url}/wh` });
    const result = await sandbox.failPayment(payment_id);
    expect(result).toMatchObject({ status: 'FAILURE', delivered: true, attempts: 1, lastStatus: 200 });
    expect(result.payment.state).toBe('failed');
    expect(receiver.received.map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', `/wh?payment_id=${payment_id}`, `{"payment_id":"${payment_id}","status":"FAILURE"}`],
    ]);
    expect(sandbox.deliveries).toEqual([
      {
        paymentId: payment_id,
        paymentStatus: 'FAILURE',
        method: 'POST',
        url: `${receiver.url}/wh?payment_id=${payment_id}`,
        attempt: 1,
        status: 200,
        payload: receiver.received[0].body,
      },
    ]);
  });

  it('resolves with delivered: false and attempts: 0 when the payment has no webhook URL', async () => {
    const sandbox = await start();
    const { payment_id } = await generate(sandbox);
    const result = await sandbox.completePayment(payment_id);
    expect(result).toEqual({
      payment: sandbox.getPayment(payment_id),
      status: 'SUCCESS',
      delivered: false,
      attempts: 0,
    });
    expect(sandbox.deliveries).toEqual([]);
  });

  it('retries after a 500 and stops at the first 2xx', async () => {
    const sandbox = await start();
    receiver.script.push(500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const result = await sandbox.completePayment(payment_id);
    expect(result.webhook).toEqual({ status: 200, attempts: 2, delivered: true });
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1].body).toBe(receiver.received[0].body);
    expect(sandbox.deliveries.map(({ attempt, status, error }) => ({ attempt, status, error }))).toEqual([
      { attempt: 1, status: 500, error: undefined },
      { attempt: 2, status: 200, error: undefined },
    ]);
  });

  it('gives up after webhookAttempts attempts: completePayment rejects with SandboxWebhookError, keeping the state change', async () => {
    const sandbox = await start({ webhookAttempts: 2 });
    receiver.script.push(503, 404, 200);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const error = await sandbox.completePayment(payment_id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxWebhookError);
    const webhookError = error as SandboxWebhookError;
    expect(webhookError).toMatchObject({
      name: 'SandboxWebhookError',
      paymentId: payment_id,
      attempts: 2,
      lastStatus: 404,
    });
    expect(webhookError.message).toBe(
      `PaymentsSandbox: the SUCCESS webhook of payment ${payment_id} was not delivered after 2 attempt(s) (last answer HTTP 404); pass { requireDelivery: false } if that is expected`,
    );
    expect(webhookError.settlement).toMatchObject({
      status: 'SUCCESS',
      delivered: false,
      attempts: 2,
      lastStatus: 404,
      webhook: { status: 404, attempts: 2, delivered: false },
    });
    expect(receiver.received).toHaveLength(2);
    expect(sandbox.getPayment(payment_id)?.state).toBe('paid');
  });

  it('failPayment rejects the same way when the failure webhook is not delivered', async () => {
    const sandbox = await start({ webhookAttempts: 1 });
    receiver.script.push(500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    await expect(sandbox.failPayment(payment_id)).rejects.toMatchObject({
      name: 'SandboxWebhookError',
      attempts: 1,
      lastStatus: 500,
    });
    expect(sandbox.getPayment(payment_id)?.state).toBe('failed');
  });

  it('requireDelivery: false resolves with delivered: false instead of rejecting', async () => {
    const sandbox = await start({ webhookAttempts: 1 });
    receiver.script.push(500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const result = await sandbox.completePayment(payment_id, { requireDelivery: false });
    expect(result).toMatchObject({ status: 'SUCCESS', delivered: false, attempts: 1, lastStatus: 500 });
  });

  it('keeps webhookRetries as a deprecated alias of webhookAttempts (total attempts)', async () => {
    const sandbox = await start({ webhookRetries: 1 });
    receiver.script.push(500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const result = await sandbox.completePayment(payment_id, { requireDelivery: false });
    expect(result.attempts).toBe(1);
    await expect(PaymentsSandbox.start({ webhookAttempts: 2, webhookRetries: 3 })).rejects.toThrow(
      'webhookRetries is a deprecated name of webhookAttempts',
    );
  });

  it('retries network errors (3 attempts by default) and logs them', async () => {
    const sandbox = await start();
    const url = `http://127.0.0.1:${await closedPort()}/wh`;
    const { payment_id } = await generate(sandbox, { webhook: url });
    const result = await sandbox.completePayment(payment_id, { requireDelivery: false });
    expect(result.webhook).toEqual({
      status: 0,
      attempts: 3,
      delivered: false,
      error: expect.stringMatching(/^ECONNREFUSED/),
    });
    expect(result.lastStatus).toBeUndefined();
    const target = `${url}?payment_id=${payment_id}`;
    expect(sandbox.deliveries.map((d) => [d.paymentId, d.url, d.attempt, d.status])).toEqual([
      [payment_id, target, 1, undefined],
      [payment_id, target, 2, undefined],
      [payment_id, target, 3, undefined],
    ]);
    expect(sandbox.deliveries.every((d) => d.error?.startsWith('ECONNREFUSED'))).toBe(true);
    expect(sandbox.getPayment(payment_id)?.state).toBe('paid');
  });

  it('times an unanswered attempt out after webhookTimeoutMs and retries', async () => {
    const sandbox = await start({ webhookTimeoutMs: 100 });
    receiver.script.push('hang');
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const result = await sandbox.completePayment(payment_id);
    expect(result.webhook).toEqual({ status: 200, attempts: 2, delivered: true });
    expect(sandbox.deliveries[0]).toMatchObject({ attempt: 1, error: 'timeout after 100 ms' });
    expect(sandbox.deliveries[0].status).toBeUndefined();
  });

  it('close() cancels pending retries; the undelivered webhook still rejects completePayment', async () => {
    const sandbox = await start();
    receiver.script.push(500, 500, 500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const settling = sandbox.completePayment(payment_id).catch((e: unknown) => e);
    while (sandbox.deliveries.length === 0) await new Promise((r) => setTimeout(r, 5));
    await sandbox.close();
    const error = (await settling) as SandboxWebhookError;
    expect(error).toBeInstanceOf(SandboxWebhookError);
    expect(error.settlement.webhook).toEqual({ status: 500, attempts: 1, delivered: false });
    expect(receiver.received).toHaveLength(1);
  });

  it('completePayment / failPayment throw for unknown and settled payments', async () => {
    const sandbox = await start();
    await expect(sandbox.completePayment('pay_nope')).rejects.toThrow(
      'PaymentsSandbox: cannot complete payment pay_nope: no such payment',
    );
    const { payment_id } = await generate(sandbox);
    await sandbox.completePayment(payment_id);
    await expect(sandbox.completePayment(payment_id)).rejects.toThrow(
      `cannot complete payment ${payment_id}: it is paid, not pending`,
    );
    await expect(sandbox.failPayment(payment_id)).rejects.toThrow(
      `cannot fail payment ${payment_id}: it is paid, not pending`,
    );
    const preauth = await sandbox.createPreauthorizedPayment({ amount: '1' });
    await expect(sandbox.completePayment(preauth)).rejects.toThrow('it is preauthorized, not pending');
  });

  it('refuses invalid delivery options', async () => {
    await expect(PaymentsSandbox.start({ webhookRetries: 0 })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ webhookAttempts: 0 })).rejects.toThrow(
      'webhookAttempts must be a positive integer',
    );
    await expect(PaymentsSandbox.start({ webhookTimeoutMs: -1 })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ webhookMethod: 'PUT' as 'POST' })).rejects.toThrow(
      "webhookMethod must be one of 'POST', 'GET'",
    );
    await expect(PaymentsSandbox.start({ webhookPaymentIdInUrl: 'query' as 'none' })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ webhookMethod: 'GET', webhookPaymentIdInUrl: 'none' })).rejects.toThrow(
      "cannot be 'none'",
    );
    await expect(PaymentsSandbox.start({ generateAnswer: 'short' as 'full' })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ verifyRateLimit: { max: 0, windowMs: 1000 } })).rejects.toThrow(
      'verifyRateLimit',
    );
  });
});
