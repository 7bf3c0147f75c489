import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { runAllHandlers, type OutcomeHandler } from '../../lib/core/settlement/payment.events.js';
import { type PaymentOutcomeEvent, type PaymentsClient } from '../../lib/express/index.js';
import { PaymentsError, PaymentsStoreUnavailableError, PaymentsValidationError } from '../../lib/index.js';
import { MemoryPaymentsStore, type PaymentsStore } from '../../lib/store/index.js';
import type { FakeService } from '../support/fake-service.js';
import {
  answerVerify,
  DelegatingStore,
  generateVia,
  quietLogger,
  startRouter,
  verifyCount,
  type RunningRouter,
  fakeServiceClient,
} from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { settle, useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// Issue #9: only a verified SUCCESS (with the amount and tracking id that were sent) confirms a
// payment, whichever path brings it: webhook (plain Express router), return (reconcilePayment)
// or reconciliation; each outcome's handlers run once; a duplicate costs no verify call.

const SECRET = 'whsec_outcomes_0123456789abcdef0123456789';
const SESSION_SECS = 600;
const GRACE_SECS = 60;

const fakeService = useFakeServiceWithoutUnhandledRejections();
let fake: FakeService;
let n = 0;
const open: Array<{ close(): Promise<void> }> = [];

type Seen = { callback: string; event: PaymentOutcomeEvent };

function newClient(
  publicUrl = 'https://shop.example/hook',
  store: PaymentsStore = new MemoryPaymentsStore(),
  logged?: string[],
) {
  const client = fakeServiceClient(fake, SECRET, {
    sessionTimeoutSecs: SESSION_SECS,
    webhook: { publicUrl, secret: SECRET },
    reconciliation: { enabled: false, graceSecs: GRACE_SECS },
    logger: quietLogger(logged),
    store,
  });
  open.push(client);
  return client;
}

/** A router with every callback recording into `seen`. */
async function routerFor(client: PaymentsClient, seen: Seen[], confirmed?: OutcomeHandler): Promise<RunningRouter> {
  const record = (callback: string) => (event: PaymentOutcomeEvent) => void seen.push({ callback, event });
  const running = await startRouter({
    client,
    onPaymentConfirmed: confirmed ?? record('confirmed'),
    onPaymentFailed: record('failed'),
    onPaymentExpired: record('expired'),
    onPaymentAuthorized: record('authorized'),
    onPaymentMismatch: record('mismatch'),
  });
  open.push(running);
  return running;
}

const nextId = (tag: string) => `pay_${tag}_${++n}`;

beforeAll(() => void (fake = fakeService()));
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('only a verified SUCCESS with what was sent confirms', () => {
  it.each([
    ['FAILURE', { status: 'FAILURE' }, 200, 'failed'],
    ['SYSTEM_FAILURE', { status: 'SYSTEM_FAILURE' }, 200, 'failed'],
    ['EXPIRED', { status: 'EXPIRED' }, 200, 'expired'],
    ['PENDING', { status: 'PENDING' }, 202, undefined],
    ['an unknown status (success, in lower case)', { status: 'success' }, 202, undefined],
    ['an unknown status (PAID)', { status: 'PAID' }, 202, undefined],
    ['SUCCESS for another amount', { status: 'SUCCESS', amount: 1 }, 200, 'mismatch'],
    ['SUCCESS for another tracking id', { status: 'SUCCESS', trackingId: 'order-other' }, 200, 'mismatch'],
    ['SUCCESS without the tracking id', { status: 'SUCCESS', trackingId: undefined }, 200, 'mismatch'],
  ] as const)('%s never runs onPaymentConfirmed', async (_name, answer, httpStatus, callback) => {
    const client = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const tracking = `order-${n + 1}`;
    const p = await generateVia(client, fake, nextId('status'), { amount: '4200', developerTrackingId: tracking });
    const verify = { amount: 4200, trackingId: tracking, ...answer };
    fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer(verify) });

    const res = await fetch(`${router.url}/${p.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: p.paymentId, status: 'SUCCESS' }),
    });
    expect(res.status).toBe(httpStatus);
    // The return and reconciliation reach the same verdict.
    const returned = await client.reconcilePayment(p.paymentId);
    await client.runReconciliation(Date.now() + (SESSION_SECS + GRACE_SECS) * 1000 + 1000);

    expect(seen.filter((s) => s.callback === 'confirmed')).toEqual([]);
    expect(seen.map((s) => s.callback)).toEqual(callback === undefined ? [] : [callback]);
    expect(returned.outcome).toBe(callback ?? 'pending');
    if (callback === 'mismatch')
      expect(await client.getOutcome(p.paymentId)).toMatchObject({
        outcome: 'mismatch',
        handlers: 'none',
        status: 'SUCCESS',
      });
  });

  it('PREAUTH_SUCCESS is authorized, not confirmed', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('preauth'), { amount: '900' });
    answerVerify(fake, p.paymentId, { status: 'PREAUTH_SUCCESS', amount: 900 });
    expect((await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`)).status).toBe(200);
    expect(seen.map((s) => s.callback)).toEqual(['authorized']);
  });
});

describe('the webhook path', () => {
  it('a restart between payment and webhook (memory store, new client, same secret) confirms once, with the verified amount and tracking id', async () => {
    const before = newClient();
    const p = await generateVia(before, fake, nextId('restart'), {
      amount: '12500',
      developerTrackingId: 'order-restart',
    });
    await before.close();

    const after = newClient(); // a new MemoryPaymentsStore: the binding is gone
    const seen: Seen[] = [];
    const router = await routerFor(after, seen);
    fake.always(verifyPath(p.paymentId), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount: 12500, trackingId: 'order-restart' }),
    });
    const deliver = () =>
      fetch(`${router.url}/${p.token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payment_id: p.paymentId }),
      });
    expect((await deliver()).status).toBe(200);
    expect((await deliver()).status).toBe(200);
    expect(
      seen.map((s) => [s.callback, s.event.paymentId, s.event.amount, s.event.developerTrackingId, s.event.source]),
    ).toEqual([['confirmed', p.paymentId, '12500', 'order-restart', 'webhook']]);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });

  it('a restart with the memory store loses the done markers: a redelivery of a payment handled before it is verified and handled again', async () => {
    const before = newClient();
    const seenBefore: Seen[] = [];
    const first = await routerFor(before, seenBefore);
    const p = await generateVia(before, fake, nextId('done-lost'), { amount: '450' });
    fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 450 }) });
    expect((await fetch(`${first.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status).toBe(200);
    expect(seenBefore.map((s) => s.callback)).toEqual(['confirmed']);
    await before.close();

    const after = newClient();
    const seenAfter: Seen[] = [];
    const second = await routerFor(after, seenAfter);
    expect((await fetch(`${second.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' })).status).toBe(200);
    // Why handlers must be idempotent on paymentId: the new process knows nothing of the first run.
    expect(seenAfter.map((s) => [s.callback, s.event.paymentId])).toEqual([['confirmed', p.paymentId]]);
    expect(verifyCount(fake, p.paymentId)).toBe(2);
  });

  it('after a restart, the same token naming another payment is refused once the first is bound (no verify call)', async () => {
    const before = newClient();
    // A tracking id pins the token's payment down; without one the token is not re-bound (a
    // replay may come first) and replays are rate-limited instead (test/outcomes/unbound-tokens).
    const p = await generateVia(before, fake, nextId('rebind'), { amount: '300', developerTrackingId: 'order-rebind' });
    await before.close();
    const after = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(after, seen);
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 300, trackingId: 'order-rebind' });
    expect((await fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`)).status).toBe(200);
    const other = nextId('rebind-other');
    expect((await fetch(`${router.url}/${p.token}?payment_id=${other}`)).status).toBe(401);
    expect(verifyCount(fake, other)).toBe(0);
    expect(seen).toHaveLength(1);
  });

  it.each([
    [
      'no query, ?payment_id= appended',
      'https://shop.example/hook',
      (url: string, id: string) => `${url}?payment_id=${id}`,
    ],
    [
      'no query, &payment_id= appended (lands in the path segment)',
      'https://shop.example/hook',
      (url: string, id: string) => `${url}&payment_id=${id}`,
    ],
    [
      'no query, ;payment_id= appended',
      'https://shop.example/hook',
      (url: string, id: string) => `${url};payment_id=${id}`,
    ],
    [
      'an unrelated id, &payment_id= appended',
      'https://shop.example/hook?id=store7',
      (url: string, id: string) => `${url}&payment_id=${id}`,
    ],
    [
      'an unrelated id, ?payment_id= appended naively',
      'https://shop.example/hook?id=store7',
      (url: string, id: string) => `${url}?payment_id=${id}`,
    ],
    [
      'a query, appended properly (&payment_id=)',
      'https://shop.example/hook?shop=7',
      (url: string, id: string) => `${url}&payment_id=${id}`,
    ],
    [
      'a query, appended naively (?payment_id= again)',
      'https://shop.example/hook?shop=7',
      (url: string, id: string) => `${url}?payment_id=${id}`,
    ],
    [
      'a bare flag, appended naively',
      'https://shop.example/hook?debug',
      (url: string, id: string) => `${url}?payment_id=${id}`,
    ],
  ])('public URL with %s: confirmed once', async (_name, publicUrl, append) => {
    const client = newClient(publicUrl);
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('append'), { amount: '800' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 800 });
    // The URL the service got, moved to the test's server, then appended to as the service does.
    const issued = new URL(p.webhook);
    expect(issued.pathname.endsWith(`/${p.token}`)).toBe(true);
    const delivered = append(
      `${router.url}/${p.token}${issued.search || (publicUrl.endsWith('?debug') ? '?debug' : '')}`,
      p.paymentId,
    );
    for (const method of ['GET', 'POST']) {
      const res = await fetch(delivered, { method });
      expect([method, res.status]).toEqual([method, 200]);
    }
    expect(seen.map((s) => [s.callback, s.event.paymentId])).toEqual([['confirmed', p.paymentId]]);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });

  it.each([
    ['JSON', 'application/json', (id: string) => JSON.stringify({ payment_id: id })],
    [
      'JSON, nested data.payment_id',
      'application/json',
      (id: string) => JSON.stringify({ data: { payment_id: id }, id: 'evt_1' }),
    ],
    ['form', 'application/x-www-form-urlencoded', (id: string) => `payment_id=${id}&status=SUCCESS`],
    ['text/plain JSON', 'text/plain', (id: string) => JSON.stringify({ paymentId: id })],
    ['text/plain form', 'text/plain', (id: string) => `payment_ref=${id}`],
    ['untyped (no Content-Type)', undefined, (id: string) => JSON.stringify({ id })],
  ])('the payment id in a %s body', async (_name, type, body) => {
    // The public URL has an unrelated `id` of its own: the body's id still wins.
    const client = newClient('https://shop.example/hook?id=store7');
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('body'), { amount: '500' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 500 });
    const res = await fetch(`${router.url}/${p.token}${new URL(p.webhook).search}`, {
      method: 'POST',
      headers: type ? { 'content-type': type } : {},
      body: type ? body(p.paymentId) : new Blob([body(p.paymentId)]),
    });
    expect(res.status).toBe(200);
    expect(seen.map((s) => [s.callback, s.event.paymentId])).toEqual([['confirmed', p.paymentId]]);
    expect(verifyCount(fake, 'store7')).toBe(0);
  });

  it('the payment id by GET, in the query', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('get'), { amount: '510' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 510 });
    expect((await fetch(`${router.url}/${p.token}?paymentId=${p.paymentId}`)).status).toBe(200);
    expect(seen.map((s) => s.event.paymentId)).toEqual([p.paymentId]);
  });
});

describe('the paths agree: whichever comes first runs the handlers, once', () => {
  it('a return (reconcilePayment) then a late webhook: handlers run once, the late webhook costs no verify call', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('return'), { amount: '700', developerTrackingId: 'order-return' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 700, trackingId: 'order-return' });
    await expect(client.reconcilePayment(p.paymentId)).resolves.toEqual({
      paymentId: p.paymentId,
      status: 'SUCCESS',
      outcome: 'confirmed',
      handled: true,
    });
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    const late = await fetch(`${router.url}/${p.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: p.paymentId }),
    });
    expect([late.status, await late.json()]).toEqual([200, { received: true, duplicate: true }]);
    await expect(client.reconcilePayment(p.paymentId)).resolves.toMatchObject({ outcome: 'confirmed', handled: false });
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    expect(seen.map((s) => [s.callback, s.event.source])).toEqual([['confirmed', 'return']]);
    // Reconciliation finds nothing left to do.
    await expect(client.runReconciliation(Date.now() + 86_400_000)).resolves.toEqual({ checked: 0, settled: 0 });
  });

  it('no webhook at all: runReconciliation(now + session + grace) confirms; not before', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    await routerFor(client, seen);
    const generatedAt = Date.now();
    const p = await generateVia(client, fake, nextId('recon'), { amount: '650', developerTrackingId: 'order-recon' });
    fake.always(verifyPath(p.paymentId), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount: 650, trackingId: 'order-recon' }),
    });
    await expect(client.runReconciliation(generatedAt + SESSION_SECS * 1000)).resolves.toEqual({
      checked: 0,
      settled: 0,
    });
    expect(verifyCount(fake, p.paymentId)).toBe(0);
    // The entry's due time is on the shared clock, the store's time measured within a round trip: on
    // a loaded machine a round trip's stall puts it up to half that ahead of Date.now() (a second).
    await expect(client.runReconciliation(Date.now() + (SESSION_SECS + GRACE_SECS) * 1000 + 1000)).resolves.toEqual({
      checked: 1,
      settled: 1,
    });
    expect(
      seen.map((s) => [s.callback, s.event.paymentId, s.event.amount, s.event.developerTrackingId, s.event.source]),
    ).toEqual([['confirmed', p.paymentId, '650', 'order-recon', 'reconciliation']]);
    await expect(client.countPending()).resolves.toBe(0);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });

  it('two handlers, one failing fast: the failure is answered only after the slow one ended, and the redelivery never overlaps it', async () => {
    const client = newClient();
    const journal: string[] = [];
    let failures = 1;
    let releaseSlow!: () => void;
    const fast: OutcomeHandler = () => {
      journal.push('fast');
      if (failures-- > 0) throw new Error('fast handler failed');
    };
    const slow: OutcomeHandler = async (e) => {
      journal.push(`slow start ${e.source}`);
      await new Promise<void>((r) => (releaseSlow = r));
      journal.push('slow end');
    };
    const router = await routerFor(client, [], (event) => runAllHandlers([fast, slow], event));
    const p = await generateVia(client, fake, nextId('two'), { amount: '990' });
    fake.always(verifyPath(p.paymentId), { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: 990 }) });
    const deliver = () =>
      fetch(`${router.url}/${p.token}?payment_id=${p.paymentId}`, { method: 'POST' }).then((r) => r.status);

    const first = deliver();
    for (let i = 0; i < 600 && !journal.includes('slow start webhook'); i++) await settle(5);
    expect(journal).toEqual(['fast', 'slow start webhook']);
    // The service redelivers while the slow handler still runs: busy, nothing started.
    expect(await deliver()).toBe(409);
    expect(await client.reconcilePayment(p.paymentId).then((r) => r.handled)).toBe(false);
    expect(journal).toEqual(['fast', 'slow start webhook']);
    releaseSlow();
    expect(await first).toBe(500);
    expect(journal).toEqual(['fast', 'slow start webhook', 'slow end']);

    // The next redelivery runs both again, and this time they succeed.
    const second = deliver();
    for (let i = 0; i < 600 && journal.length < 5; i++) await settle(5);
    releaseSlow();
    expect(await second).toBe(200);
    expect(journal).toEqual(['fast', 'slow start webhook', 'slow end', 'fast', 'slow start webhook', 'slow end']);
    expect(await deliver()).toBe(200);
    expect(journal).toHaveLength(6);
    await expect(client.getOutcome(p.paymentId)).resolves.toMatchObject({
      outcome: 'confirmed',
      handlers: 'succeeded',
      attempts: 2,
    });
  });
});

describe("reconcilePayment: the caller's expected is merged with what the plugin recorded", () => {
  it('a tracking id alone still has the amount checked: SUCCESS for 1 millime of a 12500 payment is a mismatch, never confirmed', async () => {
    const logged: string[] = [];
    const client = newClient(undefined, undefined, logged);
    const seen: Seen[] = [];
    await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('merge'), { amount: '12500', developerTrackingId: 'order-merge' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1, trackingId: 'order-merge' });

    const result = await client.reconcilePayment(p.paymentId, { expected: { developerTrackingId: 'order-merge' } });
    expect(result).toEqual({ paymentId: p.paymentId, status: 'SUCCESS', outcome: 'mismatch', handled: false });
    expect(seen.map((s) => s.callback)).toEqual(['mismatch']);
    await expect(client.getOutcome(p.paymentId)).resolves.toMatchObject({ outcome: 'mismatch', handlers: 'none' });
    expect(logged.some((l) => l.includes(p.paymentId) && l.includes('amount 1 instead of 12500'))).toBe(true);
  });

  it('an amount alone still has the tracking id checked', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('merge-tracking'), {
      amount: '12500',
      developerTrackingId: 'order-mine',
    });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 12500, trackingId: 'order-someone-else' });
    await expect(client.reconcilePayment(p.paymentId, { expected: { amount: 12500 } })).resolves.toMatchObject({
      outcome: 'mismatch',
    });
    expect(seen.map((s) => s.callback)).toEqual(['mismatch']);
  });

  it('an expected value contradicting the record is refused before any verify call, and leaves that payment to its own paths', async () => {
    const client = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(client, seen);
    // A customer edits the return URL's payment_id to name another (cheaper) payment of the shop.
    const cheap = await generateVia(client, fake, nextId('cheap'), { amount: '1', developerTrackingId: 'order-cheap' });
    const error = await client
      .reconcilePayment(cheap.paymentId, { expected: { amount: '12500', developerTrackingId: 'order-dear' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentsValidationError);
    expect((error as PaymentsValidationError).fields.map((f) => f.field)).toEqual([
      'expected.amount',
      'expected.developerTrackingId',
    ]);
    expect(verifyCount(fake, cheap.paymentId)).toBe(0);

    // The cheap payment's own webhook still confirms it.
    answerVerify(fake, cheap.paymentId, { status: 'SUCCESS', amount: 1, trackingId: 'order-cheap' });
    expect((await fetch(`${router.url}/${cheap.token}?payment_id=${cheap.paymentId}`, { method: 'POST' })).status).toBe(
      200,
    );
    expect(seen.map((s) => [s.callback, s.event.paymentId])).toEqual([['confirmed', cheap.paymentId]]);
  });

  it('what the caller passes and what was recorded agreeing: confirmed once, no warning', async () => {
    const logged: string[] = [];
    const client = newClient(undefined, undefined, logged);
    const seen: Seen[] = [];
    await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('agree'), { amount: '12500', developerTrackingId: 'order-agree' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 12500, trackingId: 'order-agree' });
    await expect(
      client.reconcilePayment(p.paymentId, { expected: { amount: '12500', developerTrackingId: 'order-agree' } }),
    ).resolves.toMatchObject({
      outcome: 'confirmed',
      handled: true,
    });
    expect(seen.map((s) => s.callback)).toEqual(['confirmed']);
    expect(logged.filter((l) => l.includes('without comparing'))).toEqual([]);
  });

  it('nothing known (memory store after a restart, no expected): confirmed on the verified SUCCESS with a warning that the amount was not compared', async () => {
    const before = newClient();
    const p = await generateVia(before, fake, nextId('unknown'), {
      amount: '12500',
      developerTrackingId: 'order-unknown',
    });
    await before.close();
    const logged: string[] = [];
    const after = newClient(undefined, undefined, logged);
    const seen: Seen[] = [];
    await routerFor(after, seen);
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1, trackingId: 'order-unknown' });

    await expect(after.reconcilePayment(p.paymentId)).resolves.toMatchObject({ outcome: 'confirmed', handled: true });
    expect(seen.map((s) => [s.callback, s.event.amount])).toEqual([['confirmed', '1']]);
    expect(logged.filter((l) => l.includes(p.paymentId) && l.includes('without comparing its amount'))).toHaveLength(1);
  });

  it('after a restart, passing the amount is what catches a wrong one', async () => {
    const before = newClient();
    const p = await generateVia(before, fake, nextId('restart-expected'), {
      amount: '12500',
      developerTrackingId: 'order-restart-expected',
    });
    await before.close();
    const logged: string[] = [];
    const after = newClient(undefined, undefined, logged);
    const seen: Seen[] = [];
    await routerFor(after, seen);
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1, trackingId: 'order-restart-expected' });
    await expect(
      after.reconcilePayment(p.paymentId, {
        expected: { amount: '12500', developerTrackingId: 'order-restart-expected' },
      }),
    ).resolves.toMatchObject({
      outcome: 'mismatch',
    });
    expect(seen.map((s) => s.callback)).toEqual(['mismatch']);
    expect(logged.filter((l) => l.includes('without comparing'))).toEqual([]);
  });

  it("after a restart, a wrong amount passed by the caller is a mismatch that never marks the payment done: the service's own webhook still confirms it", async () => {
    const before = newClient();
    const p = await generateVia(before, fake, nextId('caller-wrong'), {
      amount: '12500',
      developerTrackingId: 'order-caller-wrong',
    });
    await before.close();
    const after = newClient();
    const seen: Seen[] = [];
    const router = await routerFor(after, seen);
    const paid = { status: 'SUCCESS', amount: 12500, trackingId: 'order-caller-wrong' };
    answerVerify(fake, p.paymentId, paid, paid);

    // A host bug (dinars for millimes): the payment is this order's, the amount the caller's error.
    await expect(
      after.reconcilePayment(p.paymentId, { expected: { amount: '12', developerTrackingId: 'order-caller-wrong' } }),
    ).resolves.toMatchObject({
      outcome: 'mismatch',
      handled: false,
    });
    expect(seen.map((s) => s.callback)).toEqual(['mismatch']);

    const delivered = await fetch(`${router.url}/${p.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: p.paymentId }),
    });
    expect(delivered.status).toBe(200);
    expect(seen.map((s) => [s.callback, s.event.amount])).toEqual([
      ['mismatch', '12500'],
      ['confirmed', '12500'],
    ]);
  });

  it('after a restart, a return URL edited to name another paid payment records and runs nothing for that payment, which still confirms on its own return', async () => {
    const before = newClient();
    const mine = await generateVia(before, fake, nextId('edited-mine'), {
      amount: '500',
      developerTrackingId: 'order-edited-mine',
    });
    const theirs = await generateVia(before, fake, nextId('edited-theirs'), {
      amount: '90000',
      developerTrackingId: 'order-edited-theirs',
    });
    await before.close();
    const logged: string[] = [];
    const after = newClient(undefined, undefined, logged);
    const seen: Seen[] = [];
    await routerFor(after, seen);
    answerVerify(fake, mine.paymentId, { status: 'PENDING', amount: 500, trackingId: 'order-edited-mine' });
    const paid = { status: 'SUCCESS', amount: 90000, trackingId: 'order-edited-theirs' };
    answerVerify(fake, theirs.paymentId, paid, paid);

    // The shop's return page for order "mine", its payment_id edited to the other order's.
    await expect(
      after.reconcilePayment(theirs.paymentId, {
        expected: { amount: '500', developerTrackingId: 'order-edited-mine' },
      }),
    ).resolves.toMatchObject({
      paymentId: theirs.paymentId,
      outcome: 'mismatch',
      handled: false,
    });
    expect(seen).toEqual([]);
    await expect(after.getOutcome(theirs.paymentId)).resolves.toBeUndefined();
    expect(logged.filter((l) => l.includes(theirs.paymentId) && l.includes('not the one expected'))).toHaveLength(1);

    await expect(
      after.reconcilePayment(theirs.paymentId, {
        expected: { amount: '90000', developerTrackingId: 'order-edited-theirs' },
      }),
    ).resolves.toMatchObject({ outcome: 'confirmed', handled: true });
    expect(seen.map((s) => [s.callback, s.event.paymentId])).toEqual([['confirmed', theirs.paymentId]]);
  });

  it("a return URL edited to name a payment another path handles meanwhile (between the return's two store reads) never reads that payment's outcome", async () => {
    const store = new DelegatingStore();
    const edited = newClient(undefined, store);
    const other = newClient(undefined, store.inner);
    const seen: Seen[] = [];
    await routerFor(other, seen);
    const theirs = await generateVia(edited, fake, nextId('raced-theirs'), {
      amount: '90000',
      developerTrackingId: 'order-raced-theirs',
    });
    answerVerify(fake, theirs.paymentId, { status: 'FAILURE', amount: 90000, trackingId: 'order-raced-theirs' });
    // The edited return read the record (none yet); before it reads the queue, the payment's own
    // return (another instance) handles it: recorded failed, out of the queue.
    let raced = false;
    store.before = async (method) => {
      if (method !== 'findPending' || raced) return;
      raced = true;
      await expect(
        other.reconcilePayment(theirs.paymentId, {
          expected: { amount: '90000', developerTrackingId: 'order-raced-theirs' },
        }),
      ).resolves.toMatchObject({ outcome: 'failed', handled: true });
    };
    const answer = await edited
      .reconcilePayment(theirs.paymentId, { expected: { amount: '500', developerTrackingId: 'order-raced-mine' } })
      .catch((error: unknown) => error);
    expect(raced).toBe(true);
    expect(answer).toBeInstanceOf(PaymentsValidationError);
    expect((answer as PaymentsValidationError).fields.map((e) => e.field).sort()).toEqual([
      'expected.amount',
      'expected.developerTrackingId',
    ]);
    expect(seen.map((s) => [s.callback, s.event.paymentId])).toEqual([['failed', theirs.paymentId]]);
  });
});

describe('the store unreachable: PaymentsStoreUnavailableError names the payment', () => {
  it('reconcilePayment: the claim cannot be taken, so nothing is verified and nothing runs', async () => {
    const store = new DelegatingStore();
    const client = newClient(undefined, store);
    const seen: Seen[] = [];
    await routerFor(client, seen);
    const p = await generateVia(client, fake, nextId('store-down'), { amount: '300' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 300 });
    store.fail.add('claim');
    const error = await client.reconcilePayment(p.paymentId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentsStoreUnavailableError);
    expect(error).toBeInstanceOf(PaymentsError);
    const e = error as PaymentsStoreUnavailableError;
    expect([e.code, e.paymentId, e.step, e.name]).toEqual([
      'STORE_UNAVAILABLE',
      p.paymentId,
      'reconcilePayment',
      'PaymentsStoreUnavailableError',
    ]);
    expect(e.message).toMatch(/^reconcilePayment: the store is unreachable \(Error: store down during claim/);
    expect(e.message).toContain(`payment ${p.paymentId} was not verified and no handler ran`);
    expect(e.message).not.toContain('was created');
    expect(JSON.parse(JSON.stringify(e))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      paymentId: p.paymentId,
      step: 'reconcilePayment',
    });
    expect(verifyCount(fake, p.paymentId)).toBe(0);
    expect(seen).toEqual([]);

    // Once the store is back, the same call settles it.
    store.fail.clear();
    await expect(client.reconcilePayment(p.paymentId)).resolves.toMatchObject({ outcome: 'confirmed', handled: true });
  });

  it('generatePayment: the payment was created but not recorded yet; its link is answered and the write retried', async () => {
    const store = new DelegatingStore();
    const client = newClient(undefined, store);
    store.fail.add('schedulePending');
    const paymentId = nextId('store-down-generate');
    await expect(generateVia(client, fake, paymentId, { amount: '300' })).resolves.toMatchObject({ paymentId });
    store.fail.clear();
    for (let i = 0; i < 100 && (await store.inner.findPending(paymentId)) === undefined; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await store.inner.findPending(paymentId)).toMatchObject({ paymentId, amount: '300' });
  });
});
