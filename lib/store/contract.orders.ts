import { randomUUID } from 'node:crypto';
import { BasicPaymentsStore, type OrderCheckout, type OrderLedger, type PaymentsStore } from '../core/index.js';
import { orderLedgerOf } from '../core/store/index.js';
import { LONG_MS, PAST_SHORT_MS, SHORT_MS, sleep, whileFresh, type ContractContext } from './contract.support.js';

/** The contract of the order ledger: one confirmation per order, one payment per checkout. */
export function describeOrders(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  const { name } = c;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  describe('orders (one confirmation per order, one payment per checkout)', () => {
    const order = () => `order-${randomUUID()}`;
    const ledger = (): OrderLedger => {
      const found = orderLedgerOf(store);
      if (!found) throw new Error(`${name} has no order ledger`);
      return found;
    };
    const paid = (paymentId = `pay_${randomUUID()}`, amount = '12500') => ({ paymentId, amount });

    it('records the first payment that settles an order, and answers it to every later one', async () => {
      const o = order();
      const first = paid();
      expect(await ledger().findOrderSettlement(o)).toBeUndefined();
      expect(await ledger().settleOrder(o, first, LONG_MS)).toEqual(first);
      expect(await ledger().settleOrder(o, paid(undefined, '9000'), LONG_MS)).toEqual(first);
      expect(await ledger().settleOrder(o, first, LONG_MS)).toEqual(first);
      expect(await ledger().findOrderSettlement(o)).toEqual(first);
    });

    it('keeps orders apart, whatever characters their keys hold', async () => {
      const keys = [order(), `{${order()}}`, `${order()} :é/ü`, `${order()}}{`];
      const payments = keys.map(() => paid());
      for (const [i, k] of keys.entries())
        expect(await ledger().settleOrder(k, payments[i], LONG_MS)).toEqual(payments[i]);
      for (const [i, k] of keys.entries()) expect(await ledger().findOrderSettlement(k)).toEqual(payments[i]);
    });

    it('lets exactly one of 30 concurrent payments settle one order, and tells every one the same', async () => {
      const o = order();
      const payments = Array.from({ length: 30 }, () => paid());
      const answers = await Promise.all(payments.map((p) => ledger().settleOrder(o, p, LONG_MS)));
      const winner = answers[0];
      expect(payments.map((p) => p.paymentId)).toContain(winner.paymentId);
      expect(answers.every((a) => a.paymentId === winner.paymentId)).toBe(true);
    });

    it('forgets a settlement once its TTL has passed, so another payment can settle the order', async () => {
      if (store instanceof BasicPaymentsStore) return; // its claim-based default expires the same way; timing covered once
      const o = order();
      await ledger().settleOrder(o, paid(), SHORT_MS);
      await sleep(PAST_SHORT_MS);
      expect(await ledger().findOrderSettlement(o)).toBeUndefined();
      const next = paid();
      expect(await ledger().settleOrder(o, next, LONG_MS)).toEqual(next);
    });

    it('saves an open checkout field for field, replaces it, and forgets it after its TTL', async () => {
      // BasicPaymentsStore keeps no checkout by default (generatePayment then opens a payment per call).
      if (store instanceof BasicPaymentsStore) return;
      const o = await whileFresh(async () => {
        const o = order();
        const checkout: OrderCheckout = {
          paymentId: `pay_${randomUUID()}`,
          link: 'https://pay.example.com/pay/1?x="y"',
          amount: '12500',
          fingerprint: '{"successLink":"https://shop.example.com/ok"}',
          sessionEndsAt: '2030-01-01T00:00:00.000Z',
        };
        expect(await ledger().findCheckout(o)).toBeUndefined();
        await ledger().saveCheckout(o, checkout, LONG_MS);
        expect(await ledger().findCheckout(o)).toEqual(checkout);
        const next = {
          ...checkout,
          paymentId: `pay_${randomUUID()}`,
          amount: '9000',
          superseded: [checkout.paymentId],
        };
        await ledger().saveCheckout(o, next, SHORT_MS);
        expect(await ledger().findCheckout(o)).toEqual(next);
        // What was saved and what was found are the caller's own: changing them changes nothing stored.
        const kept = structuredClone(next);
        next.superseded.push('pay_changed_after_saving');
        (await ledger().findCheckout(o))?.superseded?.push('pay_changed_after_reading');
        expect(await ledger().findCheckout(o)).toEqual(kept);
        return o;
      });
      await sleep(PAST_SHORT_MS);
      expect(await ledger().findCheckout(o)).toBeUndefined();
    });

    it('keeps an order settled apart from its checkout', async () => {
      if (store instanceof BasicPaymentsStore) return;
      const o = order();
      const first = paid();
      await ledger().saveCheckout(
        o,
        { ...first, link: 'https://pay.example.com/l', fingerprint: '', sessionEndsAt: '2030-01-01T00:00:00.000Z' },
        LONG_MS,
      );
      expect(await ledger().findOrderSettlement(o)).toBeUndefined();
      await ledger().settleOrder(o, first, LONG_MS);
      expect((await ledger().findCheckout(o))?.paymentId).toBe(first.paymentId);
    });
  });
}
