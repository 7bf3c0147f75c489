import {
  bucketStart,
  keptEntries,
  parseStoryEntry,
  storyLimits,
  type PaymentStoryLog,
  type StoryBatch,
  type StoryEntry,
  type StoryLimits,
  type StoryOptions,
  type TallyBucket,
} from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';
import { valueOf } from './postgres.rows.js';
import type { StoreTables } from './postgres.schema.js';

const expiresIn = (param: string) => `statement_timestamp() + ${param}::double precision * interval '1 millisecond'`;

/** The statements of the story log (values bound, table names quoted). */
export interface StoryStatements {
  /** The batch in one statement: stories appended and trimmed, tallies added. */
  append: string;
  /** A payment's live story. */
  entries: string;
  /** The live tallies of a range of buckets. */
  tallies: string;
}

/** Builds the story log's statements for a set of tables. */
export function storyStatements(t: Pick<StoreTables, 'stories' | 'tallies'>): StoryStatements {
  // $1 registration, $2 [{paymentId, entries}] (one element per payment), $3 [{bucket, name, by}],
  // $4 entries kept per payment, $5 retention in ms, $6 bucket length in ms.
  const live = `CASE WHEN s.expires_at > statement_timestamp() THEN s.entries ELSE '[]'::jsonb END || EXCLUDED.entries`;
  return {
    append: `WITH story AS (
  INSERT INTO ${t.stories} AS s (registration, payment_id, entries, expires_at)
  SELECT $1::text, p->>'paymentId', p->'entries', ${expiresIn('$5')}
  FROM jsonb_array_elements($2::text::jsonb) AS p
  ON CONFLICT (registration, payment_id) DO UPDATE SET
    entries = (SELECT COALESCE(jsonb_agg(x.e ORDER BY x.i), '[]'::jsonb)
      FROM jsonb_array_elements(${live}) WITH ORDINALITY AS x(e, i)
      WHERE x.i > jsonb_array_length(${live}) - $4::int),
    expires_at = EXCLUDED.expires_at
  RETURNING 1
), tally AS (
  INSERT INTO ${t.tallies} AS c (registration, bucket, name, count, expires_at)
  SELECT $1::text, (x->>'bucket')::bigint, x->>'name', sum((x->>'by')::bigint),
    to_timestamp(((x->>'bucket')::bigint + $6::bigint + $5::bigint) / 1000.0)
  FROM jsonb_array_elements($3::text::jsonb) AS x
  GROUP BY (x->>'bucket')::bigint, x->>'name'
  ON CONFLICT (registration, bucket, name) DO UPDATE SET
    count = CASE WHEN c.expires_at > statement_timestamp() THEN c.count ELSE 0 END + EXCLUDED.count,
    expires_at = EXCLUDED.expires_at
  RETURNING 1
)
SELECT (SELECT count(*) FROM story) + (SELECT count(*) FROM tally) AS value`,
    entries: `SELECT entries::text AS value FROM ${t.stories}
WHERE registration = $1::text AND payment_id = $2::text AND expires_at > statement_timestamp()`,
    tallies: `SELECT bucket::text AS bucket, name, count::text AS count FROM ${t.tallies}
WHERE registration = $1::text AND bucket BETWEEN $2::bigint AND $3::bigint AND expires_at > statement_timestamp()
ORDER BY bucket, name`,
  };
}

/**
 * The {@link PaymentStoryLog} of `PostgresPaymentsStore`: `<prefix>stories` (one row per payment,
 * its newest entries as a JSON array) and `<prefix>tallies` (one row per registration, bucket and
 * counter). A batch is one statement (one round trip), apart from the store's ingest statements:
 * the recorder sends it after the paths that noted it, never in their way. Expired rows are read as
 * none, and deleted by the store's cleanup with its other expired rows (an append counts as a write
 * towards `cleanupEveryWrites`), which close() waits for.
 */
export class PostgresStoryLog implements PaymentStoryLog {
  /** @inheritdoc */
  readonly limits: StoryLimits;
  readonly #sql: StoryStatements;

  /**
   * @param db the store's connection
   * @param tables the store's tables
   * @param options the bounds and retention
   */
  constructor(
    private readonly db: PostgresConnection,
    tables: Pick<StoreTables, 'stories' | 'tallies'>,
    options: StoryOptions = {},
  ) {
    this.limits = storyLimits(options);
    this.#sql = storyStatements(tables);
  }

  /** @inheritdoc */
  async append(batch: StoryBatch): Promise<void> {
    if (batch.entries.length === 0 && batch.tallies.length === 0) return;
    const byPayment = new Map<string, StoryEntry[]>();
    for (const entry of batch.entries)
      byPayment.set(entry.paymentId, [...(byPayment.get(entry.paymentId) ?? []), entry]);
    const stories = [...byPayment].map(([paymentId, added]) => ({
      paymentId,
      entries: keptEntries([], added, this.limits.maxEntries),
    }));
    const { maxEntries, retentionMs, bucketMs } = this.limits;
    await this.db.query('appendStory', this.#sql.append, [
      batch.registration,
      JSON.stringify(stories),
      JSON.stringify(batch.tallies),
      maxEntries,
      retentionMs,
      bucketMs,
    ]);
    this.db.countWrite();
  }

  /** @inheritdoc */
  async entries(registration: string, paymentId: string): Promise<StoryEntry[]> {
    const rows = await this.db.query('storyEntries', this.#sql.entries, [registration, paymentId]);
    if (rows.length === 0) return [];
    const list = JSON.parse(String(valueOf(rows[0]))) as unknown[];
    return list.map((e) => parseStoryEntry(JSON.stringify(e))).filter((e): e is StoryEntry => e !== undefined);
  }

  /** @inheritdoc */
  async tallies(registration: string, from: number, to: number): Promise<TallyBucket[]> {
    const start = bucketStart(from, this.limits.bucketMs);
    const rows = (await this.db.query('storyTallies', this.#sql.tallies, [registration, start, to])) as Array<{
      bucket: string;
      name: string;
      count: string;
    }>;
    const out: TallyBucket[] = [];
    for (const row of rows) {
      const bucket = Number(row.bucket);
      if (out.at(-1)?.bucket !== bucket) out.push({ bucket, counts: {} });
      out[out.length - 1].counts[row.name] = Number(row.count);
    }
    return out;
  }
}
