import type { LRUCache } from 'lru-cache';
import { boundedCache } from '../common/index.js';
import {
  epochMs,
  positiveMs,
  outcomeCursor,
  outcomePageLimit,
  outcomeSortsBefore,
  parseOutcomeCursor,
} from './store.rules.js';
import type {
  BindingClaim,
  CheckoutOpen,
  CheckoutOpening,
  CheckoutSave,
  ClaimOutcome,
  OrderCheckout,
  OrderSettlement,
  OutcomeFinish,
  OutcomePage,
  OutcomeQuery,
  OutcomeRecord,
  PaymentBinding,
  PendingPayment,
  RefundRecord,
  RefundSwap,
} from './store.types.js';
import type { OrderLedger, PaymentsStore, RefundLedger } from './store.ports.js';
import { MemoryRateLimiter } from './memory.limiter.js';
import { mergeGenerated, mergeRecheck } from './pending.generated.js';
import { checkoutLockKey } from './checkout.claims.js';
import { SYSTEM_CLOCK, type Clock } from '../time/index.js';
import { MemoryStoryLog, type StoryOptions } from './story.log.js';

/** Options of {@link MemoryPaymentsStore}. */
export interface MemoryPaymentsStoreOptions {
  /**
   * Most token bindings kept; the least recently used go first. Default 100 000
   * (roughly 30 MB), so that a flood of payments cannot exhaust memory.
   */
  maxBindings?: number;
  /** Most done markers kept (handled outcomes); least recently used go first. Default 100 000. */
  maxEvents?: number;
  /** Most payments queued for reconciliation; the least recently queued go first. Default 100 000. */
  maxPending?: number;
  /** Most outcome records kept; least recently updated go first. Default 10 000. */
  maxOutcomes?: number;
  /** Most rate-limit slots held (see {@link MemoryRateLimiterOptions.maxSlots}). Default 100 000. */
  maxRateLimits?: number;
  /** Most orders remembered (their settlement, their open checkout); least recently used go first. Default 100 000. */
  maxOrders?: number;
  /** Most refund records kept (one per payment refunded); least recently used go first. Default 100 000. */
  maxRefunds?: number;
  /**
   * The payments' stories and the desk's tallies ({@link MemoryStoryLog}): their bounds and
   * retention, `true` for the defaults of {@link StoryOptions}, or `false` to keep none. Default
   * `true` (in this process, no round trip).
   */
  story?: StoryOptions | boolean;
  /**
   * The store's clock: leases and TTLs run on it, and {@link MemoryPaymentsStore.now} reads it.
   * Default: the system clock.
   */
  clock?: Clock;
}

/** Fewest writes between two cleanups of expired entries (a small store is not cleaned at every write). */
const SWEEP_MIN_WRITES = 1024;

interface Claim {
  owner: string;
  expiresAt: number;
}

interface Queued {
  entry: PendingPayment;
  dueAt: number;
  /** The sequence number of its latest due mark: older marks of it are stale. */
  mark?: number;
}

/**
 * A queued payment's due time as the heap holds it; stale once its entry is replaced, moved or
 * gone. It holds no reference to the entry, so an evicted entry is not kept alive by its marks.
 */
interface DueMark {
  dueAt: number;
  seq: number;
  paymentId: string;
}

/**
 * The reconciliation queue: entries by payment (LRU-bounded) and a binary min-heap of due times,
 * so a pass costs its due entries and a logarithm of the queue rather than a scan and sort of it
 * (a year-old shop's queue holds up to `maxPending` entries, and a pass runs every minute).
 * Marks are never updated in place: a move pushes a new one and the old one is skipped when met;
 * the heap is rebuilt when stale marks outnumber live ones.
 */
class DueQueue {
  readonly entries: LRUCache<string, Queued>;
  private heap: DueMark[] = [];
  private seq = 0;

  constructor(max: number, options: { perf: { now(): number }; ttlResolution: number }) {
    this.entries = boundedCache(max, options);
  }

  /** Queues `queued` for its payment, replacing any entry of it. */
  set(paymentId: string, queued: Queued): void {
    this.entries.set(paymentId, queued);
    this.mark(paymentId, queued);
  }

  /** Takes at most `limit` entries due at `now`, earliest due first, each moved to `nextDue`. */
  takeDue(now: number, limit: number, nextDue: number): PendingPayment[] {
    const taken: Queued[] = [];
    while (taken.length < limit && this.heap.length > 0 && this.heap[0].dueAt <= now) {
      const queued = this.liveEntry(this.pop());
      if (queued) taken.push(queued);
    }
    // Moved only once all are taken: a mark pushed meanwhile (due later than now) is not met again.
    for (const queued of taken) {
      queued.dueAt = nextDue;
      this.mark(queued.entry.paymentId, queued);
    }
    return taken.map((q) => ({ ...q.entry }));
  }

  private liveEntry(mark: DueMark): Queued | undefined {
    const queued = this.entries.peek(mark.paymentId);
    return queued?.mark === mark.seq ? queued : undefined;
  }

  private mark(paymentId: string, queued: Queued): void {
    queued.mark = this.seq++;
    this.push({ dueAt: queued.dueAt, seq: queued.mark, paymentId });
    if (this.heap.length > 2 * this.entries.size + 1024) this.rebuild();
  }

  private rebuild(): void {
    const live = this.heap.filter((m) => this.liveEntry(m) !== undefined);
    this.heap = [];
    for (const mark of live) this.push(mark);
  }

  private static before(a: DueMark, b: DueMark): boolean {
    return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
  }

  private push(mark: DueMark): void {
    const heap = this.heap;
    heap.push(mark);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!DueQueue.before(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }

  private pop(): DueMark {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop() as DueMark;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && DueQueue.before(heap[left], heap[least])) least = left;
        if (right < heap.length && DueQueue.before(heap[right], heap[least])) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least], heap[i]];
        i = least;
      }
    }
    return top;
  }
}

/**
 * The default store: in this process's memory, bounded in size (LRU) and age (per-entry TTL;
 * expired entries are dropped as it writes, so that it holds what the retention windows keep).
 *
 * Good for one instance and for tests. It forgets everything on restart (confirmations still
 * arrive: the signed webhook token carries what the plugin must check, and the service's verify
 * answer decides), and an evicted done marker lets a very late duplicate run again. With several
 * instances, or to keep the reconciliation queue across restarts, use `RedisPaymentsStore` or
 * `PostgresPaymentsStore`.
 */
export class MemoryPaymentsStore implements PaymentsStore, OrderLedger, RefundLedger {
  private readonly bindings: LRUCache<string, PaymentBinding>;
  private readonly done: LRUCache<string, true>;
  // Claims in progress live apart from the LRU: evicting one under a flood would let a concurrent
  // duplicate run the handlers twice. Their number is bounded by the deliveries in flight (each
  // ends in markDone or release) and expired leases are dropped as they are met.
  private readonly claims = new Map<string, Claim>();
  private readonly queue: DueQueue;
  private readonly outcomes: LRUCache<string, OutcomeRecord>;
  private readonly settlements: LRUCache<string, OrderSettlement>;
  private readonly checkouts: LRUCache<string, OrderCheckout>;
  private readonly refunds: LRUCache<string, RefundRecord>;
  /** The webhook's rate limits, in this process (this store is one process's anyway). */
  readonly rateLimits: MemoryRateLimiter;
  /** The payments' stories and the desk's tallies, in this process; absent with `story: false`. */
  readonly story?: MemoryStoryLog;
  private readonly clock: Clock;
  // lru-cache drops an expired entry only when it is read or evicted by the cap: without cleanups a
  // store would hold its caps' worth of entries whatever the retention windows, its size following
  // the shop's age. A cleanup visits every entry, so one runs after as many writes as there were
  // entries after the last: amortised, a write pays for one entry's visit.
  private writesToSweep = SWEEP_MIN_WRITES;

  /** @param options size caps and clock; see {@link MemoryPaymentsStoreOptions} */
  constructor(options: MemoryPaymentsStoreOptions = {}) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    // TTLs run on the store's clock (lru-cache's own default is performance.now()), read at every
    // look-up: lru-cache otherwise reuses a reading for a real millisecond, in which an injected
    // clock may have moved on.
    const perf = { now: () => this.clock.now() };
    const ttlResolution = 0;
    // No default TTL: every set() passes its own, checked by positiveMs().
    this.bindings = boundedCache(options.maxBindings ?? 100_000, { allowStale: false, perf, ttlResolution });
    this.done = boundedCache(options.maxEvents ?? 100_000, { allowStale: false, perf, ttlResolution });
    this.queue = new DueQueue(options.maxPending ?? 100_000, { perf, ttlResolution });
    this.outcomes = boundedCache(options.maxOutcomes ?? 10_000, { allowStale: false, perf, ttlResolution });
    this.rateLimits = new MemoryRateLimiter({ maxSlots: options.maxRateLimits, clock: this.clock });
    this.settlements = boundedCache(options.maxOrders ?? 100_000, { allowStale: false, perf, ttlResolution });
    this.checkouts = boundedCache(options.maxOrders ?? 100_000, { allowStale: false, perf, ttlResolution });
    this.refunds = boundedCache(options.maxRefunds ?? 100_000, { allowStale: false, perf, ttlResolution });
    if (options.story !== false)
      this.story = new MemoryStoryLog(options.story === true ? {} : options.story, this.clock, options.maxOutcomes);
  }

  /** Counts a write, and drops the expired entries of every cache when their time has come. */
  private wrote(): void {
    if (--this.writesToSweep > 0) return;
    for (const cache of [this.bindings, this.done, this.outcomes, this.settlements, this.checkouts, this.refunds])
      cache.purgeStale();
    this.writesToSweep = Math.max(SWEEP_MIN_WRITES, this.size);
  }

  /** @inheritdoc */
  async findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    const found = this.refunds.get(refundKey);
    return found ? structuredClone(found) : undefined;
  }

  /** @inheritdoc */
  async swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap> {
    const ttl = positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs');
    // Compare and set with no await in between: atomic within the event loop.
    const held = this.refunds.get(refundKey);
    if (held?.owner !== expectedOwner) return { swapped: false, held: held && structuredClone(held) };
    this.refunds.set(refundKey, structuredClone(record), { ttl });
    this.wrote();
    return { swapped: true, held: structuredClone(record) };
  }

  /** @inheritdoc */
  async settleOrder(orderKey: string, settlement: OrderSettlement, ttlMs: number): Promise<OrderSettlement> {
    const ttl = positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs');
    // Read and set with no await in between: atomic within the event loop.
    const held = this.settlements.get(orderKey);
    if (held) return { ...held };
    this.settlements.set(orderKey, { paymentId: settlement.paymentId, amount: settlement.amount }, { ttl });
    this.wrote();
    return { paymentId: settlement.paymentId, amount: settlement.amount };
  }

  /** @inheritdoc */
  async findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined> {
    const held = this.settlements.get(orderKey);
    return held ? { ...held } : undefined;
  }

  /** @inheritdoc */
  async saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void> {
    this.checkouts.set(orderKey, copyCheckout(checkout), { ttl: positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs') });
    this.wrote();
  }

  /** @inheritdoc */
  async findCheckout(orderKey: string): Promise<OrderCheckout | undefined> {
    const found = this.checkouts.get(orderKey);
    return found ? copyCheckout(found) : undefined;
  }

  /**
   * The claim of `checkout:<orderKey>` (the same claims as {@link MemoryPaymentsStore.claim}), the
   * order's checkout and its payment's standing, with no await in between: atomic within the event
   * loop.
   */
  async openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    const lock = this.claimNow(checkoutLockKey(open.orderKey), open.owner, open.leaseMs);
    const found = this.checkouts.get(open.orderKey);
    if (!found) return { lock };
    const { paymentId } = found;
    const note = this.settlements.get(open.cancellationPrefix + paymentId);
    return {
      lock,
      checkout: copyCheckout(found),
      standing: { outcome: this.outcomes.get(paymentId)?.outcome, cancelled: note?.paymentId === paymentId },
    };
  }

  /** The checkout saved (when given) and the lock released if `owner` holds it, with no await in between. */
  async closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    const ttl = save && positiveMs('MemoryPaymentsStore', save.ttlMs, 'ttlMs');
    if (save) {
      this.checkouts.set(orderKey, copyCheckout(save.checkout), { ttl });
      this.wrote();
    }
    const lockKey = checkoutLockKey(orderKey);
    if (this.activeClaim(lockKey)?.owner === owner) this.claims.delete(lockKey);
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    this.bindings.set(tokenId, { ...binding }, { ttl: positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs') });
    this.wrote();
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const found = this.bindings.get(tokenId);
    return found ? { ...found } : undefined;
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    return this.claimNow(eventKey, owner, leaseMs);
  }

  private claimNow(eventKey: string, owner: string, leaseMs: number): ClaimOutcome {
    const lease = positiveMs('MemoryPaymentsStore', leaseMs, 'leaseMs');
    // Check-and-set with no await in between: atomic within the event loop.
    if (this.done.has(eventKey)) return 'done';
    const current = this.activeClaim(eventKey);
    if (current && current.owner !== owner) return 'busy';
    this.claims.set(eventKey, { owner, expiresAt: this.clock.now() + lease });
    return 'claimed';
  }

  /** @inheritdoc */
  async findBindingAndClaim(
    tokenId: string,
    paymentId: string,
    eventKey: string,
    owner: string,
    leaseMs: number,
  ): Promise<BindingClaim> {
    // No await between the read and the check-and-set: atomic within the event loop.
    const found = this.bindings.get(tokenId);
    const binding = found ? { ...found } : undefined;
    if (binding?.paymentId !== paymentId) return { binding };
    return { binding, claim: this.claimNow(eventKey, owner, leaseMs) };
  }

  /** @inheritdoc */
  async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    const doneTtl = positiveMs('MemoryPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
    const recordTtl = positiveMs('MemoryPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
    const held = this.activeClaim(finish.eventKey)?.owner === finish.owner;
    if (held) this.claims.delete(finish.eventKey);
    if (finish.claim === 'done') {
      if (held) this.done.set(finish.eventKey, true, { ttl: doneTtl });
      this.queue.entries.delete(finish.record.paymentId);
    }
    const previous = this.outcomes.get(finish.record.paymentId)?.attempts ?? 0;
    // Copied, then counted: a spread with a property added (`{ ...record, attempts }`) takes V8 a
    // slow path, on every settle.
    const record = Object.assign({}, finish.record) as OutcomeRecord;
    record.attempts = previous + finish.attemptsAdded;
    this.outcomes.set(finish.record.paymentId, record, { ttl: recordTtl });
    this.wrote();
    return held && finish.claim === 'done';
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs');
    if (this.activeClaim(eventKey)?.owner !== owner) return false;
    this.claims.delete(eventKey);
    this.done.set(eventKey, true, { ttl });
    this.wrote();
    return true;
  }

  /** @inheritdoc */
  async release(eventKey: string, owner: string): Promise<void> {
    if (this.activeClaim(eventKey)?.owner === owner) this.claims.delete(eventKey);
  }

  /** @inheritdoc */
  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    this.queue.set(entry.paymentId, { entry: { ...entry }, dueAt: epochMs('MemoryPaymentsStore', dueAt, 'dueAt') });
  }

  /** @inheritdoc */
  async queueGenerated(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('MemoryPaymentsStore', dueAt, 'dueAt');
    const queued = this.queue.entries.peek(entry.paymentId);
    if (queued) queued.entry = mergeGenerated(queued.entry, entry);
    else this.queue.set(entry.paymentId, { entry: { ...entry }, dueAt: due });
  }

  /** @inheritdoc */
  async queueRecheck(entry: PendingPayment, dueAt: number): Promise<void> {
    const due = epochMs('MemoryPaymentsStore', dueAt, 'dueAt');
    const held = this.queue.entries.peek(entry.paymentId)?.entry;
    this.queue.set(entry.paymentId, { entry: held ? mergeRecheck(held, entry) : { ...entry }, dueAt: due });
  }

  /** @inheritdoc */
  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('MemoryPaymentsStore', leaseMs, 'leaseMs');
    return this.queue.takeDue(now, Math.max(0, limit), now + lease);
  }

  /** @inheritdoc */
  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const queued = this.queue.entries.peek(paymentId);
    return queued ? { ...queued.entry } : undefined;
  }

  /** @inheritdoc */
  async removePending(paymentId: string): Promise<void> {
    this.queue.entries.delete(paymentId);
  }

  /** @inheritdoc */
  async countPending(): Promise<number> {
    return this.queue.entries.size;
  }

  /** @inheritdoc */
  async saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    this.outcomes.set(record.paymentId, { ...record }, { ttl: positiveMs('MemoryPaymentsStore', ttlMs, 'ttlMs') });
    this.wrote();
  }

  /** @inheritdoc */
  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const found = this.outcomes.get(paymentId);
    return found ? { ...found } : undefined;
  }

  /** @inheritdoc */
  async listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    const limit = outcomePageLimit(query);
    const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
    const matching = [...this.outcomes.values()]
      .filter(
        (r) =>
          (query.handlers === undefined || r.handlers === query.handlers) &&
          (query.outcome === undefined || r.outcome === query.outcome),
      )
      .filter((r) => after === undefined || outcomeSortsBefore(after, r))
      .sort((a, b) => (outcomeSortsBefore(a, b) ? -1 : 1));
    const items = matching.slice(0, limit).map((r) => ({ ...r }));
    return matching.length > limit ? { items, nextCursor: outcomeCursor(items[items.length - 1]) } : { items };
  }

  /** @inheritdoc */
  async ping(): Promise<void> {}

  /** The store's clock, epoch ms: the time every client sharing this store agrees on. */
  async now(): Promise<number> {
    return this.clock.now();
  }

  /** Number of entries held (bindings, done markers, claims, queued payments, records, rate-limit slots, orders, refunds), for monitoring and tests. */
  get size(): number {
    return (
      this.bindings.size +
      this.done.size +
      this.claims.size +
      this.queue.entries.size +
      this.outcomes.size +
      this.rateLimits.size +
      this.settlements.size +
      this.checkouts.size +
      this.refunds.size
    );
  }

  /**
   * Holds no connection, so there is nothing to free; the data stays, because a store passed in
   * by the host may still serve another app (or the same app after a restart of its module).
   */
  async close(): Promise<void> {}

  private activeClaim(eventKey: string): Claim | undefined {
    const claim = this.claims.get(eventKey);
    if (claim && claim.expiresAt <= this.clock.now()) {
      this.claims.delete(eventKey);
      return undefined;
    }
    return claim;
  }
}

// A checkout's copy, so that neither the caller nor the store sees the other's later changes: its
// fields are strings but for one list (structuredClone's generic walk cost more on generatePayment's
// path than the call's own work around it; it stays here: a file more on every settlement path).
const copyCheckout = (c: OrderCheckout): OrderCheckout =>
  c.superseded ? { ...c, superseded: [...c.superseded] } : { ...c };
