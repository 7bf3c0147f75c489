/**
 * The story of a payment (what happened to it, entry by entry, for the people who run the shop)
 * and the tallies the desk's charts are drawn from: the records and the pure rules every store
 * shares (bounds, retention, time buckets, the handling-time histogram and its percentiles), the
 * port a store keeps them behind ({@link PaymentStoryLog}), and the in-memory store's log.
 */
import { LRUCache } from 'lru-cache';
import { SYSTEM_CLOCK, type Clock } from '../time/index.js';

/** What one entry of a payment's story tells. */
export type StoryKind = 'created' | 'webhook' | 'verify' | 'return' | 'handlers' | 'duplicate' | 'refund' | 'desk';

/** One entry of a payment's story. Every string in it was cut of the client's secrets before it was written. */
export interface StoryEntry {
  /** The payment. */
  paymentId: string;
  /** ISO 8601 time of the entry (the engine's clock). */
  at: string;
  /** The app instance that wrote it (host name and process id). */
  instance: string;
  /** The path: `generate`, `webhook`, `return`, `reconciliation`, `desk`. */
  source: string;
  /** What happened. */
  kind: StoryKind;
  /** What it was answered, or what the service said (an HTTP status, a verify status, a result). */
  answer: string;
  /** The error, when it failed. */
  error?: string;
}

/** How many of one name a time bucket counts, e.g. `{ name: 'outcome.confirmed', by: 1 }`. */
export interface StoryTally {
  /** The counter's name (see {@link TALLY} for the names the engine writes). */
  name: string;
  /** How much to add (a positive integer). */
  by: number;
}

/** What the engine writes in one go: story entries and tallies, all of one registration. */
export interface StoryBatch {
  /** The registration's name (`''` for the unnamed one). */
  registration: string;
  /** The entries, oldest first. */
  entries: StoryEntry[];
  /** The tallies, each with the epoch ms its time bucket starts at. */
  tallies: Array<
    StoryTally & {
      /** Epoch ms the tally's time bucket starts at. */
      bucket: number;
    }
  >;
}

/** One time bucket's counters. */
export interface TallyBucket {
  /** Epoch ms the bucket starts at. */
  bucket: number;
  /** Counter name to count. */
  counts: Record<string, number>;
}

/** How a store keeps stories and tallies. */
export interface StoryOptions {
  /** Entries kept per payment: the newest, the older dropped. Default 50. */
  maxEntries?: number;
  /** How long a story is kept after its latest entry, and a tally bucket after it ends, in seconds. Default 2592000 (30 days). */
  retentionSecs?: number;
  /** A tally bucket's length in seconds (the charts' resolution). Default 3600 (one hour). */
  bucketSecs?: number;
}

/** {@link StoryOptions} checked, with defaults, in ms. */
export interface StoryLimits {
  /** See {@link StoryOptions.maxEntries}. */
  readonly maxEntries: number;
  /** See {@link StoryOptions.retentionSecs}; in ms. */
  readonly retentionMs: number;
  /** See {@link StoryOptions.bucketSecs}; in ms. */
  readonly bucketMs: number;
}

/** The defaults of {@link StoryOptions}. */
export const STORY_DEFAULTS = {
  /** Entries kept per payment. */
  maxEntries: 50,
  /** Thirty days. */
  retentionSecs: 30 * 24 * 3600,
  /** One hour. */
  bucketSecs: 3600,
} as const;

function positiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`story.${name} must be a positive integer`);
  return value;
}

/**
 * The limits of {@link StoryOptions}.
 * @throws TypeError naming the option that is not a positive integer
 */
export function storyLimits(options: StoryOptions = {}): StoryLimits {
  return {
    maxEntries: positiveInt(options.maxEntries, 'maxEntries', STORY_DEFAULTS.maxEntries),
    retentionMs: positiveInt(options.retentionSecs, 'retentionSecs', STORY_DEFAULTS.retentionSecs) * 1000,
    bucketMs: positiveInt(options.bucketSecs, 'bucketSecs', STORY_DEFAULTS.bucketSecs) * 1000,
  };
}

/** The start of the time bucket `at` falls in (epoch ms; buckets are aligned on the epoch). */
export function bucketStart(at: number, bucketMs: number): number {
  return Math.floor(at / bucketMs) * bucketMs;
}

/** The entries a story keeps after `added` are appended: the newest `max`. */
export function keptEntries<T>(entries: readonly T[], added: readonly T[], max: number): T[] {
  const all = [...entries, ...added];
  return all.slice(Math.max(0, all.length - max));
}

/** Whether something last written at `writtenAt` is past its retention at `now`. */
export function expired(writtenAt: number, retentionMs: number, now: number): boolean {
  return now - writtenAt >= retentionMs;
}

/**
 * The upper bounds, in ms, of the histogram of the time from paid to handled; the last slot
 * (`le.inf`) takes what is longer.
 */
export const HANDLING_BOUNDS_MS = [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000];

/** The counter names the engine writes. */
export const TALLY = {
  /** A payment's outcome, once handled: `outcome.confirmed`, `outcome.duplicate`, ... */
  outcome: (outcome: string): string => `outcome.${outcome}`,
  /** A verify call made while settling a payment whose outcome was then handled. */
  verifySettled: 'verify.settled',
  /** Payments settled (handled, duplicates, mismatches): the denominator of {@link TALLY.verifySettled}. */
  settled: 'settled',
  /** A verify call spent on a stranger (a payment the plugin has no record of sending). */
  verifyStranger: 'verify.stranger',
  /** A webhook delivery refused (4xx) before it cost anything. */
  refused: 'webhook.refused',
  /** The histogram slot of a time from paid to handled: `handled.le.<bound>` or `handled.le.inf`. */
  handled: (ms: number): string => HANDLED_NAMES[handlingSlotIndex(ms)],
} as const;

/** The index in {@link HANDLING_BOUNDS_MS} of a duration's slot; their count for the `inf` slot. */
function handlingSlotIndex(ms: number): number {
  let i = 0;
  while (i < HANDLING_BOUNDS_MS.length && !(ms <= HANDLING_BOUNDS_MS[i])) i++;
  return i;
}

/** The counter names of the slots, by {@link handlingSlotIndex}: one string per slot, not one per payment handled. */
const HANDLED_NAMES: readonly string[] = Object.freeze(
  [...HANDLING_BOUNDS_MS.map(String), 'inf'].map((slot) => `handled.le.${slot}`),
);

/** The histogram slot's name of a duration: its upper bound in ms, or `inf`. */
export function handlingSlot(ms: number): string {
  const i = handlingSlotIndex(ms);
  return i < HANDLING_BOUNDS_MS.length ? String(HANDLING_BOUNDS_MS[i]) : 'inf';
}

/** The histogram of handling times summed over `buckets`, in the order of {@link HANDLING_BOUNDS_MS} then `inf`. */
export function handlingHistogram(buckets: readonly TallyBucket[]): Array<{ le: string; count: number }> {
  const slots = [...HANDLING_BOUNDS_MS.map(String), 'inf'];
  return slots.map((le) => ({ le, count: buckets.reduce((sum, b) => sum + (b.counts[`handled.le.${le}`] ?? 0), 0) }));
}

/**
 * The `p`-th percentile (0 < p <= 100) of a histogram, as the upper bound of the slot it falls in
 * (`Infinity` for the last slot); `undefined` when the histogram is empty.
 */
export function histogramPercentile(
  histogram: ReadonlyArray<{ le: string; count: number }>,
  p: number,
): number | undefined {
  const total = histogram.reduce((sum, s) => sum + s.count, 0);
  if (total === 0) return undefined;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const slot of histogram) {
    seen += slot.count;
    if (seen >= rank) return slot.le === 'inf' ? Infinity : Number(slot.le);
  }
  return Infinity;
}

/** The sum of one counter over `buckets`. */
export function tallySum(buckets: readonly TallyBucket[], name: string): number {
  return buckets.reduce((sum, b) => sum + (b.counts[name] ?? 0), 0);
}

/** Adds `tally` to `counts` (in place). */
export function addTally(counts: Record<string, number>, tally: StoryTally): void {
  counts[tally.name] = (counts[tally.name] ?? 0) + tally.by;
}

/** A stored entry read back, or `undefined` when it is not one (a corrupt or foreign value). */
export function parseStoryEntry(text: string): StoryEntry | undefined {
  try {
    const e = JSON.parse(text) as Record<string, unknown>;
    if (typeof e !== 'object' || e === null) return undefined;
    const strings = ['paymentId', 'at', 'instance', 'source', 'kind', 'answer'];
    if (!strings.every((k) => typeof e[k] === 'string')) return undefined;
    if (e.error !== undefined && typeof e.error !== 'string') return undefined;
    return e as unknown as StoryEntry;
  } catch {
    return undefined;
  }
}

/**
 * Where a store keeps the stories of payments and the charts' tallies (the desk reads both). A
 * store offers it as its `story` property; a store without one records nothing, and the desk says
 * so. Written best-effort: the engine batches what it notes and writes it off the path that
 * noted it, so a lost write loses a line of a story or a count, never money-relevant state.
 */
export interface PaymentStoryLog {
  /** The limits the store applies (entries per payment, retention, bucket length). */
  readonly limits: StoryLimits;

  /**
   * Appends `batch.entries` to their payments' stories (each story keeps its newest
   * `limits.maxEntries`, and is kept `limits.retentionMs` after its latest entry), and adds
   * `batch.tallies` to their buckets (kept `limits.retentionMs` after the bucket ends). One write
   * in the shipped stores.
   */
  append(batch: StoryBatch): Promise<void>;

  /** A payment's story, oldest first; empty when none is kept. */
  entries(registration: string, paymentId: string): Promise<StoryEntry[]>;

  /**
   * The tallies of the buckets that start from `from` up to `to` (epoch ms, both included), oldest
   * first; a bucket with nothing counted may be left out.
   */
  tallies(registration: string, from: number, to: number): Promise<TallyBucket[]>;
}

/** A store's {@link PaymentStoryLog}, or `undefined` when it keeps none. */
export function storyLogOf(store: object): PaymentStoryLog | undefined {
  const story = (store as { story?: unknown }).story;
  if (typeof story !== 'object' || story === null) return undefined;
  const s = story as Record<string, unknown>;
  return typeof s.append === 'function' && typeof s.entries === 'function' && typeof s.tallies === 'function'
    ? (story as PaymentStoryLog)
    : undefined;
}

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
      const list = byPayment.get(entry.paymentId);
      if (list === undefined) byPayment.set(entry.paymentId, [entry]);
      else list.push(entry);
    }
    const max = this.limits.maxEntries;
    for (const [paymentId, added] of byPayment) {
      const key = `${batch.registration}\n${paymentId}`;
      const held = this.#live(this.#stories.get(key), now);
      // A new story within its bound keeps the batch's own list (made here, shared with no one).
      const value = held === undefined && added.length <= max ? added : keptEntries(held ?? [], added, max);
      this.#stories.set(key, { value, writtenAt: now });
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
