import type { StoryBatch, StoryEntry, StoryLimits, TallyBucket } from './story.rules.js';

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
