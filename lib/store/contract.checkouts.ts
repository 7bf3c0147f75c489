import { randomUUID } from 'node:crypto';
import { BasicPaymentsStore, type CheckoutStanding, type OrderCheckout, type PaymentsStore } from '../core/index.js';
import { checkoutStepsOf, orderLedgerOf, type CheckoutSteps } from '../core/store/index.js';
import { LONG_MS, PAST_SHORT_MS, SHORT_MS, sleep, whileFresh, type ContractContext } from './contract.support.js';

/** The cancellation notes' prefix the contract uses (the plugin's: a control character, then the registration). */
const NOTES = '\u001fcancelled/contract/';

/**
 * The contract of an order's checkout steps (`openCheckout`, `closeCheckout`; built from the basic
 * methods for a store without them): the order's lock, the checkout read with it and the found
 * payment's standing, the checkout's write with the lock's release.
 */
export function describeCheckoutSteps(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  const { name } = c;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  describe('checkout steps (the order held while its payment is opened)', () => {
    const order = () => `order-${randomUUID()} {é}`;
    const steps = (): CheckoutSteps => {
      const ledger = orderLedgerOf(store);
      if (!ledger) throw new Error(`${name} has no order ledger`);
      return checkoutStepsOf(ledger);
    };
    const open = (orderKey: string, owner = c.owner(), leaseMs = LONG_MS) =>
      steps().open({ orderKey, owner, leaseMs, cancellationPrefix: NOTES });
    // BasicPaymentsStore keeps no checkout by default: only the lock's rules apply to it.
    const keepsCheckouts = () => !(store instanceof BasicPaymentsStore);
    const checkout = (paymentId = `pay_${randomUUID()}`): OrderCheckout => ({
      paymentId,
      link: `https://pay.example.com/pay/${paymentId}?x="y"`,
      amount: '12500',
      fingerprint: '{"successLink":"https://shop.example.com/ok"}',
      sessionEndsAt: '2030-01-01T00:00:00.000Z',
    });

    it('gives the lock of an order to exactly one of two concurrent callers, and again to its owner', async () => {
      const o = order();
      const [a, b] = [c.owner(), c.owner()];
      const answers = await Promise.all([open(o, a), open(o, b)]);
      expect(answers.map((x) => x.lock).sort()).toEqual(['busy', 'claimed']);
      const holder = answers[0].lock === 'claimed' ? a : b;
      expect((await open(o, holder)).lock).toBe('claimed');
      expect((await open(o)).lock).toBe('busy');
      expect((await open(order())).lock).toBe('claimed');
    });

    it('frees the lock on its owner closing, never on another caller closing', async () => {
      const o = order();
      const a = c.owner();
      expect((await open(o, a)).lock).toBe('claimed');
      await steps().close(o, c.owner());
      expect((await open(o)).lock).toBe('busy');
      await steps().close(o, a);
      expect((await open(o)).lock).toBe('claimed');
    });

    it('frees the lock by itself once its lease has passed', async () => {
      // A new order each try: a slow try's second caller may have taken the lapsed lock for long.
      let o = order();
      await whileFresh(async () => {
        o = order();
        expect((await open(o, c.owner(), SHORT_MS)).lock).toBe('claimed');
        expect((await open(o)).lock).toBe('busy');
      });
      await sleep(PAST_SHORT_MS);
      expect((await open(o)).lock).toBe('claimed');
    });

    it("answers the checkout the lock's previous owner saved, field for field, to the next owner", async () => {
      if (!keepsCheckouts()) return;
      const o = order();
      const [a, b] = [c.owner(), c.owner()];
      expect(await open(o, a)).toEqual({ lock: 'claimed' });
      expect(await open(o, b)).toEqual({ lock: 'busy' });
      const saved = { ...checkout(), superseded: [`pay_${randomUUID()}`] };
      await steps().close(o, a, { checkout: saved, ttlMs: LONG_MS });
      const next = await open(o, b);
      expect(next.lock).toBe('claimed');
      expect(next.checkout).toEqual(saved);
      expect(await orderLedgerOf(store)?.findCheckout(o)).toEqual(saved);
    });

    it('lets exactly one of 8 concurrent callers open a checkout when each opens one only if it holds the order and finds none', async () => {
      if (!keepsCheckouts()) return;
      const o = order();
      const opened: string[] = [];
      const caller = async () => {
        const owner = c.owner();
        for (let tries = 0; tries < 200; tries++) {
          const found = await open(o, owner);
          if (found.lock !== 'claimed') {
            await sleep(5);
            continue;
          }
          if (found.checkout) return steps().close(o, owner);
          const mine = checkout();
          opened.push(mine.paymentId);
          return steps().close(o, owner, { checkout: mine, ttlMs: LONG_MS });
        }
        throw new Error('the order stayed busy');
      };
      await Promise.all(Array.from({ length: 8 }, caller));
      expect(opened).toHaveLength(1);
      expect((await open(o)).checkout?.paymentId).toBe(opened[0]);
    });

    it("saves a checkout with its TTL, and forgets it after (the order's lock apart)", async () => {
      if (!keepsCheckouts()) return;
      const o = order();
      const owner = c.owner();
      await whileFresh(async () => {
        await open(o, owner);
        const saved = checkout();
        await steps().close(o, owner, { checkout: saved, ttlMs: SHORT_MS });
        expect(await orderLedgerOf(store)?.findCheckout(o)).toEqual(saved);
      });
      await sleep(PAST_SHORT_MS);
      expect(await orderLedgerOf(store)?.findCheckout(o)).toBeUndefined();
      expect(await open(o)).toEqual({ lock: 'claimed' });
    });

    it('saves the checkout of a caller whose lock another holds, and leaves that lock held', async () => {
      if (!keepsCheckouts()) return;
      const o = order();
      const a = c.owner();
      expect((await open(o, a)).lock).toBe('claimed');
      const saved = checkout();
      await steps().close(o, c.owner(), { checkout: saved, ttlMs: LONG_MS });
      const next = await open(o);
      expect(next.lock).toBe('busy');
      expect(next.checkout).toEqual(saved);
      expect((await open(o, a)).lock).toBe('claimed');
    });

    it("answers the found payment's standing exactly, when it answers one", async () => {
      if (!keepsCheckouts()) return;
      const ledger = orderLedgerOf(store);
      const standingOf = async (
        prepare: (paymentId: string) => Promise<void>,
      ): Promise<CheckoutStanding | undefined> => {
        const o = order();
        const owner = c.owner();
        const saved = checkout();
        await open(o, owner);
        await steps().close(o, owner, { checkout: saved, ttlMs: LONG_MS });
        await prepare(saved.paymentId);
        return (await open(o)).standing;
      };
      const none = await standingOf(async () => undefined);
      if (none !== undefined) expect(none).toEqual({ outcome: undefined, cancelled: false });
      const failed = await standingOf(async (paymentId) => {
        const at = new Date().toISOString();
        await store.saveOutcome(
          {
            paymentId,
            outcome: 'failed',
            status: 'FAILED',
            source: 'webhook',
            handlers: 'succeeded',
            attempts: 1,
            updatedAt: at,
          },
          LONG_MS,
        );
        await ledger?.settleOrder(NOTES + paymentId, { paymentId, amount: '0' }, LONG_MS);
      });
      if (failed !== undefined) expect(failed).toEqual({ outcome: 'failed', cancelled: true });
      // A note under the payment's key that names another payment is no cancellation of it.
      const other = await standingOf(async (paymentId) => {
        await ledger?.settleOrder(NOTES + paymentId, { paymentId: `pay_${randomUUID()}`, amount: '0' }, LONG_MS);
      });
      if (other !== undefined) expect(other).toEqual({ outcome: undefined, cancelled: false });
    });
  });
}
