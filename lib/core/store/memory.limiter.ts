import type { LRUCache } from 'lru-cache';
import { boundedCache } from '../common/index.js';
import { positiveMs } from './store.rules.js';
import type { RateLimiter } from './store.ports.js';
import { SYSTEM_CLOCK, type Clock } from '../time/index.js';

/** Options of {@link MemoryRateLimiter}. */
export interface MemoryRateLimiterOptions {
  /**
   * Most slots held at once; the least recently taken go first. Default 100 000, so that a flood
   * of distinct keys cannot exhaust memory (an evicted slot is free again early: the limit then
   * lets one more verify through for that key, which the service's answer still decides).
   */
  maxSlots?: number;
  /** The clock the slots' windows run on. Default: the system clock. */
  clock?: Clock;
}

/**
 * A {@link RateLimiter} in this process's memory: atomic within the process (no await between the
 * check and the set), bounded in size (LRU) and in age (each slot's window).
 *
 * Per instance: with several app instances each one limits on its own, so a key gets one slot
 * per instance and window. The Redis and PostgreSQL stores' limiters are shared by all instances.
 */
export class MemoryRateLimiter implements RateLimiter {
  readonly #slots: LRUCache<string, true>;

  /** @param options its size cap; see {@link MemoryRateLimiterOptions} */
  constructor(options: MemoryRateLimiterOptions = {}) {
    const clock = options.clock ?? SYSTEM_CLOCK;
    this.#slots = boundedCache(options.maxSlots ?? 100_000, {
      allowStale: false,
      perf: { now: () => clock.now() },
      ttlResolution: 0,
    });
  }

  /** @inheritdoc */
  async take(key: string, windowMs: number): Promise<boolean> {
    const ttl = positiveMs('MemoryRateLimiter', windowMs, 'windowMs');
    if (this.#slots.has(key)) return false;
    this.#slots.set(key, true, { ttl });
    return true;
  }

  /** @inheritdoc */
  async free(key: string): Promise<void> {
    this.#slots.delete(key);
  }

  /** Number of slots taken (expired ones may count until they are met), for monitoring and tests. */
  get size(): number {
    return this.#slots.size;
  }
}
