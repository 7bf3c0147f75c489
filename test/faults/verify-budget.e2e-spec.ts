/**
 * Issue 19 items 2 and 3: nothing amplified while the service fails. With verify answering 503
 * (or 429) for a simulated minute, returns and webhook deliveries (several a second, for several
 * payments) cost at most one verify per payment per interval (10 s), and every payment is
 * confirmed within one interval once the service is back. Deliveries of a payment still PENDING
 * use the same memory. The clock is compressed (the clients' `clock` option reads ahead as the test moves it); the service is a loopback fake.
 * maxRetries is 0 so that each request the fake counts is one verify call of the plugin.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createPaymentsClient, type PaymentOutcomeEvent, type PaymentsClient } from '../../lib/express/index.js';
import { FakeService, type FakeReply } from '../support/fake-service.js';
import { generateVia, quietLogger, startRouter, verifyCount, type RunningRouter } from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { AheadClock } from '../support/clock-ahead.js';

const INTERVAL_MS = 10_000;
let fake: FakeService;
let n = 0;
const open: Array<{ close(): Promise<void> }> = [];
let offset = 0;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
  fake.reset();
});
afterAll(() => fake.close());

async function shop(): Promise<{ client: PaymentsClient; router: RunningRouter; seen: PaymentOutcomeEvent[] }> {
  offset = 0;
  const clock = new AheadClock();
  clock.ahead(() => offset);
  const client = createPaymentsClient({
    clock,
    publicKey: 'pk_budget',
    privateKey: 'sk_budget_private',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    maxRetries: 0,
    // One verify per payment per 10 s for deliveries too (the default is 30 s).
    webhook: {
      publicUrl: 'https://shop.example/hook',
      secret: 'whsec_budget_0123456789abcdef0123456789',
      unsignedIntervalSecs: 10,
    },
    reconciliation: { enabled: false },
    logger: quietLogger(),
  });
  const seen: PaymentOutcomeEvent[] = [];
  const router = await startRouter({ client, onPaymentConfirmed: (e) => void seen.push(e) });
  open.push(router, client);
  return { client, router, seen };
}

/** One simulated second: 2 returns and 2 deliveries of each payment. */
async function hammer(
  s: Awaited<ReturnType<typeof shop>>,
  payments: Array<{ paymentId: string; token: string }>,
): Promise<number[]> {
  const statuses: number[] = [];
  for (const p of payments) {
    for (let k = 0; k < 2; k++) {
      await s.client.reconcilePayment(p.paymentId).catch(() => undefined);
      const res = await fetch(`${s.router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' });
      statuses.push(res.status);
    }
  }
  return statuses;
}

describe.each<[string, FakeReply, number]>([
  ['503', { status: 503, body: '<html>down</html>' }, INTERVAL_MS],
  ['429 with Retry-After: 20', { status: 429, body: '', headers: { 'retry-after': '20' } }, 20_000],
])('verify answering %s for a minute', (_name, failure, windowMs) => {
  it('costs at most one verify per payment per window, whatever the returns and deliveries; recovers within one interval', async () => {
    const s = await shop();
    const payments = [];
    for (let i = 0; i < 3; i++)
      payments.push(await generateVia(s.client, fake, `pay_budget_${++n}`, { amount: '12500' }));
    for (const p of payments) fake.always(verifyPath(p.paymentId), failure);

    const perWindow = new Map<string, number[]>();
    let requests = 0;
    for (offset = 0; offset < 60_000; offset += 1_000) {
      const before = payments.map((p) => verifyCount(fake, p.paymentId));
      const statuses = await hammer(s, payments);
      expect(statuses.every((status) => status === 503)).toBe(true);
      requests += statuses.length * 2;
      payments.forEach((p, i) => {
        const window = Math.floor(offset / windowMs);
        const counts = perWindow.get(p.paymentId) ?? [];
        counts[window] = (counts[window] ?? 0) + verifyCount(fake, p.paymentId) - before[i];
        perWindow.set(p.paymentId, counts);
      });
    }
    for (const [, counts] of perWindow) for (const c of counts) expect(c ?? 0).toBeLessThanOrEqual(1);
    const spent = payments.map((p) => verifyCount(fake, p.paymentId));
    // Figures for the closing note.
    console.log(
      `verify ${_name} for 60 s: ${requests} returns + deliveries -> verify calls per payment ${spent.join(', ')}`,
    );

    // The service is back: within one interval every payment is confirmed, once.
    for (const p of payments)
      fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 12500 }) });
    const back = offset;
    while (s.seen.length < payments.length && offset <= back + INTERVAL_MS + 1_000) {
      await hammer(s, payments);
      offset += 1_000;
    }
    expect(offset - back).toBeLessThanOrEqual(INTERVAL_MS + 1_000);
    expect(s.seen.map((e) => e.paymentId).sort()).toEqual(payments.map((p) => p.paymentId).sort());
  });
});

describe('deliveries of a payment still PENDING', () => {
  it('50 deliveries within the interval cost one verify (202, then 503 from memory so the service delivers again), the next after it verifies again', async () => {
    const s = await shop();
    const p = await generateVia(s.client, fake, `pay_budget_${++n}`, { amount: '12500' });
    fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'PENDING', amount: 12500 }) });
    const statuses: number[] = [];
    for (let k = 0; k < 50; k++) {
      offset = k * 100;
      statuses.push((await fetch(`${s.router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status);
    }
    // The first is the service's PENDING; the others are answered from memory, never 2xx: a service
    // that takes a 2xx as delivered would not deliver again once the payment settles.
    expect(statuses[0]).toBe(202);
    expect(new Set(statuses.slice(1))).toEqual(new Set([503]));
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    offset = INTERVAL_MS + 1;
    fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 12500 }) });
    expect((await fetch(`${s.router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status).toBe(200);
    expect(verifyCount(fake, p.paymentId)).toBe(2);
  });
});
