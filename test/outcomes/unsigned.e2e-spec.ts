import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type PaymentOutcomeEvent, type PaymentsClient } from '../../lib/express/index.js';
import type { FakeService } from '../support/fake-service.js';
import {
  answerVerify,
  postJson,
  startRouter,
  verifyCount,
  type RunningRouter,
  fakeServiceClient,
} from '../support/outcome-kit.js';
import { generateAnswer, verifyAnswer } from '../support/verify-answers.js';
import { settle, useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// `webhook.acceptUnsigned`: deliveries without a token of ours (a URL set in the service's
// dashboard) are hints, verify-backed: only payments this plugin generated and has not settled
// are verified, at most once per payment every `unsignedIntervalSecs`; strangers cost no call.

const INTERVAL_SECS = 30;

const fakeService = useFakeServiceWithoutUnhandledRejections();
let fake: FakeService;
let n = 0;
const open: Array<{ close(): Promise<void> }> = [];

/** A client taking unsigned deliveries only (no secret: generatePayment sends no webhook URL). */
function newClient(intervalSecs = INTERVAL_SECS): PaymentsClient {
  const client = fakeServiceClient(fake, undefined, {
    webhook: { acceptUnsigned: true, unsignedIntervalSecs: intervalSecs },
  });
  open.push(client);
  return client;
}

async function routerFor(client: PaymentsClient, seen: PaymentOutcomeEvent[]): Promise<RunningRouter> {
  const router = await startRouter({ client, onPaymentConfirmed: (e) => void seen.push(e) });
  open.push(router);
  return router;
}

async function generate(client: PaymentsClient, amount = '2500'): Promise<string> {
  const paymentId = `pay_unsigned_${++n}`;
  fake.reply('/api/v2/generate_payment', { status: 200, body: generateAnswer(paymentId) });
  await client.generatePayment({ amount });
  return paymentId;
}

beforeAll(() => void (fake = fakeService()));
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('webhook.acceptUnsigned', () => {
  it('generatePayment sends no webhook URL of ours (the dashboard one is used)', async () => {
    const client = newClient();
    await generate(client);
    const sent = JSON.parse(fake.requests.filter((r) => r.path === '/api/v2/generate_payment').at(-1)!.body) as Record<
      string,
      unknown
    >;
    expect(sent.webhook).toBeUndefined();
  });

  it('an unknown payment: 404 and no verify call', async () => {
    const client = newClient();
    const router = await routerFor(client, []);
    const stranger = `pay_stranger_${++n}`;
    answerVerify(fake, stranger, { status: 'SUCCESS' });
    for (const send of [
      () => postJson(router.url, { payment_id: stranger }),
      () => fetch(`${router.url}?payment_id=${stranger}`),
    ]) {
      const res = await send();
      expect(res.status).toBe(404);
    }
    expect(verifyCount(fake, stranger)).toBe(0);
  });

  it('no payment id: 400, no call', async () => {
    const client = newClient();
    const router = await routerFor(client, []);
    expect(await postJson(router.url, { status: 'SUCCESS' })).toEqual({
      status: 400,
      body: { received: false, error: 'malformed webhook: no payment id' },
    });
  });

  it('a queued payment is verified and handled; a redelivery of the done payment answers 200 duplicate without a call', async () => {
    const client = newClient();
    const seen: PaymentOutcomeEvent[] = [];
    const router = await routerFor(client, seen);
    const paymentId = await generate(client, '2500');
    answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 2500 });

    expect(await postJson(router.url, { payment_id: paymentId, status: 'completed' })).toEqual({
      status: 200,
      body: { received: true },
    });
    expect(seen.map((e) => [e.paymentId, e.amount, e.status, e.source])).toEqual([
      [paymentId, '2500', 'SUCCESS', 'webhook'],
    ]);
    expect(verifyCount(fake, paymentId)).toBe(1);

    // Done (no longer queued, so the interval does not even apply): a duplicate, by POST or GET, no call.
    expect(await postJson(router.url, { payment_id: paymentId })).toEqual({
      status: 200,
      body: { received: true, duplicate: true },
    });
    expect((await fetch(`${router.url}?payment_id=${paymentId}`)).status).toBe(200);
    expect(verifyCount(fake, paymentId)).toBe(1);
    expect(seen).toHaveLength(1);
  });

  it('the amount recorded at generation is checked: SUCCESS for another amount is a mismatch, never confirmed', async () => {
    const client = newClient();
    const seen: PaymentOutcomeEvent[] = [];
    const router = await routerFor(client, seen);
    const paymentId = await generate(client, '2500');
    answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 1 });
    expect((await postJson(router.url, { payment_id: paymentId })).status).toBe(200);
    expect(seen).toEqual([]);
    await expect(client.getOutcome(paymentId)).resolves.toMatchObject({ outcome: 'mismatch' });
  });

  it('a second delivery within unsignedIntervalSecs of a still-pending payment: 429 with Retry-After, no second call', async () => {
    const client = newClient();
    const seen: PaymentOutcomeEvent[] = [];
    const router = await routerFor(client, seen);
    const paymentId = await generate(client);
    answerVerify(fake, paymentId, { status: 'PENDING', amount: 2500 });

    expect(await postJson(router.url, { payment_id: paymentId })).toEqual({
      status: 202,
      body: { received: true, pending: true },
    });
    const again = await fetch(router.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: paymentId }),
    });
    expect([again.status, again.headers.get('retry-after'), await again.json()]).toEqual([
      429,
      String(INTERVAL_SECS),
      { received: false, error: 'too many deliveries for this payment' },
    ]);
    expect(verifyCount(fake, paymentId)).toBe(1);
    expect(seen).toEqual([]);
    // Still queued: reconciliation (or a delivery after the interval) settles it later.
    await expect(client.countPending()).resolves.toBe(1);
  });

  it('once unsignedIntervalSecs passed, a still-pending payment is verified again', async () => {
    const client = newClient(1);
    const seen: PaymentOutcomeEvent[] = [];
    const router = await routerFor(client, seen);
    const paymentId = await generate(client);
    fake.reply(`/api/v2/verify_payment/${paymentId}`, {
      status: 200,
      body: verifyAnswer({ status: 'PENDING', amount: 2500 }),
    });
    answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 2500 });
    expect((await postJson(router.url, { payment_id: paymentId })).status).toBe(202);
    expect((await postJson(router.url, { payment_id: paymentId })).status).toBe(429);
    await settle(1100);
    expect((await postJson(router.url, { payment_id: paymentId })).status).toBe(200);
    expect(verifyCount(fake, paymentId)).toBe(2);
    expect(seen.map((e) => e.paymentId)).toEqual([paymentId]);
  });

  it('concurrent unsigned deliveries of one payment cost one verify call', async () => {
    const client = newClient();
    const seen: PaymentOutcomeEvent[] = [];
    const router = await routerFor(client, seen);
    const paymentId = await generate(client);
    answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 2500 });
    const statuses = (
      await Promise.all(Array.from({ length: 8 }, () => postJson(router.url, { payment_id: paymentId })))
    ).map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(verifyCount(fake, paymentId)).toBe(1);
    expect(seen).toHaveLength(1);
  });
});
