/**
 * Issue 39 item 3: the pending lane spends verify calls by evidence. Measured from outside, 20
 * abandoned checkouts cost 149 verify calls: every return of a customer who never paid started the
 * pending lane's ten fast checks. Here two instances share one store and the real sandbox; 20
 * payments nobody pays are returned to four times each, alternating instances, each return past
 * the record's 10 s memory: at most 3 verify calls each over the session (docs/confirmations.md,
 * "The call budget"). A paid customer back while verify lags, with no webhook, is still confirmed
 * within seconds by the short lane.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { MemoryPaymentsStore } from '../../lib/store/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(
    open
      .splice(0)
      .reverse()
      .map((o) => o.close()),
  );
});

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an unpaid customer returning does not start the fast lane each time', () => {
  it('20 abandoned checkouts, each returned 4 times on 2 instances: at most 3 verify calls each', async () => {
    const sandbox = await PaymentsSandbox.start();
    open.push(sandbox);
    const store = new MemoryPaymentsStore();
    const instances: PaymentsClient[] = [0, 1].map(() =>
      createPaymentsClient(sandbox.options({ store, logger: quiet })),
    );
    open.push(...instances);
    // The router registers the handlers, which starts each instance's reconciliation (the lanes).
    for (const client of instances) createWebhookRouter({ client, onPaymentConfirmed: () => undefined });
    const ids: string[] = [];
    for (let k = 0; k < 20; k++)
      ids.push(
        (await instances[k % 2].generatePayment({ amount: '4000', developerTrackingId: `order-abandoned-${k}` }))
          .paymentId,
      );
    const told: string[] = [];
    for (let round = 0; round < 4; round++) {
      const results = await Promise.all(
        ids.map((id, k) =>
          instances[(k + round) % 2]
            .reconcilePayment(id, { expected: { amount: '4000', developerTrackingId: `order-abandoned-${k}` } })
            .then((r) => r.outcome),
        ),
      );
      told.push(...results);
      // Past the record's 10 s memory of a return's PENDING, so that each round may verify.
      await sleep(10_500);
    }
    // The short lane's last check (+12 s after the first look) is over by now.
    await sleep(2_000);
    expect(new Set(told)).toEqual(new Set(['pending']));
    const calls = ids.map((id) => sandbox.verifyCalls(id));
    process.stdout.write(
      `unpaid returns: ${calls.reduce((a, b) => a + b, 0)} verify calls for ${ids.length} abandoned checkouts (max ${Math.max(...calls)})\n`,
    );
    for (const c of calls) expect(c).toBeLessThanOrEqual(3);
  }, 90_000);

  it('a paid customer back while verify lags (no webhook): the short lane confirms it within seconds', async () => {
    const sandbox = await PaymentsSandbox.start();
    open.push(sandbox);
    const store = new MemoryPaymentsStore();
    const client = createPaymentsClient(sandbox.options({ store, logger: quiet }));
    open.push(client);
    const confirmed: string[] = [];
    createWebhookRouter({ client, onPaymentConfirmed: (e) => void confirmed.push(e.source) });
    const p = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-lag' });
    await sandbox.completePayment(p.paymentId, { requireDelivery: false });
    // The service's state lags: the return's verify still answers PENDING.
    sandbox.fault(`/api/v2/verify_payment/${p.paymentId}`, {
      status: 200,
      body: JSON.stringify({
        success: true,
        result: { type: 'card', amount: 12500, status: 'PENDING', details: {} },
        status_code: 200,
        code: 0,
      }),
      times: 1,
    });
    await expect(client.reconcilePayment(p.paymentId)).resolves.toMatchObject({ outcome: 'pending' });
    for (const end = Date.now() + 20_000; confirmed.length === 0 && Date.now() < end;) await sleep(100);
    // The short lane's first check, 10 s later.
    expect(confirmed).toEqual(['reconciliation']);
  }, 30_000);
});
