import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type PaymentsClient } from '../../lib/express/index.js';
import { MemoryPaymentsStore, type OutcomeRecord } from '../../lib/core/store/index.js';
import type { FakeService } from '../support/fake-service.js';
import { answerVerify, generateVia, postJson, startRouter, fakeServiceClient } from '../support/outcome-kit.js';
import { useFakeServiceWithoutUnhandledRejections } from '../faults/support/guards.js';

// A return to a payment already settled reads its record; when the store cannot give it (an
// outage that began after the claim), the answer comes from a fresh verify, judged as any other:
// a payment settled as a mismatch is never told "confirmed" by its status alone.

const SECRET = 'whsec_unread_record_0123456789abcdef012345';
const fakeService = useFakeServiceWithoutUnhandledRejections();
let fake: FakeService;
const open: Array<{ close(): Promise<void> }> = [];

/** A store whose outcome records cannot be read while `unreadable` is set. */
class UnreadableOutcomes extends MemoryPaymentsStore {
  unreadable = false;
  override async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    if (this.unreadable) throw new Error('connect ECONNREFUSED (store down)');
    return super.getOutcome(paymentId);
  }
}

beforeAll(() => void (fake = fakeService()));
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('a return to a settled payment whose record the store cannot give', () => {
  it('a payment settled as a mismatch (verify names another order) reads mismatch, not confirmed', async () => {
    const store = new UnreadableOutcomes();
    const client: PaymentsClient = fakeServiceClient(fake, SECRET, { store });
    open.push(client);
    const router = await startRouter({ client, onPaymentConfirmed: async () => undefined });
    open.push(router);
    const p = await generateVia(client, fake, 'pay_unread_1', { amount: '1500', developerTrackingId: 'order-1' });
    const answer = { status: 'SUCCESS', amount: 1500, trackingId: 'order-1-other' };
    answerVerify(fake, p.paymentId, answer, answer);
    expect((await postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId })).status).toBe(200);
    expect((await store.getOutcome(p.paymentId))?.outcome).toBe('mismatch');

    store.unreadable = true;
    const result = await client.reconcilePayment(p.paymentId, {
      expected: { amount: '1500', developerTrackingId: 'order-1' },
    });
    expect(result).toMatchObject({ paymentId: p.paymentId, status: 'SUCCESS', outcome: 'mismatch', handled: false });
  });
});
