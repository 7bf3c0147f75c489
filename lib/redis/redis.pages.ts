import {
  outcomeCursor,
  outcomePageLimit,
  parseOutcomeCursor,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
} from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { SCRIPT_NAMES } from './redis.scripts.js';
import { outcomeScore, parseOutcome } from './redis.values.js';

/**
 * One page of `RedisPaymentsStore.listOutcomes`: records newest update first (ties by payment id),
 * filtered, paged by the order index's score and member (see the store's method).
 */
export async function listOutcomePage(db: RedisConnection, query: OutcomeQuery): Promise<OutcomePage> {
  const limit = outcomePageLimit(query);
  const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
  const reply = await db.run('listOutcomes', () =>
    db.scripts[SCRIPT_NAMES.listOutcomes](
      db.keys.outcomesIndex,
      db.keys.outcomePrefix,
      db.keys.outcomesExpiry,
      after ? outcomeScore(after.updatedAt) : '-inf',
      after ? '1' : '0',
      after?.paymentId ?? '',
      limit + 1,
      query.handlers ?? '',
      query.outcome ?? '',
    ),
  );
  if (!Array.isArray(reply) || reply.length < 3)
    throw new Error('RedisPaymentsStore: unexpected reply to listOutcomes');
  const [lastScore, lastId, exhausted, ...flat] = reply.map((v) => String(v));
  const matches: Array<{ score: string; id: string; record: OutcomeRecord | undefined }> = [];
  for (let i = 0; i + 2 < flat.length; i += 3)
    matches.push({ score: flat[i], id: flat[i + 1], record: parseOutcome(flat[i + 2]) });
  const items = matches
    .slice(0, limit)
    .map((m) => m.record)
    .filter((r): r is OutcomeRecord => r !== undefined);
  // Cursors are made from the index (score and member), the order the script pages by, so a
  // record that fails to parse cannot stop the paging. With more matches than the page, go on
  // after the page's last one; when the scan budget ran out first, after the last examined.
  const next =
    matches.length > limit
      ? matches[limit - 1]
      : exhausted !== '1' && lastId !== ''
        ? { score: lastScore, id: lastId }
        : undefined;
  return next
    ? {
        items,
        nextCursor: outcomeCursor({ updatedAt: new Date(-Number(next.score)).toISOString(), paymentId: next.id }),
      }
    : { items };
}
