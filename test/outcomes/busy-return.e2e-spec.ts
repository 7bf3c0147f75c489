import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type PaymentsClient } from '../../lib/express/index.js';
import type { FakeService } from '../support/fake-service.js';
import {
  answerVerify,
  generateVia,
  postJson,
  startRouter,
  verifyCount,
  fakeServiceClient,
} from '../support/outcome-kit.js';
import { useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// A return (reconcilePayment) that finds the payment claimed by another path waits a little for
// its result (3 s), then answers what it truly knows: `pending`, with the last status the service
// sent (an earlier attempt's record) or '' when none is known, never a status the service did not
// send; and it spends no verify call.

const SECRET = 'whsec_busy_return_0123456789abcdef0123456';
const fakeService = useFakeServiceWithoutUnhandledRejections();
let fake: FakeService;
let n = 0;
const open: Array<{ close(): Promise<void> }> = [];

function newClient(): PaymentsClient {
  const client = fakeServiceClient(fake, SECRET);
  open.push(client);
  return client;
}

/** A router whose confirmed handler fails `failures` times, then waits for `release` before succeeding. */
async function slowRouter(client: PaymentsClient, failures: number) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  let calls = 0;
  const router = await startRouter({
    client,
    onPaymentConfirmed: async () => {
      if (++calls <= failures) throw new Error('handler down');
      started();
      await released;
    },
  });
  open.push(router);
  return { router, release, running };
}

beforeAll(() => void (fake = fakeService()));
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('a return while the webhook is still handling the payment', () => {
  it("answers pending with '' when no status is known yet, without a verify call", async () => {
    const client = newClient();
    const { router, release, running } = await slowRouter(client, 0);
    const p = await generateVia(client, fake, `pay_busy_${++n}`, { amount: '1500' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1500 });
    const webhook = postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId });
    await running;
    const started = Date.now();
    await expect(client.reconcilePayment(p.paymentId)).resolves.toEqual({
      paymentId: p.paymentId,
      status: '',
      outcome: 'pending',
      handled: false,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
    release();
    expect((await webhook).status).toBe(200);
    // Once the webhook is done, the return reads its result.
    await expect(client.reconcilePayment(p.paymentId)).resolves.toEqual({
      paymentId: p.paymentId,
      status: 'SUCCESS',
      outcome: 'confirmed',
      handled: false,
    });
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });

  it('answers pending with the last status the service sent, when an earlier attempt recorded one', async () => {
    const client = newClient();
    const { router, release, running } = await slowRouter(client, 1);
    const p = await generateVia(client, fake, `pay_busy_${++n}`, { amount: '1500' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1500 }, { status: 'SUCCESS', amount: 1500 });
    // The first delivery's handler fails (recorded: SUCCESS, handlers failed); the redelivery's is slow.
    expect((await postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId })).status).toBe(500);
    const webhook = postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId });
    await running;
    await expect(client.reconcilePayment(p.paymentId)).resolves.toEqual({
      paymentId: p.paymentId,
      status: 'SUCCESS',
      outcome: 'pending',
      handled: false,
    });
    expect(verifyCount(fake, p.paymentId)).toBe(2);
    release();
    expect((await webhook).status).toBe(200);
  });

  it('answers as soon as the other path has recorded its result', async () => {
    const client = newClient();
    const { router, release, running } = await slowRouter(client, 0);
    const p = await generateVia(client, fake, `pay_busy_${++n}`, { amount: '1500' });
    answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 1500 });
    const webhook = postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId });
    await running;
    const returned = client.reconcilePayment(p.paymentId);
    setTimeout(release, 300);
    await expect(returned).resolves.toEqual({
      paymentId: p.paymentId,
      status: 'SUCCESS',
      outcome: 'confirmed',
      handled: false,
    });
    expect((await webhook).status).toBe(200);
    expect(verifyCount(fake, p.paymentId)).toBe(1);
  });
});
