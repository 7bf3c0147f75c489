import { LRUCache } from 'lru-cache';

/** What {@link boundedCache} passes on to lru-cache: everything but the bound. */
export type BoundedCacheOptions<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = Omit<
  LRUCache.Options<K, V, unknown>,
  'max' | 'maxSize' | 'maxEntrySize' | 'sizeCalculation'
>;

const ONE = (): number => 1;

/**
 * An LRU cache of at most `max` entries (the least recently used go first) whose memory grows
 * with the entries it holds. lru-cache's `max` allocates its arrays for `max` entries up front,
 * two more once a TTL is set: a default memory store (seven caches of up to 100 000) cost some
 * 200 ms of CPU and tens of MB before its first entry, paid again by every client built without a
 * store. Bounded by size instead, each entry of size 1, the cache evicts the same entries in the
 * same order (the least recently used, when the `max + 1`th is added) and allocates as it fills.
 *
 * @param max the most entries held; a positive integer
 * @param options lru-cache's other options (TTLs, the clock)
 */
export function boundedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  max: number,
  options: BoundedCacheOptions<K, V> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: max, sizeCalculation: ONE });
}
