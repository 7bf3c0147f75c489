import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it, jest } from '@jest/globals';
import express from 'express';
import { createPaymentsClient, createWebhookRouter } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { DelegatingStore, quietLogger } from '../support/outcome-kit.js';
import { SYSTEM_CLOCK, type Clock } from '../../lib/core/time/time.clock.js';

// Issue 33 item 1: a created payment is never lost to a slow store. Once the service has created
// the payment, generatePayment answers its link whatever the store does (slow: answering after
// 6 s; down); the store writes go on in the background and the payment is confirmed afterwards.

jest.setTimeout(60_000);
const SECRET = 'whsec_slow_store_0123456789abcdef012345';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(probe: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await sleep(50);
  }
}

async function setUp(clock?: Clock) {
  const sandbox = await PaymentsSandbox.start();
  const store = new DelegatingStore();
  const confirmed: string[] = [];
  const logs: string[] = [];
  const app = express();
  const http: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const client = createPaymentsClient({
    ...sandbox.options(),
    store,
    logger: quietLogger(logs),
    webhook: { publicUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}/hook`, secret: SECRET },
    reconciliation: { enabled: false },
    ...(clock ? { clock } : {}),
  });
  app.use('/hook', createWebhookRouter({ client, onPaymentConfirmed: (e) => void confirmed.push(e.paymentId) }));
  const close = async () => {
    await client.close();
    await new Promise((r) => http.close(r));
    await sandbox.close();
  };
  return { sandbox, store, client, confirmed, logs, close };
}

type SetUp = Awaited<ReturnType<typeof setUp>>;

/** The store answers again: the background write queues the payment, and its webhook confirms it once. */
async function storeBackThenPaid({ store, sandbox, confirmed }: SetUp, paymentId: string): Promise<void> {
  store.fail.clear();
  await until(
    async () => (await store.inner.findPending(paymentId)) !== undefined,
    'the payment queued once the store is back',
  );
  expect(await sandbox.completePayment(paymentId)).toMatchObject({ delivered: true, lastStatus: 200 });
  expect(confirmed).toEqual([paymentId]);
}

it('answers the link while the store takes 6 s to answer, records the payment afterwards, and confirms it', async () => {
  const { sandbox, store, client, confirmed, close } = await setUp();
  try {
    // Every store call answers after 6 s, as a store behind a saturated pool or a cold PGlite would.
    const answered: string[] = [];
    let slow = true;
    store.before = async (method) => {
      if (!slow) return;
      await sleep(6000);
      answered.push(method);
    };
    const payment = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-slow' });
    // The link came back before the store answered any of the payment's writes.
    expect(payment.link).toMatch(/^http/);
    expect(sandbox.getPayment(payment.paymentId)).toBeDefined();
    expect(answered).not.toContain('saveBinding');
    expect(answered).not.toContain('schedulePending');
    // The writes land once the store answers; then the store is quick again.
    await until(async () => answered.includes('schedulePending'), 'the payment recorded');
    slow = false;
    expect(await store.inner.findPending(payment.paymentId)).toMatchObject({
      paymentId: payment.paymentId,
      amount: '12500',
    });
    expect(await sandbox.completePayment(payment.paymentId)).toMatchObject({ delivered: true, lastStatus: 200 });
    expect(confirmed).toEqual([payment.paymentId]);
  } finally {
    await close();
  }
});

it('answers the link while the store is down, retries its writes in the background, and confirms it', async () => {
  const setup = await setUp();
  const { store, client, logs, close } = setup;
  try {
    for (const m of ['saveBinding', 'schedulePending', 'claim', 'findBinding', 'release'] as const) store.fail.add(m);
    const payment = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-down' });
    expect(payment.link).toMatch(/^http/);
    expect(logs.join('\n')).toContain(
      `payment ${payment.paymentId} was created at the service; the store did not take it yet`,
    );
    expect(await store.inner.findPending(payment.paymentId)).toBeUndefined();
    // Back up: the background write records the payment for the plugin's own re-check.
    await storeBackThenPaid(setup, payment.paymentId);
  } finally {
    await close();
  }
});

it("keeps retrying its writes when the instance's wall clock steps ahead while the store is down (soak seed 510545)", async () => {
  // An NTP correction or a restored VM snapshot moves the wall clock, not the monotonic time: the
  // writes are tried for the payment's session on the latter, so the payment is still recorded.
  let stepMs = 0;
  const clock: Clock = { ...SYSTEM_CLOCK, now: () => Date.now() + stepMs };
  const setup = await setUp(clock);
  const { store, client, logs, close } = setup;
  try {
    for (const m of ['saveBinding', 'schedulePending', 'claim', 'findBinding', 'release', 'now'] as const)
      store.fail.add(m);
    const payment = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-step' });
    stepMs = 2 * 3_600_000;
    await sleep(1_500);
    expect(logs.join('\n')).not.toContain('could not be recorded in the store');
    await storeBackThenPaid(setup, payment.paymentId);
  } finally {
    await close();
  }
});

it('says what to do when the store never takes the payment before the client closes', async () => {
  const { store, client, logs, close } = await setUp();
  store.fail.add('saveBinding');
  const payment = await client.generatePayment({ amount: '12500' });
  await close();
  expect(logs.join('\n')).toContain(
    `payment ${payment.paymentId} was created at the service but could not be recorded in the store`,
  );
  expect(logs.join('\n')).toContain(`call reconcilePayment('${payment.paymentId}') once the store answers again`);
});
