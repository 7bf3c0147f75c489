import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
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

  it('completePayment delivers a completed confirmation to the exact URL and reports it', async () => {
    const sandbox = await start();
    const webhook = `${receiver.url}/wh?token=x.y.z&payment=1`;
    const { payment_id } = await generate(sandbox, { amount: '12500', developer_tracking_id: 'o-1', webhook });
    const result = await sandbox.completePayment(payment_id);
    expect(result.payment).toMatchObject({ paymentId: payment_id, state: 'paid' });
    expect(result.webhook).toEqual({ status: 200, attempts: 1, delivered: true });
    expect(receiver.received).toHaveLength(1);
    const [hit] = receiver.received;
    expect(hit.method).toBe('POST');
    expect(hit.url).toBe('/wh?token=x.y.z&payment=1');
    expect(hit.headers['content-type']).toBe('application/json');
    expect(hit.body).toBe(`{"payment_id":"${payment_id}","status":"completed","amount":"12500","developer_tracking_id":"o-1"}`);
  });

  it('failPayment delivers nothing: the webhook is for confirmations only', async () => {
    const sandbox = await start();
    const { payment_id } = await generate(sandbox, { amount: '700', webhook: `${receiver.url}/wh` });
    const result = await sandbox.failPayment(payment_id);
    expect(result.payment.state).toBe('failed');
    expect(result.webhook).toBeUndefined();
    expect(receiver.received).toEqual([]);
    expect(sandbox.deliveries).toEqual([]);
  });

  it('resolves without webhook when the payment has no webhook URL', async () => {
    const sandbox = await start();
    const { payment_id } = await generate(sandbox);
    const result = await sandbox.completePayment(payment_id);
    expect(result).toEqual({ payment: sandbox.getPayment(payment_id) });
    expect(sandbox.deliveries).toEqual([]);
  });

  it('retries after a 500 and stops at the first 2xx', async () => {
    const sandbox = await start();
    receiver.script.push(500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const started = Date.now();
    const result = await sandbox.completePayment(payment_id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(result.webhook).toEqual({ status: 200, attempts: 2, delivered: true });
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1].body).toBe(receiver.received[0].body);
    expect(sandbox.deliveries.map(({ attempt, status, error }) => ({ attempt, status, error }))).toEqual([
      { attempt: 1, status: 500, error: undefined },
      { attempt: 2, status: 200, error: undefined },
    ]);
  });

  it('gives up after webhookRetries attempts, keeping the state change', async () => {
    const sandbox = await start({ webhookRetries: 2 });
    receiver.script.push(503, 404, 200);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const result = await sandbox.completePayment(payment_id);
    expect(result.webhook).toEqual({ status: 404, attempts: 2, delivered: false });
    expect(receiver.received).toHaveLength(2);
    expect(sandbox.getPayment(payment_id)?.state).toBe('paid');
  });

  it('retries network errors (3 attempts by default) and logs them', async () => {
    const sandbox = await start();
    const url = `http://127.0.0.1:${await closedPort()}/wh`;
    const { payment_id } = await generate(sandbox, { webhook: url });
    const result = await sandbox.completePayment(payment_id);
    expect(result.webhook).toEqual({ status: 0, attempts: 3, delivered: false, error: expect.stringMatching(/^ECONNREFUSED/) });
    expect(sandbox.deliveries.map((d) => [d.paymentId, d.url, d.attempt, d.status])).toEqual([
      [payment_id, url, 1, undefined],
      [payment_id, url, 2, undefined],
      [payment_id, url, 3, undefined],
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

  it('close() cancels pending retries', async () => {
    const sandbox = await start();
    receiver.script.push(500, 500, 500);
    const { payment_id } = await generate(sandbox, { webhook: `${receiver.url}/wh` });
    const settling = sandbox.completePayment(payment_id);
    while (sandbox.deliveries.length === 0) await new Promise((r) => setTimeout(r, 5));
    await sandbox.close();
    const result = await settling;
    expect(result.webhook).toEqual({ status: 500, attempts: 1, delivered: false });
    expect(receiver.received).toHaveLength(1);
  });

  it('completePayment / failPayment throw for unknown and settled payments', async () => {
    const sandbox = await start();
    await expect(sandbox.completePayment('pay_nope')).rejects.toThrow('PaymentsSandbox: cannot complete payment pay_nope: no such payment');
    const { payment_id } = await generate(sandbox);
    await sandbox.completePayment(payment_id);
    await expect(sandbox.completePayment(payment_id)).rejects.toThrow(`cannot complete payment ${payment_id}: it is paid, not pending`);
    await expect(sandbox.failPayment(payment_id)).rejects.toThrow(`cannot fail payment ${payment_id}: it is paid, not pending`);
    const preauth = await sandbox.createPreauthorizedPayment({ amount: '1' });
    await expect(sandbox.completePayment(preauth)).rejects.toThrow('it is preauthorized, not pending');
  });

  it('refuses invalid delivery options', async () => {
    await expect(PaymentsSandbox.start({ webhookRetries: 0 })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ webhookTimeoutMs: -1 })).rejects.toThrow(TypeError);
  });
});
