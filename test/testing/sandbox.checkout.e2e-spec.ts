import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { generate, rawRequest, WebhookReceiver } from './sandbox.helpers.js';

describe('PaymentsSandbox checkout page', () => {
  let sandbox: PaymentsSandbox;
  let receiver: WebhookReceiver;
  let clock = Date.parse('2030-06-01T12:00:00.000Z');

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    sandbox = await PaymentsSandbox.start({ now: () => clock });
  });
  afterAll(async () => {
    await sandbox.close();
    await receiver.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
  });

  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

  it('shows the amount in dinars, the tracking id, the state and the Pay / Decline buttons', async () => {
    const { payment_id, link } = await generate(sandbox, { amount: '12500', developer_tracking_id: 'order-7' });
    expect(link).toBe(`${sandbox.url}/checkout/sandbox-merchant/${payment_id}`);
    const res = await rawRequest(link);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    const html = res.text;
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<title>Sandbox checkout</title>');
    expect(html).toContain('<p class="amount" id="amount">12.500 TND</p>');
    expect(html).toContain('<dd>order-7</dd>');
    expect(html).toContain('<span class="state state-pending" id="state">pending</span>');
    expect(html).toContain(
      `<form method="post" action="/checkout/sandbox-merchant/${payment_id}/pay"><button type="submit" id="pay">Pay</button></form>`,
    );
    expect(html).toContain(
      `<form method="post" action="/checkout/sandbox-merchant/${payment_id}/decline"><button type="submit" id="decline">Decline</button></form>`,
    );
    // Self-contained: no scripts, no external stylesheets, images or fonts; the only link is the empty data: favicon.
    expect(html).not.toMatch(/<script|<img|src=|url\(/i);
    expect(html.match(/<link[^>]*>/g)).toEqual(['<link rel="icon" href="data:,">']);
  });

  it('escapes every interpolated value', async () => {
    const { link } = await generate(sandbox, { amount: '5', developer_tracking_id: `<script>alert("x")</script>&'` });
    const html = (await rawRequest(link)).text;
    expect(html).not.toContain('<script>');
    expect(html).toContain('<dd>&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#38;&#39;</dd>');
    expect(html).toContain('0.005 TND');
  });

  it('Pay marks the payment paid, delivers the webhook first, then redirects 303 to success_link with payment_id', async () => {
    const webhook = `${receiver.url}/payments/webhook?token=a.b-c_d%2Fe&n=1`;
    const { payment_id, link } = await generate(sandbox, {
      amount: '12500',
      developer_tracking_id: 'order-8',
      webhook,
      success_link: 'https://shop.example/thanks?order=8',
    });
    const res = await rawRequest(`${link}/pay`, { method: 'POST', headers: form, body: '' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`https://shop.example/thanks?order=8&payment_id=${payment_id}`);
    // The redirect came after delivery: the receiver already has it.
    expect(receiver.received).toEqual([
      {
        method: 'POST',
        url: `/payments/webhook?token=a.b-c_d%2Fe&n=1&payment_id=${payment_id}`,
        headers: expect.objectContaining({ 'content-type': 'application/json' }),
        body: JSON.stringify({ payment_id, status: 'SUCCESS' }),
      },
    ]);
    expect(sandbox.getPayment(payment_id)).toMatchObject({ state: 'paid', paidAt: '2030-06-01T12:00:00.000Z' });
    expect(sandbox.deliveries.filter((d) => d.paymentId === payment_id)).toEqual([
      {
        paymentId: payment_id,
        paymentStatus: 'SUCCESS',
        method: 'POST',
        url: `${webhook}&payment_id=${payment_id}`,
        attempt: 1,
        status: 200,
        payload: receiver.received[0].body,
      },
    ]);

    const page = (await rawRequest(link)).text;
    expect(page).toContain('<span class="state state-paid" id="state">paid</span>');
    expect(page).toContain('This payment has been paid.');
    expect(page).not.toContain('id="pay"');
    expect(page).not.toContain('id="decline"');

    for (const action of ['pay', 'decline']) {
      const late = await rawRequest(`${link}/${action}`, { method: 'POST', headers: form, body: '' });
      expect(late.status).toBe(409);
      expect(late.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(late.text).toContain('This payment is paid; it can no longer be paid or declined.');
    }
    expect(receiver.received).toHaveLength(1);
  });

  it('Decline marks the payment failed, delivers the FAILURE webhook, then redirects 303 to fail_link with payment_id', async () => {
    const { payment_id, link } = await generate(sandbox, {
      amount: '900',
      webhook: `${receiver.url}/hook`,
      fail_link: 'http://shop.example/sorry',
    });
    const res = await rawRequest(`${link}/decline`, { method: 'POST', headers: form, body: '' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`http://shop.example/sorry?payment_id=${payment_id}`);
    expect(receiver.received.map((r) => r.body)).toEqual([JSON.stringify({ payment_id, status: 'FAILURE' })]);
    expect(sandbox.getPayment(payment_id)?.state).toBe('failed');
    expect((await rawRequest(link)).text).toContain('This payment was declined.');
  });

  it('pays without a webhook: redirect only, no delivery', async () => {
    const before = sandbox.deliveries.length;
    const { payment_id, link } = await generate(sandbox);
    const res = await rawRequest(`${link}/pay`, { method: 'POST' });
    expect([res.status, res.headers.location]).toEqual([303, `https://shop.example/ok?payment_id=${payment_id}`]);
    expect(sandbox.getPayment(payment_id)?.state).toBe('paid');
    expect(sandbox.deliveries).toHaveLength(before);
  });

  it('answers 404 HTML for an unknown payment, GET or POST', async () => {
    for (const [path, method] of [
      ['/checkout/sandbox-merchant/pay_nope', 'GET'],
      ['/checkout/sandbox-merchant/pay_nope/pay', 'POST'],
      ['/checkout/sandbox-merchant/%E0%A4%A', 'GET'],
    ]) {
      const res = await rawRequest(sandbox.url + path, { method });
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.text).toContain('Payment not found');
    }
  });

  it('answers 405 to a GET on the Pay action and to a POST on the page', async () => {
    const { link } = await generate(sandbox);
    const get = await rawRequest(`${link}/pay`);
    expect([get.status, get.headers.allow]).toEqual([405, 'POST']);
    const post = await rawRequest(link, { method: 'POST' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
    expect(sandbox.payments().find((p) => p.link === link)?.state).toBe('pending');
  });

  it('expires a pending payment once session_timeout_secs have passed on the sandbox clock', async () => {
    const { payment_id, link } = await generate(sandbox, { session_timeout_secs: 60, webhook: `${receiver.url}/hook` });
    clock += 59_999;
    expect(sandbox.getPayment(payment_id)?.state).toBe('pending');
    clock += 1;
    expect(sandbox.getPayment(payment_id)?.state).toBe('expired');
    const page = (await rawRequest(link)).text;
    expect(page).toContain('<span class="state state-expired" id="state">expired</span>');
    expect(page).toContain('This payment session has expired.');
    expect(page).not.toContain('id="pay"');
    const late = await rawRequest(`${link}/pay`, { method: 'POST' });
    expect(late.status).toBe(409);
    await expect(sandbox.completePayment(payment_id)).rejects.toThrow(
      `PaymentsSandbox: cannot complete payment ${payment_id}: it is expired, not pending`,
    );
    expect(receiver.received).toHaveLength(0);
  });

  it('uses the default 1200 s session timeout', async () => {
    const { payment_id } = await generate(sandbox);
    clock += 1_199_999;
    expect(sandbox.getPayment(payment_id)?.state).toBe('pending');
    clock += 1;
    expect(sandbox.getPayment(payment_id)?.state).toBe('expired');
    expect(sandbox.payments().find((p) => p.paymentId === payment_id)?.state).toBe('expired');
  });

  it('shows a pre-authorized payment without buttons', async () => {
    const id = await sandbox.createPreauthorizedPayment({ amount: '3000' });
    const res = await rawRequest(`${sandbox.url}/checkout/sandbox-merchant/${id}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('3.000 TND');
    expect(res.text).toContain('pre-authorized');
    expect(res.text).not.toContain('id="pay"');
    const pay = await rawRequest(`${sandbox.url}/checkout/sandbox-merchant/${id}/pay`, { method: 'POST' });
    expect(pay.status).toBe(409);
    expect(sandbox.getPayment(id)?.state).toBe('preauthorized');
  });

  it('settles concurrent clicks once', async () => {
    const { payment_id, link } = await generate(sandbox, { webhook: `${receiver.url}/hook` });
    const answers = await Promise.all([
      rawRequest(`${link}/pay`, { method: 'POST' }),
      rawRequest(`${link}/pay`, { method: 'POST' }),
      rawRequest(`${link}/decline`, { method: 'POST' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([303, 409, 409]);
    // Whichever click won, exactly one outcome was delivered.
    expect(receiver.received).toHaveLength(1);
    expect(JSON.parse(receiver.received[0].body).payment_id).toBe(payment_id);
  });
});
