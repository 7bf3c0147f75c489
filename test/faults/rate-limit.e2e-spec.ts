import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createPaymentsClient, type PaymentOutcomeEvent } from '../../lib/express/index.js';
import { PaymentsApiError } from '../../lib/index.js';
import { MemoryPaymentsStore } from '../../lib/store/index.js';
import { FakeService, type FakeReply } from '../support/fake-service.js';
import { generateVia, quietLogger, startRouter, verifyCount } from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { collectUnhandledRejections, rejectionOf, settle } from './support/guards.js';
import { AheadClock } from '../support/clock-ahead.js';

// Issue #9 item 7: a 429 from verify is honoured. A Retry-After longer than one backoff wait
// (5 s) ends the call at once: one verify call, not maxRetries + 1 within seconds; the webhook
// passes the wait on (503 + Retry-After) and reconciliation stops its batch and pauses.

const SESSION_SECS = 600;
const GRACE_SECS = 60;
const RATE_LIMITED: FakeReply = { status: 429, body: '', headers: { 'retry-after': '60' } };

const rejections = collectUnhandledRejections();
let fake: FakeService;
let n = 0;
const open: Array<{ close(): Promise<void> }> = [];

function newClient(store = new MemoryPaymentsStore(), logged?: string[], clock?: AheadClock) {
  const client = createPaymentsClient({
    publicKey: 'pk_ratelimit',
    privateKey: 'sk_ratelimit_private',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    sessionTimeoutSecs: SESSION_SECS,
    // The default: up to 3 verify calls for a 429 the plugin may retry.
    maxRetries: 2,
    webhook: { publicUrl: 'https://shop.example/hook', secret: 'whsec_ratelimit_0123456789abcdef0123456789' },
    reconciliation: { enabled: false, graceSecs: GRACE_SECS },
    logger: quietLogger(logged),
    store,
    ...(clock ? { clock } : {}),
  });
  open.push(client);
  return client;
}

const nextId = () => `pay_rl_${++n}`;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
  fake.reset();
});
afterAll(async () => {
  await fake.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

describe('verify answered 429 with Retry-After: 60', () => {
  it('a webhook costs exactly 1 verify call and answers 503 with Retry-After: 60; the redelivery after it confirms', async () => {
    const clock = new AheadClock();
    const client = newClient(undefined, undefined, clock);
    const seen: PaymentOutcomeEvent[] = [];
    const router = await startRouter({ client, onPaymentConfirmed: (e) => void seen.push(e) });
    open.push(router);
    const p = await generateVia(client, fake, nextId(), { amount: '12500' });
    fake.reply(verifyPath(p.paymentId), RATE_LIMITED);

    const started = performance.now();
    const res = await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' });
    expect([res.status, res.headers.get('retry-after'), await res.json()]).toEqual([
      503,
      '60',
      { received: false, error: 'temporarily unavailable' },
    ]);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    expect(seen).toEqual([]);

    fake.reply(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 12500 }) });
    // Within the 60 s every path honours the pause: answered from memory, no call.
    const early = await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' });
    expect([early.status, Number(early.headers.get('retry-after')) > 55]).toEqual([503, true]);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    // The redelivery after the 60 s (the clock moved on) confirms.
    clock.ahead(61_000);
    expect((await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status).toBe(200);
    expect(seen.map((e) => e.paymentId)).toEqual([p.paymentId]);
    expect(verifyCount(fake, p.paymentId)).toBe(2);
  });

  it('a return (reconcilePayment) costs exactly 1 verify call and rejects with RATE_LIMITED and retryAfterSecs 60', async () => {
    const client = newClient();
    await startRouter({ client, onPaymentConfirmed: () => undefined }).then((r) => open.push(r));
    const p = await generateVia(client, fake, nextId(), { amount: '12500' });
    fake.always(verifyPath(p.paymentId), RATE_LIMITED);
    const { error } = await rejectionOf(client.reconcilePayment(p.paymentId));
    expect(error).toBeInstanceOf(PaymentsApiError);
    const e = error as PaymentsApiError;
    expect([e.code, e.httpStatus, e.retryAfterSecs]).toEqual(['RATE_LIMITED', 429, 60]);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });

  it('a reconciliation pass stops its batch at the first 429, puts the payments back unchecked, and takes none until Retry-After passed', async () => {
    const store = new MemoryPaymentsStore();
    const logged: string[] = [];
    const client = newClient(store, logged);
    const seen: PaymentOutcomeEvent[] = [];
    await startRouter({ client, onPaymentConfirmed: (e) => void seen.push(e) }).then((r) => open.push(r));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await generateVia(client, fake, nextId(), { amount: '500' })).paymentId);
    for (const id of ids) fake.always(verifyPath(id), RATE_LIMITED);
    const verifies = () => ids.reduce((sum, id) => sum + verifyCount(fake, id), 0);

    const due = Date.now() + (SESSION_SECS + GRACE_SECS) * 1000 + 1000;
    await expect(client.runReconciliation(due)).resolves.toEqual({
      checked: 0,
      settled: 0,
      rateLimitedUntil: due + 60_000,
    });
    expect(verifies()).toBe(1);
    expect(logged.filter((l) => l.includes('rate-limits verify') && l.includes('60 s'))).toHaveLength(1);
    for (const id of ids) await expect(store.findPending(id)).resolves.toMatchObject({ checks: 0 });

    // Before Retry-After passed: nothing is taken, no call.
    await expect(client.runReconciliation(due + 59_000)).resolves.toEqual({
      checked: 0,
      settled: 0,
      rateLimitedUntil: due + 60_000,
    });
    expect(verifies()).toBe(1);

    // After it: every payment is verified once and confirmed.
    for (const id of ids)
      fake.always(verifyPath(id), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 500 }) });
    await expect(client.runReconciliation(due + 60_000)).resolves.toEqual({ checked: 3, settled: 3 });
    expect(verifies()).toBe(4);
    expect(seen.map((e) => e.paymentId).sort()).toEqual([...ids].sort());
    await expect(client.countPending()).resolves.toBe(0);
  });

  it('a 429 without Retry-After (after maxRetries + 1 calls) pauses reconciliation 30 s', async () => {
    const client = newClient();
    await startRouter({ client, onPaymentConfirmed: () => undefined }).then((r) => open.push(r));
    const a = await generateVia(client, fake, nextId(), { amount: '500' });
    const b = await generateVia(client, fake, nextId(), { amount: '500' });
    for (const id of [a.paymentId, b.paymentId]) fake.always(verifyPath(id), { status: 429, body: '' });
    const due = Date.now() + (SESSION_SECS + GRACE_SECS) * 1000 + 1000;
    await expect(client.runReconciliation(due)).resolves.toEqual({
      checked: 0,
      settled: 0,
      rateLimitedUntil: due + 30_000,
    });
    expect(verifyCount(fake, a.paymentId) + verifyCount(fake, b.paymentId)).toBe(3);
  });

  it('a short Retry-After (1 s) is waited out within the call: retried once, then confirmed', async () => {
    const client = newClient();
    const seen: PaymentOutcomeEvent[] = [];
    const router = await startRouter({ client, onPaymentConfirmed: (e) => void seen.push(e) });
    open.push(router);
    const p = await generateVia(client, fake, nextId(), { amount: '12500' });
    fake.reply(
      verifyPath(p.paymentId),
      { status: 429, body: '', headers: { 'retry-after': '1' } },
      { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 12500 }) },
    );
    const started = performance.now();
    expect((await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(995);
    expect(verifyCount(fake, p.paymentId)).toBe(2);
    expect(seen).toHaveLength(1);
  });
});
