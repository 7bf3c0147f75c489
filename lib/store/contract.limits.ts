import { randomUUID } from 'node:crypto';
import type { RateLimiter } from '../core/index.js';
import type { StoreContractHooks } from './contract.hooks.js';
import { LONG_MS, PAST_SHORT_MS, SHORT_MS, sleep, whileFresh } from './contract.support.js';

/**
 * The behaviour every {@link RateLimiter} must have (within a describe whose beforeEach makes the
 * limiter). Keys are random per test, so limiters may share a backend.
 * @param hooks the test runner's functions
 * @param limiter the limiter of the current test
 */
export function describeRateLimiterContract(hooks: StoreContractHooks, limiter: () => RateLimiter): void {
  const { describe, it, expect } = hooks;
  describe('rate limits', () => {
    const key = () => `unsigned:pay_${randomUUID()}`;

    it('takes a free slot once: a second take within the window answers false', async () => {
      const k = key();
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(true);
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(false);
      await expect(limiter().take(k, SHORT_MS)).resolves.toBe(false);
    });

    it('frees the slot once the window has passed', async () => {
      const k = await whileFresh(async () => {
        const k = key();
        await expect(limiter().take(k, SHORT_MS)).resolves.toBe(true);
        await expect(limiter().take(k, LONG_MS)).resolves.toBe(false);
        return k;
      });
      await sleep(PAST_SHORT_MS);
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(true);
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(false);
    });

    it('free() ends the window early', async () => {
      const k = key();
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(true);
      await expect(limiter().free(k)).resolves.toBeUndefined();
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(true);
      await expect(limiter().take(k, LONG_MS)).resolves.toBe(false);
    });

    it('resolves free() of a slot nobody took', async () => {
      await expect(limiter().free(key())).resolves.toBeUndefined();
    });

    it('keeps the slots of different keys apart, special characters included', async () => {
      const [a, b] = [key(), `${key()}:a b/c*?[ü€]`];
      await expect(limiter().take(a, LONG_MS)).resolves.toBe(true);
      await expect(limiter().take(b, LONG_MS)).resolves.toBe(true);
      await limiter().free(a);
      await expect(limiter().take(b, LONG_MS)).resolves.toBe(false);
    });

    it('gives a slot to exactly one of two concurrent takes, and of 20', async () => {
      const two = key();
      const pair = await Promise.all([limiter().take(two, LONG_MS), limiter().take(two, LONG_MS)]);
      expect(pair.filter(Boolean)).toHaveLength(1);
      const many = key();
      const takes = await Promise.all(Array.from({ length: 20 }, () => limiter().take(many, LONG_MS)));
      expect(takes.filter(Boolean)).toHaveLength(1);
    });

    it('gives an expired slot to exactly one of 10 concurrent takes', async () => {
      const k = key();
      await limiter().take(k, SHORT_MS);
      await sleep(PAST_SHORT_MS);
      const takes = await Promise.all(Array.from({ length: 10 }, () => limiter().take(k, LONG_MS)));
      expect(takes.filter(Boolean)).toHaveLength(1);
    });

    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      it(`refuses a window of ${bad}`, async () => {
        await expect(limiter().take(key(), bad)).rejects.toBeInstanceOf(RangeError);
      });
  });
}
