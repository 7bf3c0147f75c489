import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cancellationKey } from '../../lib/core/api/payments.cancellations.js';
import {
  MemoryPaymentsStore,
  type CheckoutOpen,
  type CheckoutOpening,
  type PaymentOutcome,
} from '../../lib/store/index.js';
import { FakeService, OK } from '../support/fake-service.js';
import { fakeServiceClient } from '../support/outcome-kit.js';

// A store whose openCheckout cannot read the found payment's standing in the same step (Redis on a
// cluster: the outcome record and the cancellation note live in other slots) leaves it out; the
// checkout then reads it itself, and a payment that can no longer be paid is never answered again.

const GENERATE = '/api/v2/generate_payment';
let fake: FakeService;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(async () => {
  await fake.close();
});

/** The memory store, its openCheckout answering without the standing. */
class NoStandingStore extends MemoryPaymentsStore {
  readonly opened: CheckoutOpening[] = [];
  override async openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    const { standing: _left, ...opening } = await super.openCheckout(open);
    this.opened.push(opening);
    return opening;
  }
}

describe('checkout reuse with a store that leaves the standing out of openCheckout', () => {
  const cases: Array<{ name: string; learnt: PaymentOutcome | 'cancelled' | undefined; reused: boolean }> = [
    { name: 'nothing learnt yet: the open payment is answered', learnt: undefined, reused: true },
    { name: 'pending: answered', learnt: 'pending', reused: true },
    { name: 'declined (failed): a new payment', learnt: 'failed', reused: false },
    { name: 'expired: a new payment', learnt: 'expired', reused: false },
    { name: 'cancelled: a new payment', learnt: 'cancelled', reused: false },
  ];

  it.each(cases)('$name', async ({ learnt, reused }) => {
    const store = new NoStandingStore();
    const client = fakeServiceClient(fake, 'whsec_checkout_standing_0123456789abcdef', { store });
    try {
      const order = `order-${randomUUID()}`;
      fake.reset();
      fake.reply(GENERATE, OK.generate(`pay_${randomUUID()}`), OK.generate(`pay_${randomUUID()}`));
      const first = await client.generatePayment({ amount: '12500', developerTrackingId: order });
      if (learnt === 'cancelled') {
        await store.settleOrder(
          cancellationKey(client.name, first.paymentId),
          { paymentId: first.paymentId, amount: '0' },
          60_000,
        );
      } else if (learnt !== undefined) {
        await store.saveOutcome(
          {
            paymentId: first.paymentId,
            outcome: learnt,
            status: 'X',
            source: 'webhook',
            handlers: 'succeeded',
            attempts: 1,
            updatedAt: new Date().toISOString(),
          },
          60_000,
        );
      }
      const again = await client.generatePayment({ amount: '12500', developerTrackingId: order });
      expect(store.opened.at(-1)?.checkout?.paymentId).toBe(first.paymentId);
      expect(store.opened.at(-1)?.standing).toBeUndefined();
      expect(again.paymentId === first.paymentId).toBe(reused);
      expect(fake.requests.filter((r) => r.path === GENERATE)).toHaveLength(reused ? 1 : 2);
    } finally {
      await client.close();
    }
  });
});
