import { randomUUID } from 'node:crypto';
import { type PaymentsStore } from '../core/index.js';
import {
  binding,
  LONG_MS,
  PAST_SHORT_MS,
  SHORT_MS,
  sleep,
  whileFresh,
  type ContractContext,
} from './contract.support.js';

/** The contract of bindings and claims. */
export function describeClaims(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  const { key, owner } = c;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  describe('bindings', () => {
    it('finds a saved binding, field for field', async () => {
      const token = randomUUID();
      const saved = binding();
      await store.saveBinding(token, saved, LONG_MS);
      await expect(store.findBinding(token)).resolves.toStrictEqual(saved);
    });

    it('keeps an absent developerTrackingId absent', async () => {
      const token = randomUUID();
      const { developerTrackingId: _omitted, ...withoutTracking } = binding();
      await store.saveBinding(token, withoutTracking, LONG_MS);
      const found = await store.findBinding(token);
      expect(found).toStrictEqual(withoutTracking);
      expect(found && 'developerTrackingId' in found).toBe(false);
    });

    it('answers undefined for an unknown token', async () => {
      await expect(store.findBinding(randomUUID())).resolves.toBeUndefined();
    });

    it('stores a copy: changing the saved object afterwards changes nothing', async () => {
      const token = randomUUID();
      const saved = binding({ amount: '1000' });
      await store.saveBinding(token, saved, LONG_MS);
      saved.amount = '999999';
      expect((await store.findBinding(token))?.amount).toBe('1000');
    });

    it('returns a copy: changing a found binding does not change the stored one', async () => {
      const token = randomUUID();
      await store.saveBinding(token, binding({ amount: '1000' }), LONG_MS);
      const first = await store.findBinding(token);
      expect(first).toBeDefined();
      first!.amount = '999999';
      expect((await store.findBinding(token))?.amount).toBe('1000');
    });

    it('replaces the binding when a token is saved again', async () => {
      const token = randomUUID();
      await store.saveBinding(token, binding({ paymentId: 'first' }), LONG_MS);
      await store.saveBinding(token, binding({ paymentId: 'second' }), LONG_MS);
      expect((await store.findBinding(token))?.paymentId).toBe('second');
    });

    it('keeps bindings of different tokens apart', async () => {
      const [a, b] = [randomUUID(), randomUUID()];
      await store.saveBinding(a, binding({ paymentId: 'pay-a' }), LONG_MS);
      await store.saveBinding(b, binding({ paymentId: 'pay-b' }), LONG_MS);
      expect((await store.findBinding(a))?.paymentId).toBe('pay-a');
      expect((await store.findBinding(b))?.paymentId).toBe('pay-b');
    });

    it('forgets a binding once its TTL has passed', async () => {
      const token = await whileFresh(async () => {
        const token = randomUUID();
        const saved = binding();
        await store.saveBinding(token, saved, SHORT_MS);
        await expect(store.findBinding(token)).resolves.toStrictEqual(saved);
        return token;
      });
      await sleep(PAST_SHORT_MS);
      await expect(store.findBinding(token)).resolves.toBeUndefined();
    });

    it('does not mix bindings with delivery records of the same id', async () => {
      const id = randomUUID();
      await store.saveBinding(id, binding(), LONG_MS);
      await expect(store.claim(id, owner(), LONG_MS)).resolves.toBe('claimed');
      expect(await store.findBinding(id)).toBeDefined();
    });
  });

  describe('claims', () => {
    it('is idempotent for the same owner (a resent claim gets its claim back)', async () => {
      const k = key();
      const me = owner();
      await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
      await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
      await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
      await expect(store.claim(k, me, LONG_MS)).resolves.toBe('done');
    });

    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      it(`refuses a lease or TTL of ${bad}`, async () => {
        await expect(store.claim(key(), owner(), bad)).rejects.toBeInstanceOf(RangeError);
        await expect(store.saveBinding(randomUUID(), binding(), bad)).rejects.toBeInstanceOf(RangeError);
      });

    it('grants the first claim and answers busy to another owner', async () => {
      const k = key();
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
    });

    it('keeps claims of different events apart', async () => {
      const [a, b] = [key(), key()];
      await expect(store.claim(a, owner(), LONG_MS)).resolves.toBe('claimed');
      await expect(store.claim(b, owner(), LONG_MS)).resolves.toBe('claimed');
    });

    it('accepts event keys with separators, spaces and non-ASCII characters', async () => {
      const k = `payment.confirmed:${randomUUID()}:a b/c*?[ü€]`;
      const me = owner();
      await expect(store.claim(k, me, LONG_MS)).resolves.toBe('claimed');
      await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
    });

    it('lets the owner mark the event done, after which every claim answers done', async () => {
      const k = key();
      const me = owner();
      await store.claim(k, me, LONG_MS);
      await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(true);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
      await expect(store.claim(k, me, LONG_MS)).resolves.toBe('done');
    });

    it('answers false to a second markDone of a done event', async () => {
      const k = key();
      const me = owner();
      await store.claim(k, me, LONG_MS);
      await store.markDone(k, me, LONG_MS);
      await expect(store.markDone(k, me, LONG_MS)).resolves.toBe(false);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
    });

    it('refuses markDone by another owner and leaves the claim with its holder', async () => {
      const k = key();
      const holder = owner();
      await store.claim(k, holder, LONG_MS);
      await expect(store.markDone(k, owner(), LONG_MS)).resolves.toBe(false);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
      await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
    });

    it('refuses markDone of an event nobody claimed, and records nothing', async () => {
      const k = key();
      await expect(store.markDone(k, owner(), LONG_MS)).resolves.toBe(false);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
    });

    it('lets the owner release the claim, so that a redelivery can claim it', async () => {
      const k = key();
      const first = owner();
      await store.claim(k, first, LONG_MS);
      await expect(store.release(k, first)).resolves.toBeUndefined();
      const second = owner();
      await expect(store.claim(k, second, LONG_MS)).resolves.toBe('claimed');
      // The released owner no longer holds anything.
      await expect(store.markDone(k, first, LONG_MS)).resolves.toBe(false);
      await expect(store.markDone(k, second, LONG_MS)).resolves.toBe(true);
    });

    it('ignores release by another owner', async () => {
      const k = key();
      const holder = owner();
      await store.claim(k, holder, LONG_MS);
      await store.release(k, owner());
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
      await expect(store.markDone(k, holder, LONG_MS)).resolves.toBe(true);
    });

    it('ignores release of a done event, even by its owner', async () => {
      const k = key();
      const me = owner();
      await store.claim(k, me, LONG_MS);
      await store.markDone(k, me, LONG_MS);
      await store.release(k, me);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
    });

    it('resolves release of an event nobody claimed', async () => {
      await expect(store.release(key(), owner())).resolves.toBeUndefined();
    });

    it('lets another owner claim once the lease expired, and then refuses the old owner', async () => {
      const { k, crashed } = await whileFresh(async () => {
        const k = key();
        const crashed = owner();
        await expect(store.claim(k, crashed, SHORT_MS)).resolves.toBe('claimed');
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
        return { k, crashed };
      });
      await sleep(PAST_SHORT_MS);
      const next = owner();
      await expect(store.claim(k, next, LONG_MS)).resolves.toBe('claimed');
      await expect(store.markDone(k, crashed, LONG_MS)).resolves.toBe(false);
      await store.release(k, crashed);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('busy');
      await expect(store.markDone(k, next, LONG_MS)).resolves.toBe(true);
    });

    it('refuses markDone by an owner whose lease expired even when nobody took over', async () => {
      const k = key();
      const slow = owner();
      await store.claim(k, slow, SHORT_MS);
      await sleep(PAST_SHORT_MS);
      await expect(store.markDone(k, slow, LONG_MS)).resolves.toBe(false);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
    });

    it('forgets that an event is done once the done TTL has passed', async () => {
      const k = await whileFresh(async () => {
        const k = key();
        const me = owner();
        await store.claim(k, me, LONG_MS);
        await store.markDone(k, me, SHORT_MS);
        await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('done');
        return k;
      });
      await sleep(PAST_SHORT_MS);
      await expect(store.claim(k, owner(), LONG_MS)).resolves.toBe('claimed');
    });

    it('grants exactly one of 50 concurrent claims of one event', async () => {
      const k = key();
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.claim(k, owner(), LONG_MS)));
      expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'busy')).toHaveLength(49);
    });

    it('answers done to every one of 20 concurrent claims of a done event', async () => {
      const k = key();
      const me = owner();
      await store.claim(k, me, LONG_MS);
      await store.markDone(k, me, LONG_MS);
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.claim(k, owner(), LONG_MS)));
      expect(new Set(outcomes)).toEqual(new Set(['done']));
    });

    it('lets exactly one of concurrent owners mark done after a lease race', async () => {
      const k = key();
      const owners = Array.from({ length: 10 }, owner);
      const outcomes = await Promise.all(owners.map((o) => store.claim(k, o, LONG_MS)));
      const done = await Promise.all(owners.map((o) => store.markDone(k, o, LONG_MS)));
      expect(done.filter(Boolean)).toHaveLength(1);
      expect(done.indexOf(true)).toBe(outcomes.indexOf('claimed'));
    });
  });
}
