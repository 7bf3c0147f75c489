import { describe, expect, it } from '@jest/globals';
import { LRUCache } from 'lru-cache';
import { boundedCache } from '../../lib/core/common/bounded.cache.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';

/** The keys left after a sequence of operations (`+k`: set, `?k`: get), least recently used first. */
function survivors(cache: LRUCache<string, number>, ops: string[]): string[] {
  for (const op of ops) {
    if (op.startsWith('+')) cache.set(op.slice(1), 1);
    else cache.get(op.slice(1));
  }
  return [...cache.rkeys()];
}

describe('boundedCache', () => {
  // The same entries, in the same order, as lru-cache bounded by `max`: the memory store's caps
  // (an eviction of a token binding, of a done marker) mean what they meant.
  it.each([
    [1, ['+a', '+b']],
    [2, ['+a', '+b', '+c']],
    [2, ['+a', '+b', '?a', '+c']],
    [3, ['+a', '+b', '+c', '?a', '+d', '+b', '+e', '?c', '+f']],
    [3, ['+a', '+a', '+b', '+a', '+c', '+d']],
  ])('max %i, %j: evicts as lru-cache with max does', (max, ops) => {
    expect(survivors(boundedCache<string, number>(max), ops)).toEqual(survivors(new LRUCache({ max }), ops));
  });

  it('holds at most max entries, and refuses a max that is not a positive integer', () => {
    const cache = boundedCache<string, number>(3);
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i);
    expect([...cache.keys()]).toEqual(['k9', 'k8', 'k7']);
    expect(() => boundedCache(0)).toThrow();
    expect(() => boundedCache(1.5)).toThrow();
  });

  it('allocates as it fills: default memory stores do not reserve their 100 000 entries up front', () => {
    // lru-cache's `max` reserves two Uint32Arrays of `max` per cache (about 5.6 MB of array
    // buffers per default store, plus its JS arrays): every client built without a store paid it.
    const before = process.memoryUsage().arrayBuffers;
    const stores = [new MemoryPaymentsStore(), new MemoryPaymentsStore(), new MemoryPaymentsStore()];
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1_000_000);
    expect(stores).toHaveLength(3);
  });
});
