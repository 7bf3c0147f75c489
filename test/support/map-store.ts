import {
  epochMs,
  outcomeCursor,
  outcomePageLimit,
  outcomeSortsBefore,
  parseOutcomeCursor,
  positiveMs,
} from '../../lib/core/store/store.rules.js';
import type {
  ClaimOutcome,
  OutcomePage,
  OutcomeQuery,
  OutcomeRecord,
  PaymentBinding,
  PendingPayment,
} from '../../lib/core/store/store.types.js';
import { BasicPaymentsStore } from '../../lib/core/store/store.base.js';

interface Expiring<T> {
  value: T;
  expiresAt: number;
}

type Event = { state: 'claimed'; owner: string } | { state: 'done' };

/**
 * A custom store as a host would write one: BasicPaymentsStore over plain Maps, only the basic
 * methods implemented (each atomic within the event loop: no await between a check and its set).
 * The combined operations and the rate limits are the base class's.
 */
export class MapPaymentsStore extends BasicPaymentsStore {
  private readonly bindings = new Map<string, Expiring<PaymentBinding>>();
  private readonly events = new Map<string, Expiring<Event>>();
  private readonly pending = new Map<string, { entry: PendingPayment; dueAt: number }>();
  private readonly outcomes = new Map<string, Expiring<OutcomeRecord>>();

  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    this.bindings.set(tokenId, {
      value: { ...binding },
      expiresAt: Date.now() + positiveMs('MapPaymentsStore', ttlMs, 'ttlMs'),
    });
  }

  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const found = live(this.bindings, tokenId);
    return found && { ...found };
  }

  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const lease = positiveMs('MapPaymentsStore', leaseMs, 'leaseMs');
    const current = live(this.events, eventKey);
    if (current?.state === 'done') return 'done';
    if (current && current.owner !== owner) return 'busy';
    this.events.set(eventKey, { value: { state: 'claimed', owner }, expiresAt: Date.now() + lease });
    return 'claimed';
  }

  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs('MapPaymentsStore', ttlMs, 'ttlMs');
    const current = live(this.events, eventKey);
    if (current?.state !== 'claimed' || current.owner !== owner) return false;
    this.events.set(eventKey, { value: { state: 'done' }, expiresAt: Date.now() + ttl });
    return true;
  }

  async release(eventKey: string, owner: string): Promise<void> {
    const current = live(this.events, eventKey);
    if (current?.state === 'claimed' && current.owner === owner) this.events.delete(eventKey);
  }

  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    this.pending.set(entry.paymentId, { entry: { ...entry }, dueAt: epochMs('MapPaymentsStore', dueAt, 'dueAt') });
  }

  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('MapPaymentsStore', leaseMs, 'leaseMs');
    const due = [...this.pending.values()].filter((q) => q.dueAt <= now).sort((a, b) => a.dueAt - b.dueAt);
    return due.slice(0, Math.max(0, limit)).map((q) => {
      q.dueAt = now + lease;
      return { ...q.entry };
    });
  }

  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const queued = this.pending.get(paymentId);
    return queued && { ...queued.entry };
  }

  async removePending(paymentId: string): Promise<void> {
    this.pending.delete(paymentId);
  }

  async countPending(): Promise<number> {
    return this.pending.size;
  }

  async saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    this.outcomes.set(record.paymentId, {
      value: { ...record },
      expiresAt: Date.now() + positiveMs('MapPaymentsStore', ttlMs, 'ttlMs'),
    });
  }

  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const found = live(this.outcomes, paymentId);
    return found && { ...found };
  }

  async listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    const limit = outcomePageLimit(query);
    const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
    const matching = [...this.outcomes.keys()]
      .map((id) => live(this.outcomes, id))
      .filter((r): r is OutcomeRecord => r !== undefined)
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
}

// An expired entry is dropped as it is met.
function live<T>(map: Map<string, Expiring<T>>, key: string): T | undefined {
  const found = map.get(key);
  if (found && found.expiresAt <= Date.now()) map.delete(key);
  return found && found.expiresAt > Date.now() ? found.value : undefined;
}
