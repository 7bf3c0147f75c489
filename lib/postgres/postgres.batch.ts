import type { PostgresConnection } from './postgres.connection.js';
import type { StoreTables } from './postgres.schema.js';

/** Calls one batch carries at most: keeps its statement, and what waits on it, short. */
export const MAX_BATCH = 64;

/**
 * Batches of one statement in flight at once: commits of a few connections overlap (a single one
 * in flight made each call wait for the commit before it, which under load cost more throughput
 * than the batches saved), and the rest of the pool is left to everything else.
 */
export const MAX_IN_FLIGHT = 4;

/** One call waiting for its batch. */
interface Queued<Call> {
  call: Call;
  keys: readonly string[];
  resolve(rows: unknown[]): void;
  reject(error: unknown): void;
}

/**
 * Group commit for one of the store's statements: a call made while {@link MAX_IN_FLIGHT} batches
 * of the same statement are on their way goes out with the next batch, as one statement, one round
 * trip and one commit for all its calls. Below that a call goes out at once, alone: batching adds
 * no wait to a store that is not busy, and under load it replaces a commit per call (the
 * database's largest cost per webhook: figures in docs/performance.md) by one per batch.
 *
 * Each call keeps what it had alone: its row is written by the same rule, on one snapshot, and
 * its promise settles once the batch's statement committed (or failed: then every call of the
 * batch rejects, as each would have alone on an unreachable database). A call that shares a key
 * (the same event or payment) with a call in flight or in its batch waits for the next batch: one
 * statement may write a row only once, and two batches in flight never wait for each other's rows.
 */
export class StatementBatcher<Call> {
  #queue: Array<Queued<Call>> = [];
  #inFlight = 0;
  /** The keys of the calls in flight. */
  readonly #busy = new Set<string>();

  /**
   * @param send sends the calls as one statement (an async function: it rejects, never throws);
   *   resolves with the rows of each call, in order
   * @param keysOf the rows a call writes: calls sharing one are never in flight together
   */
  constructor(
    private readonly send: (calls: Call[]) => Promise<unknown[][]>,
    private readonly keysOf: (call: Call) => readonly string[],
  ) {}

  /** Sends `call` with the next batch; resolves with its rows once that batch committed. */
  run(call: Call): Promise<unknown[]> {
    return new Promise<unknown[]>((resolve, reject) => {
      this.#queue.push({ call, keys: this.keysOf(call), resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    while (this.#inFlight < MAX_IN_FLIGHT && this.#queue.length > 0) {
      const batch: Array<Queued<Call>> = [];
      const rest: Array<Queued<Call>> = [];
      for (const queued of this.#queue) {
        if (batch.length < MAX_BATCH && queued.keys.every((key) => !this.#busy.has(key))) {
          for (const key of queued.keys) this.#busy.add(key);
          batch.push(queued);
        } else rest.push(queued);
      }
      this.#queue = rest;
      if (batch.length === 0) return;
      this.#inFlight++;
      const settle = () => {
        this.#inFlight--;
        for (const queued of batch) for (const key of queued.keys) this.#busy.delete(key);
        this.#next();
      };
      this.send(batch.map((queued) => queued.call))
        .then(
          (rows) => batch.forEach((queued, k) => queued.resolve(rows[k] ?? [])),
          (error: unknown) => batch.forEach((queued) => queued.reject(error)),
        )
        .finally(settle);
    }
  }
}

/** A webhook's binding lookup and claim, as `findBindingAndClaim` takes it. */
export interface BindingClaimCall {
  tokenId: string;
  eventKey: string;
  owner: string;
  paymentId: string;
  leaseMs: number;
}

// Claimable as in storeStatements' claim: nothing there, an expired row, or our own claim.
const CLAIMABLE = `(e.expires_at <= statement_timestamp() OR (e.state = 'claimed' AND e.owner = EXCLUDED.owner))`;
const expiresIn = (ms: string) => `statement_timestamp() + ${ms} * interval '1 millisecond'`;

/**
 * The batched forms of the two statements of a webhook, `findBindingAndClaim` and
 * `finishOutcome` (postgres.statements.ts): the same rules, over the rows of one JSON parameter
 * (one string, which PGlite's named statements take as well as `pg` does), each row answered with
 * its number `n`. Rows are written in key order, so that two batches lock the rows they share in
 * the same order. Every row is found through its table's key (an index probe per row), as by the
 * single statements, whatever the planner guesses of the JSON's size.
 */
export function batchStatements(t: StoreTables): { findBindingAndClaim: string; finishOutcome: string } {
  return {
    findBindingAndClaim: `WITH i AS (
  SELECT * FROM jsonb_to_recordset($1::text::jsonb)
    AS i(n integer, token_id text, event_key text, owner text, payment_id text, lease double precision)
), b AS (
  -- LIMIT keeps each lookup a subquery of its own, an index probe per row: joined, the planner
  -- expects a hundred rows of the JSON and scans every binding.
  SELECT i.n, i.event_key, i.owner, i.payment_id, i.lease, bd.binding
  FROM i CROSS JOIN LATERAL (
    SELECT binding FROM ${t.bindings} WHERE token_id = i.token_id AND expires_at > statement_timestamp() LIMIT 1
  ) bd
), c AS (
  INSERT INTO ${t.events} AS e (event_key, state, owner, expires_at)
  SELECT b.event_key, 'claimed', b.owner, ${expiresIn('b.lease')} FROM b
  WHERE b.binding->>'paymentId' = b.payment_id ORDER BY b.event_key COLLATE "C"
  ON CONFLICT (event_key) DO UPDATE SET
    state = CASE WHEN ${CLAIMABLE} THEN 'claimed' ELSE e.state END,
    owner = CASE WHEN ${CLAIMABLE} THEN EXCLUDED.owner ELSE e.owner END,
    expires_at = CASE WHEN ${CLAIMABLE} THEN EXCLUDED.expires_at ELSE e.expires_at END
  RETURNING e.event_key, e.state, e.owner
)
SELECT i.n, b.binding::text AS value, c.state, c.owner
FROM i LEFT JOIN b ON b.n = i.n LEFT JOIN c ON c.event_key = i.event_key`,

    finishOutcome: `WITH i AS (
  SELECT * FROM jsonb_to_recordset($1::text::jsonb)
    AS i(n integer, event_key text, owner text, done_ttl double precision, payment_id text, outcome text,
         handlers text, updated_at text, record text, mode text, added integer, record_ttl double precision)
), marked AS (
  UPDATE ${t.events} AS e SET state = 'done', owner = NULL, expires_at = ${expiresIn('i.done_ttl')}
  FROM i WHERE e.event_key = ANY (ARRAY(SELECT event_key FROM i WHERE mode = 'done'))
    AND i.mode = 'done' AND e.event_key = i.event_key AND e.state = 'claimed' AND e.owner = i.owner
    AND e.expires_at > statement_timestamp()
  RETURNING e.event_key
), released AS (
  DELETE FROM ${t.events} AS e USING i
  WHERE e.event_key = ANY (ARRAY(SELECT event_key FROM i WHERE mode = 'release'))
    AND i.mode = 'release' AND e.event_key = i.event_key AND e.state = 'claimed' AND e.owner = i.owner
  RETURNING 1
), unqueued AS (
  DELETE FROM ${t.pending} WHERE payment_id = ANY (ARRAY(SELECT payment_id FROM i WHERE mode = 'done'))
  RETURNING 1
), saved AS (
  INSERT INTO ${t.outcomes} AS o (payment_id, outcome, handlers, updated_at, record, expires_at)
  SELECT i.payment_id, i.outcome, i.handlers, i.updated_at, jsonb_set(i.record::jsonb, '{attempts}', to_jsonb(i.added)),
    ${expiresIn('i.record_ttl')}
  FROM i ORDER BY i.payment_id COLLATE "C"
  ON CONFLICT (payment_id) DO UPDATE SET
    outcome = EXCLUDED.outcome, handlers = EXCLUDED.handlers, updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,
    record = jsonb_set(EXCLUDED.record, '{attempts}', to_jsonb((EXCLUDED.record->>'attempts')::integer + CASE
      WHEN o.expires_at > statement_timestamp() AND jsonb_typeof(o.record->'attempts') = 'number' THEN (o.record->>'attempts')::numeric
      ELSE 0 END))
  RETURNING 1
)
SELECT i.n, (m.event_key IS NOT NULL)::int::text AS value FROM i LEFT JOIN marked m ON m.event_key = i.event_key`,
  };
}

/**
 * The two batchers of a store's webhook statements. A batch of one call is sent as the single
 * statement (postgres.statements.ts), which costs the database less than the batched form of one. Each answers a call with the rows its
 * single statement would have answered: `findBindingAndClaim` one row (value, state, owner) or
 * none, `finishOutcome` (a call is the parameters `finishOutcomeParams` gives, checked before it is
 * queued) one row whose value is '1' when the claim was marked done.
 */
export function webhookBatchers(
  db: PostgresConnection,
  tables: StoreTables,
): { claims: StatementBatcher<BindingClaimCall>; finishes: StatementBatcher<unknown[]> } {
  const sql = batchStatements(tables);
  // The rows of each call by their number; a call whose binding was not found has no row.
  const byNumber = (count: number, rows: unknown[], keep: (row: Record<string, unknown>) => boolean) => {
    const out: unknown[][] = Array.from({ length: count }, () => []);
    for (const row of rows as Array<Record<string, unknown>>) {
      const n = Number(row.n);
      if (Number.isInteger(n) && n >= 0 && n < count && keep(row)) out[n] = [row];
    }
    return out;
  };
  return {
    claims: new StatementBatcher<BindingClaimCall>(
      async (calls) => {
        if (calls.length === 1) {
          const [c] = calls;
          return [
            await db.send('findBindingAndClaim', db.sql.findBindingAndClaim, [
              c.tokenId,
              c.eventKey,
              c.owner,
              c.paymentId,
              c.leaseMs,
            ]),
          ];
        }
        const rows = calls.map((c, n) => ({
          n,
          token_id: c.tokenId,
          event_key: c.eventKey,
          owner: c.owner,
          payment_id: c.paymentId,
          lease: c.leaseMs,
        }));
        const answer = await db.send('findBindingAndClaim', sql.findBindingAndClaim, [JSON.stringify(rows)]);
        // A row without a binding is what the single statement answers with no row at all.
        return byNumber(calls.length, answer, (row) => row.value !== null && row.value !== undefined);
      },
      (c) => [c.eventKey],
    ),
    finishes: new StatementBatcher<unknown[]>(
      async (calls) => {
        if (calls.length === 1) return [await db.send('finishOutcome', db.sql.finishOutcome, calls[0])];
        const rows = calls.map((p, n) => ({
          n,
          event_key: p[0],
          owner: p[1],
          done_ttl: p[2],
          payment_id: p[3],
          outcome: p[4],
          handlers: p[5],
          updated_at: p[6],
          record: p[7],
          mode: p[8],
          added: p[9],
          record_ttl: p[10],
        }));
        const answer = await db.send('finishOutcome', sql.finishOutcome, [JSON.stringify(rows)]);
        return byNumber(calls.length, answer, () => true);
      },
      (p) => [`event:${String(p[0])}`, `payment:${String(p[3])}`],
    ),
  };
}
