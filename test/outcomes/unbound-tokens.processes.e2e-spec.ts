import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { bundleInstances, ok, startInstance, type AppInstance } from '../support/app-instances.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import { lastWebhookUrl, tokenOf, verifyCount } from '../support/outcome-kit.js';
import { describeWithService, REDIS_URL, redisAvailable } from '../support/services.js';
import { StallingProxy } from '../support/stalling-proxy.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';

// unbound-tokens.e2e-spec.ts's payment queued from a webhook token without a binding, with real
// processes: two app instances (child processes, fixtures/instance.app.ts) on one Redis, under a
// key prefix of the test's own. Instance A reaches Redis through a proxy (27040) that the test
// cuts before A creates the payments: the service has them, the store has neither their tokens'
// bindings nor their queue entries (A keeps retrying the writes in the background). Their webhooks
// reach instance B while the service's verify still answers PENDING (or fails): B knows the
// payment only from its signed token, whose tracking id is a hash, and queues it for a re-check.
// The genuine return (the order's tracking id and amount) is answered, never refused; a
// reconciliation pass whose verify answer names another order never confirms it under this one.
//
// Ports: the instances 27030 and 27031, the proxy 27040; the fake service on a free port.

const SECRET = 'whsec_unbound_processes_0123456789abcdef01';
const AMOUNT = 4200;
const PROXY_PORT = 27040;
const redisUp = await redisAvailable();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const children: ChildProcess[] = [];
const keyPrefix = `np-unbound-processes:${randomUUID()}:`;
let fake: FakeService;
let proxy: StallingProxy;
let bundle: ReturnType<typeof bundleInstances>;
let a: AppInstance;
let b: AppInstance;

/** A payment created through A while its store is cut: its id, its order and its webhook token. */
interface Created {
  paymentId: string;
  order: string;
  token: string;
}

let n = 0;
async function createOnA(): Promise<Created> {
  const order = `order-unbound-${randomUUID()}`;
  const paymentId = `pay_unbound_processes_${process.pid}_${++n}`;
  fake.reply(PATHS.generate, OK.generate(paymentId));
  const made = ok(
    await a.call<{ paymentId: string }>('generatePayment', { amount: String(AMOUNT), developerTrackingId: order }),
    a,
  );
  expect(made.paymentId).toBe(paymentId);
  return { paymentId, order, token: tokenOf(lastWebhookUrl(fake)) };
}

/** The service's answer to every later verify of the payment. */
function verifyAnswers(paymentId: string, status: string, trackingId: string): void {
  fake.always(verifyPath(paymentId), { status: 200, body: verifyAnswer({ status, amount: AMOUNT, trackingId }) });
}

/** The payment's webhook, delivered to B: its status. */
async function webhookToB(p: Created): Promise<number> {
  const res = await fetch(`${b.hookUrl}/${p.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payment_id: p.paymentId }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** B's queue entry of the payment, once there (or undefined after a while). */
async function queued(paymentId: string): Promise<Record<string, unknown> | null> {
  for (let i = 0; i < 50; i++) {
    const entry = ok(await b.call<Record<string, unknown> | null>('findPending', paymentId), b);
    if (entry) return entry;
    await sleep(20);
  }
  return null;
}

/**
 * A payment created on A (store cut) whose webhook reached B while its verify answered PENDING:
 * B queued it.
 */
async function queuedWhilePending(): Promise<Created> {
  const p = await createOnA();
  verifyAnswers(p.paymentId, 'PENDING', p.order);
  expect(await webhookToB(p)).not.toBe(401);
  expect(await queued(p.paymentId)).toMatchObject({ paymentId: p.paymentId, amount: String(AMOUNT) });
  return p;
}

/** B's events of the payment: [name, paymentId, developerTrackingId]. */
const eventsOf = (paymentId: string) =>
  b.events.filter((e) => e.paymentId === paymentId).map((e) => [e.name, e.paymentId, e.developerTrackingId]);

describeWithService(redisUp, `no Redis at ${REDIS_URL}`)(
  'a payment created while its instance could not reach the store, its webhook on another instance (two processes, one Redis)',
  () => {
    beforeAll(async () => {
      bundle = bundleInstances('unbound');
      fake = await FakeService.start();
      proxy = await StallingProxy.start(PROXY_PORT, Number(new URL(REDIS_URL).port || 6379));
      const service = {
        publicKey: 'pk_unbound_processes',
        privateKey: 'sk_unbound_processes_private',
        baseUrl: fake.url,
        successLink: 'https://shop.example/ok',
        failLink: 'https://shop.example/ko',
      };
      const store = (url: string) => ({ STORE: 'redis', STORE_URL: url, PREFIX: keyPrefix });
      const settings = { service, secret: SECRET, maxRetries: 0 };
      a = await startInstance(
        bundle.file,
        { ...settings, port: 27030, store: store(`redis://127.0.0.1:${PROXY_PORT}`) },
        children,
      );
      b = await startInstance(bundle.file, { ...settings, port: 27031, store: store(REDIS_URL) }, children);
      // A's store is unreachable from now on: its connections cut, the proxy no longer listening.
      await proxy.close();
    }, 60_000);

    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      // Only the processes this file started, by their handle.
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await fake?.close();
      await proxy?.close();
      bundle?.remove();
      if (redisUp) {
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${keyPrefix}*`);
        if (keys.length) await redis.del(...keys);
        await redis.quit();
      }
    }, 30_000);

    it('the genuine return (its order and amount) is answered, not refused; once paid, reconciliation confirms each once, under its order', async () => {
      const payments = [await queuedWhilePending(), await queuedWhilePending(), await queuedWhilePending()];
      const expected = (p: Created) => ({ amount: String(AMOUNT), developerTrackingId: p.order });
      for (const p of payments)
        expect([p.paymentId, await b.call('reconcilePayment', p.paymentId, { expected: expected(p) })]).toEqual([
          p.paymentId,
          { ok: expect.objectContaining({ paymentId: p.paymentId, outcome: 'pending' }) },
        ]);
      for (const p of payments) verifyAnswers(p.paymentId, 'SUCCESS', p.order);
      ok(await b.call('runReconciliation', Date.now() + 3_600_000), b);
      await sleep(100);
      for (const p of payments) {
        expect(eventsOf(p.paymentId)).toEqual([['payment.confirmed', p.paymentId, p.order]]);
        expect([p.paymentId, await b.call('reconcilePayment', p.paymentId, { expected: expected(p) })]).toEqual([
          p.paymentId,
          { ok: expect.objectContaining({ paymentId: p.paymentId, outcome: 'confirmed' }) },
        ]);
      }
      // A never had its store: B alone verified them.
      expect(a.events).toEqual([]);
    });

    it("reconciliation never confirms a verify answer naming another order under the payment's order: a mismatch; the right order's answer is confirmed", async () => {
      // Queued from a webhook that found them PENDING; one whose webhook's verify failed (503).
      const others = [await queuedWhilePending(), await queuedWhilePending()];
      const failed = await createOnA();
      fake.reply(verifyPath(failed.paymentId), { status: 503, body: { result: { status: 503, message: 'busy' } } });
      expect(await webhookToB(failed)).not.toBe(200);
      expect(verifyCount(fake, failed.paymentId)).toBe(1);
      const right = await queuedWhilePending();
      // Each is paid; the service's answer names another order, but for `right`.
      for (const p of [...others, failed]) verifyAnswers(p.paymentId, 'SUCCESS', `order-else-${randomUUID()}`);
      verifyAnswers(right.paymentId, 'SUCCESS', right.order);
      const confirmed = () => b.events.filter((e) => e.name === 'payment.confirmed').map((e) => e.paymentId);

      ok(await b.call('runReconciliation', Date.now() + 3_600_000), b);
      await sleep(100);
      for (const p of others) {
        expect(eventsOf(p.paymentId)).toEqual([
          ['payment.mismatch', p.paymentId, expect.stringMatching(/^order-else-/)],
        ]);
        expect(ok(await b.call('getOutcome', p.paymentId), b)).toMatchObject({ outcome: 'mismatch' });
      }
      expect(eventsOf(right.paymentId)).toEqual([['payment.confirmed', right.paymentId, right.order]]);
      for (const p of [...others, failed]) expect(confirmed()).not.toContain(p.paymentId);

      // The store answers A again: its writes of the payments it created land (retried in the
      // background), the queue entry of the one whose webhook's verify failed with its order.
      proxy = await StallingProxy.start(PROXY_PORT, Number(new URL(REDIS_URL).port || 6379));
      let entry: Record<string, unknown> | null = null;
      for (let i = 0; i < 100 && entry?.developerTrackingId === undefined; i++) {
        await sleep(100);
        entry = ok(await b.call<Record<string, unknown> | null>('findPending', failed.paymentId), b);
      }
      expect(entry).toMatchObject({ paymentId: failed.paymentId, developerTrackingId: failed.order });
      ok(await b.call('runReconciliation', Date.now() + 7_200_000), b);
      await sleep(100);
      expect(eventsOf(failed.paymentId)).toEqual([
        ['payment.mismatch', failed.paymentId, expect.stringMatching(/^order-else-/)],
      ]);
      for (const p of [...others, failed]) expect(confirmed()).not.toContain(p.paymentId);
      expect(a.events).toEqual([]);
    });
  },
);
