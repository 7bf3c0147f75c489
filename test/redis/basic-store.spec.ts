import { describe, expect, it } from '@jest/globals';
import type { OutcomeFinish, OutcomeRecord } from '../../lib/core/store/store.types.js';
import { BasicPaymentsStore, MemoryPaymentsStore, STORE_METHODS } from '../../lib/store/index.js';
import { isPaymentsStore } from '../../lib/core/store/store.ports.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { MapPaymentsStore } from '../support/map-store.js';
import { describeStoreContract } from '../support/store-contract.js';

// BasicPaymentsStore, the base of custom stores, through the contract every store passes: its
// combined operations and rate limits over a minimal subclass on plain Maps.
describeStoreContract(
  'BasicPaymentsStore (MapPaymentsStore)',
  async () => ({ store: new MapPaymentsStore(), cleanup: async () => {} }),
  {
    atomicCombinedOperations: false,
  },
);

const LONG_MS = 60_000;

const finish = (owner: string, paymentId: string): OutcomeFinish => ({
  eventKey: `outcome:${paymentId}`,
  owner,
  claim: 'release',
  doneTtlMs: LONG_MS,
  record: {
    paymentId,
    outcome: 'confirmed',
    status: 'SUCCESS',
    source: 'webhook',
    handlers: 'failed',
    updatedAt: new Date().toISOString(),
  },
  attemptsAdded: 1,
  recordTtlMs: LONG_MS,
});

/**
 * Holds each read of a record until a second read comes (or 50 ms pass): two attempts that can
 * both be between their read and their write do meet there. Calls a hook once a claim is released.
 */
class RacingStore extends MapPaymentsStore {
  onRelease?: () => void;
  private readonly reading: Array<() => void> = [];

  override async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    await new Promise<void>((resolve) => {
      this.reading.push(resolve);
      if (this.reading.length >= 2) for (const go of this.reading.splice(0)) go();
      else setTimeout(resolve, 50);
    });
    return super.getOutcome(paymentId);
  }

  override async release(eventKey: string, owner: string): Promise<void> {
    await super.release(eventKey, owner);
    const next = this.onRelease;
    this.onRelease = undefined;
    next?.();
  }
}

describe('BasicPaymentsStore', () => {
  it('counts the attempts of one that claims the moment the previous one releases (the record is written under the claim)', async () => {
    const store = new RacingStore();
    const paymentId = 'pay_race';
    await expect(store.claim(`outcome:${paymentId}`, 'a', LONG_MS)).resolves.toBe('claimed');
    let second: Promise<void> | undefined;
    // A redelivery claims as soon as the claim is free and finishes at once.
    store.onRelease = () => {
      second = (async () => {
        await expect(store.claim(`outcome:${paymentId}`, 'b', LONG_MS)).resolves.toBe('claimed');
        await store.finishOutcome(finish('b', paymentId));
      })();
    };
    await store.finishOutcome(finish('a', paymentId));
    expect(second).toBeDefined();
    await second;
    await expect(store.getOutcome(paymentId)).resolves.toMatchObject({ attempts: 2 });
  });

  it('gives each instance rate limits of its own, replaceable by a subclass', async () => {
    const [a, b] = [new MapPaymentsStore(), new MapPaymentsStore()];
    await expect(a.rateLimits.take('k', LONG_MS)).resolves.toBe(true);
    await expect(b.rateLimits.take('k', LONG_MS)).resolves.toBe(true);
    const shared = a.rateLimits;
    class SharedLimits extends MapPaymentsStore {
      override readonly rateLimits = shared;
    }
    await expect(new SharedLimits().rateLimits.take('k', LONG_MS)).resolves.toBe(false);
    expect(new SharedLimits()).toBeInstanceOf(BasicPaymentsStore);
  });
});

describe('isPaymentsStore (the runtime check of a store option)', () => {
  const map = () => new MapPaymentsStore();

  it('accepts every shipped store and one on BasicPaymentsStore', async () => {
    // Neither connects: the Redis client is lazy and the queryable is never called.
    const redis = new RedisPaymentsStore('redis://127.0.0.1:1', { redisOptions: { lazyConnect: true } });
    const postgres = new PostgresPaymentsStore({ query: () => Promise.reject(new Error('not called')) });
    expect([new MemoryPaymentsStore(), redis, postgres, map()].map((s) => isPaymentsStore(s))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    await redis.close();
  });

  it('refuses a store without the combined operations or without rate limits', () => {
    const methods = Object.fromEntries(STORE_METHODS.map((m) => [m, () => Promise.resolve()]));
    const limits = { take: () => Promise.resolve(true), free: () => Promise.resolve() };
    expect(isPaymentsStore({ ...methods, rateLimits: limits })).toBe(true);
    const { finishOutcome: _f, ...withoutFinish } = methods;
    expect(isPaymentsStore({ ...withoutFinish, rateLimits: limits })).toBe(false);
    const { findBindingAndClaim: _c, ...withoutLookup } = methods;
    expect(isPaymentsStore({ ...withoutLookup, rateLimits: limits })).toBe(false);
    expect(isPaymentsStore(methods)).toBe(false);
    expect(isPaymentsStore({ ...methods, rateLimits: { take: limits.take } })).toBe(false);
    expect(isPaymentsStore({ ...methods, rateLimits: null })).toBe(false);
    expect(isPaymentsStore(null)).toBe(false);
    expect(isPaymentsStore('redis://127.0.0.1')).toBe(false);
  });
});
