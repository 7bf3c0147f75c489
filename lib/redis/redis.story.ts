import {
  bucketStart,
  parseStoryEntry,
  storyLimits,
  type PaymentStoryLog,
  type StoryBatch,
  type StoryEntry,
  type StoryLimits,
  type StoryOptions,
  type TallyBucket,
} from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { SCRIPT_NAMES } from './redis.scripts.js';

/** Most buckets read in one pipeline: a 30-day window of hourly buckets is 720. */
const MAX_BUCKETS_READ = 10_000;

/**
 * The {@link PaymentStoryLog} of `RedisPaymentsStore`. A registration's keys share one hash tag,
 * `<prefix>{story:<registration>}:`, so that a batch is one pipeline to one node, in a Redis Cluster
 * too (a prefix with a hash tag of its own keeps every key in its slot, as for the other keys):
 * `...:entries:<paymentId>` (a list of JSON entries: RPUSH, LTRIM to the newest `maxEntries`,
 * PEXPIRE to the retention) and `...:tally:<bucket>` (a hash of counters: HINCRBY, PEXPIREAT to the
 * bucket's end plus the retention). A batch is one script call, apart from the store's ingest
 * scripts: the recorder sends it after the paths that noted it, never in their way.
 */
export class RedisStoryLog implements PaymentStoryLog {
  /** @inheritdoc */
  readonly limits: StoryLimits;

  /**
   * @param db the store's connection
   * @param prefix the store's key prefix
   * @param options the bounds and retention
   */
  constructor(
    private readonly db: RedisConnection,
    private readonly prefix: string,
    options: StoryOptions = {},
  ) {
    this.limits = storyLimits(options);
  }

  #base(registration: string): string {
    return `${this.prefix}{story:${registration}}:`;
  }

  /** @inheritdoc */
  async append(batch: StoryBatch): Promise<void> {
    if (batch.entries.length === 0 && batch.tallies.length === 0) return;
    const base = this.#base(batch.registration);
    const { maxEntries, retentionMs, bucketMs } = this.limits;
    const byPayment = new Map<string, string[]>();
    for (const entry of batch.entries) {
      const list = byPayment.get(entry.paymentId);
      if (list === undefined) byPayment.set(entry.paymentId, [JSON.stringify(entry)]);
      else list.push(JSON.stringify(entry));
    }
    const byBucket = new Map<number, Array<string | number>>();
    for (const tally of batch.tallies) {
      const counters = byBucket.get(tally.bucket);
      if (counters === undefined) byBucket.set(tally.bucket, [tally.name, tally.by]);
      else counters.push(tally.name, tally.by);
    }
    // One script call (APPEND_STORY_LUA): the keys, then what goes in each.
    const keys: string[] = [];
    const args: Array<string | number> = [maxEntries, retentionMs, byPayment.size];
    for (const [paymentId, texts] of byPayment) {
      keys.push(`${base}entries:${paymentId}`);
      args.push(texts.length, ...texts);
    }
    for (const [bucket, counters] of byBucket) {
      keys.push(`${base}tally:${bucket}`);
      args.push(bucket + bucketMs + retentionMs, counters.length / 2, ...counters);
    }
    await this.db.run('appendStory', () => this.db.scripts[SCRIPT_NAMES.appendStory](keys.length, ...keys, ...args));
  }

  /** @inheritdoc */
  async entries(registration: string, paymentId: string): Promise<StoryEntry[]> {
    const texts = await this.db.run('storyEntries', () =>
      this.db.client.lrange(`${this.#base(registration)}entries:${paymentId}`, 0, -1),
    );
    return texts.map(parseStoryEntry).filter((e): e is StoryEntry => e !== undefined);
  }

  /** @inheritdoc */
  async tallies(registration: string, from: number, to: number): Promise<TallyBucket[]> {
    const base = this.#base(registration);
    const buckets: number[] = [];
    for (
      let b = bucketStart(from, this.limits.bucketMs);
      b <= to && buckets.length < MAX_BUCKETS_READ;
      b += this.limits.bucketMs
    )
      buckets.push(b);
    if (buckets.length === 0) return [];
    const pipeline = this.db.client.pipeline();
    for (const b of buckets) pipeline.hgetall(`${base}tally:${b}`);
    const replies = (await this.db.run('storyTallies', () => pipeline.exec())) ?? [];
    const out: TallyBucket[] = [];
    replies.forEach(([error, value], i) => {
      if (error) throw error;
      const fields = value as Record<string, string>;
      const names = Object.keys(fields);
      if (names.length === 0) return;
      out.push({ bucket: buckets[i], counts: Object.fromEntries(names.map((n) => [n, Number(fields[n])])) });
    });
    return out;
  }
}
