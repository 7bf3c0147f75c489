import { LRUCache } from 'lru-cache';
import type { ClaimOutcome, PaymentBinding, PaymentsStore } from './payments.store.js';

/** Options of {@link MemoryPaymentsStore}. */
export interface MemoryPaymentsStoreOptions {
  /**
   * Most token bindings kept; the least recently used go first. Default 100 000
   * (roughly 30 MB), so that a flood of payments cannot exhaust memory.
   */
  maxBindings?: number;
  /** Most delivery records (claims and done markers) kept; least recently used go first. Default 100 000. */
  maxEvents?: number;
}

type EventEntry = { state: 'claimed'; owner: string } | { state: 'done' };

/**
 * The default store: in this process's memory, bounded in size (LRU) and age (per-entry TTL).
 *
 * Good for one instance and for tests. It forgets everything on restart, and an evicted done
 * marker lets a very late duplicate run again; with several instances, or to survive restarts,
 * use `RedisPaymentsStore` from `nestjs-payments/redis`.
 */
export class MemoryPaymentsStore implements PaymentsStore {
  private readonly bindings: LRUCache<string, PaymentBinding>;
  private readonly events: LRUCache<string, EventEntry>;

  /** @param options size caps; see {@link MemoryPaymentsStoreOptions} */
  constructor(options: MemoryPaymentsStoreOptions = {}) {
    // ttlAutopurge is off: expired entries are dropped lazily on access and by LRU pressure,
    // which keeps memory bounded by `max` without a timer per entry.
    this.bindings = new LRUCache({ max: options.maxBindings ?? 100_000, ttl: 1, allowStale: false });
    this.events = new LRUCache({ max: options.maxEvents ?? 100_000, ttl: 1, allowStale: false });
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    this.bindings.set(tokenId, { ...binding }, { ttl: ttlMs });
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const found = this.bindings.get(tokenId);
    return found ? { ...found } : undefined;
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    // Check-and-set with no await in between: atomic within the event loop.
    const current = this.events.get(eventKey);
    if (current?.state === 'done') return 'done';
    if (current?.state === 'claimed') return 'busy';
    this.events.set(eventKey, { state: 'claimed', owner }, { ttl: leaseMs });
    return 'claimed';
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const current = this.events.get(eventKey);
    if (current?.state !== 'claimed' || current.owner !== owner) return false;
    this.events.set(eventKey, { state: 'done' }, { ttl: ttlMs });
    return true;
  }

  /** @inheritdoc */
  async release(eventKey: string, owner: string): Promise<void> {
    const current = this.events.get(eventKey);
    if (current?.state === 'claimed' && current.owner === owner) this.events.delete(eventKey);
  }

  /** Number of entries held (bindings + delivery records), for monitoring and tests. */
  get size(): number {
    return this.bindings.size + this.events.size;
  }

  /** @inheritdoc */
  async close(): Promise<void> {
    this.bindings.clear();
    this.events.clear();
  }
}
