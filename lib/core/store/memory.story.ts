import { LRUCache } from 'lru-cache';
import { SYSTEM_CLOCK, type Clock } from '../time/index.js';
import type { PaymentStoryLog } from './story.ports.js';
import {
  addTally,
  bucketStart,
  expired,
  keptEntries,
  storyLimits,
  type StoryBatch,
  type StoryEntry,
  type StoryLimits,
  type StoryOptions,
  type TallyBucket,
} from './story.rules.js';

interface Kept<T> {
  value: T;
  writtenAt: number;
}

/**
 * The {@link PaymentStoryLog} of `MemoryPaymentsStore`: stories and tally buckets in this process,
 * in bounded maps (the least recently written go first past `maxStories`), retention on the store's clock.
 */
export class MemoryStoryLog implements PaymentStoryLog {
  /** @inheritdoc */
  readonly limits: StoryLimits;
  readonly #stories: LRUCache<string, Kept<StoryEntry[]>>;
  readonly #buckets = new Map<string, Kept<Record<string, number>>>();
  readonly #clock: Clock;

  /**
   * @param options the bounds and retention
   * @param clock the store's clock
   * @param maxStories most payments whose story is kept. Default 10 000.
   */
  constructor(options: StoryOptions = {}, clock: Clock = SYSTEM_CLOCK, maxStories = 10_000) {
    this.limits = storyLimits(options);
    this.#stories = new LRUCache({ max: maxStories });
    this.#clock = clock;
  }

  /** @inheritdoc */
  async append(batch: StoryBatch): Promise<void> {
    const now = this.#clock.now();
    const byPayment = new Map<string, StoryEntry[]>();
    for (const entry of batch.entries) {
      const list = byPayment.get(entry.paymentId) ?? [];
      list.push(entry);
      byPayment.set(entry.paymentId, list);
    }
    for (const [paymentId, added] of byPayment) {
      const key = `${batch.registration}\n${paymentId}`;
      const held = this.#live(this.#stories.get(key), now) ?? [];
      this.#stories.set(key, { value: keptEntries(held, added, this.limits.maxEntries), writtenAt: now });
    }
    for (const tally of batch.tallies) {
      const key = `${batch.registration}\n${tally.bucket}`;
      const held = this.#buckets.get(key);
      const counts = held?.value ?? {};
      addTally(counts, tally);
      this.#buckets.set(key, { value: counts, writtenAt: tally.bucket + this.limits.bucketMs });
    }
    // Old buckets go as new ones come: at most one bucket per bucketMs and registration is live.
    for (const [key, held] of this.#buckets)
      if (expired(held.writtenAt, this.limits.retentionMs, now)) this.#buckets.delete(key);
  }

  /** @inheritdoc */
  async entries(registration: string, paymentId: string): Promise<StoryEntry[]> {
    return [...(this.#live(this.#stories.get(`${registration}\n${paymentId}`), this.#clock.now()) ?? [])];
  }

  /** @inheritdoc */
  async tallies(registration: string, from: number, to: number): Promise<TallyBucket[]> {
    const now = this.#clock.now();
    const out: TallyBucket[] = [];
    for (let bucket = bucketStart(from, this.limits.bucketMs); bucket <= to; bucket += this.limits.bucketMs) {
      const held = this.#live(this.#buckets.get(`${registration}\n${bucket}`), now);
      if (held !== undefined) out.push({ bucket, counts: { ...held } });
    }
    return out;
  }

  #live<T>(kept: Kept<T> | undefined, now: number): T | undefined {
    return kept === undefined || expired(kept.writtenAt, this.limits.retentionMs, now) ? undefined : kept.value;
  }
}
