import { LRUCache } from 'lru-cache';
import type { ClaimOutcome, PaymentBinding, PaymentsStore } from './payments.store.js';

/** Options of {@link MemoryPaymentsStore}. */
export interface MemoryPaymentsStoreOptions {
  /**
   * Most token bindings kept; the least recently used go first. Default 100 000
   * (roughly 30 MB), so that a flood of payments cannot exhaust memory.
   */
  maxBindings?: number;
  /** Most done markers kept (handled confirmations); least recently used go first. Default 100 000. */
  maxEvents?: number;
}

interface Claim {
  owner: string;
  expiresAt: number;
}

/**
 * The default store: in this process's memory, bounded in size (LRU) and age (per-entry TTL).
 *
 * Good for one instance and for tests. It forgets everything on restart, and an evicted done
 * marker lets a very late duplicate run again; with several instances, or to survive restarts,
 * use `RedisPaymentsStore` from `nestjs-payments/redis`.
 */
export class MemoryPaymentsStore implements PaymentsStore {
  private readonly bindings: LRUCache<string, PaymentBinding>;
  private readonly done: LRUCache<string, true>;
  // Claims in progress live apart from the LRU: evicting one under a flood would let a concurrent
  // duplicate run the handlers twice. Their number is bounded by the deliveries in flight (each
  // ends in markDone or release) and expired leases are dropped as they are met.
  private readonly claims = new Map<string, Claim>();

  /** @param options size caps; see {@link MemoryPaymentsStoreOptions} */
  constructor(options: MemoryPaymentsStoreOptions = {}) {
    // No default TTL: every set() passes its own, checked by positiveMs().
    this.bindings = new LRUCache({ max: options.maxBindings ?? 100_000, allowStale: false });
    this.done = new LRUCache({ max: options.maxEvents ?? 100_000, allowStale: false });
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    this.bindings.set(tokenId, { ...binding }, { ttl: positiveMs(ttlMs, 'ttlMs') });
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const found = this.bindings.get(tokenId);
    return found ? { ...found } : undefined;
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const lease = positiveMs(leaseMs, 'leaseMs');
    // Check-and-set with no await in between: atomic within the event loop.
    if (this.done.has(eventKey)) return 'done';
    const current = this.activeClaim(eventKey);
    if (current && current.owner !== owner) return 'busy';
    this.claims.set(eventKey, { owner, expiresAt: Date.now() + lease });
    return 'claimed';
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs(ttlMs, 'ttlMs');
    if (this.activeClaim(eventKey)?.owner !== owner) return false;
    this.claims.delete(eventKey);
    this.done.set(eventKey, true, { ttl });
    return true;
  }

  /** @inheritdoc */
  async release(eventKey: string, owner: string): Promise<void> {
    if (this.activeClaim(eventKey)?.owner === owner) this.claims.delete(eventKey);
  }

  /** Number of entries held (bindings, done markers and claims in progress), for monitoring and tests. */
  get size(): number {
    return this.bindings.size + this.done.size + this.claims.size;
  }

  /** @inheritdoc */
  async close(): Promise<void> {
    this.bindings.clear();
    this.done.clear();
    this.claims.clear();
  }

  private activeClaim(eventKey: string): Claim | undefined {
    const claim = this.claims.get(eventKey);
    if (claim && claim.expiresAt <= Date.now()) {
      this.claims.delete(eventKey);
      return undefined;
    }
    return claim;
  }
}

// Same rule as the Redis store: a zero lease would mean "forever" to lru-cache, a negative one "never".
function positiveMs(ms: number, name: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`MemoryPaymentsStore: ${name} must be a positive number of milliseconds, got ${String(ms)}`);
  }
  return Math.ceil(ms);
}
