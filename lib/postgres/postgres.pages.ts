import {
  outcomeCursor,
  outcomePageLimit,
  parseOutcomeCursor,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
} from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';
import { parseOutcome, valueOf } from './postgres.rows.js';

/**
 * One page of `PostgresPaymentsStore.listOutcomes`: records newest update first (ties by payment
 * id), filtered, paged by the rows' key columns.
 */
export async function listOutcomePage(db: PostgresConnection, query: OutcomeQuery): Promise<OutcomePage> {
  const limit = outcomePageLimit(query);
  const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
  // One row more than the page tells whether there is a next page.
  const sql = query.handlers === 'failed' ? db.sql.listFailedOutcomes : db.sql.listOutcomes;
  const rows = await db.query('listOutcomes', sql, [
    query.handlers ?? null,
    query.outcome ?? null,
    after?.updatedAt ?? null,
    after?.paymentId ?? null,
    limit + 1,
  ]);
  const items = rows
    .slice(0, limit)
    .map((row) => parseOutcome(valueOf(row)))
    .filter((r): r is OutcomeRecord => r !== undefined);
  if (rows.length <= limit) return { items };
  // The cursor comes from the row's key columns, not the parsed record, so that a row that
  // failed to parse cannot stop the paging.
  const last = rows[limit - 1] as { updated_at?: unknown; payment_id?: unknown };
  return {
    items,
    nextCursor: outcomeCursor({ updatedAt: String(last.updated_at), paymentId: String(last.payment_id) }),
  };
}
