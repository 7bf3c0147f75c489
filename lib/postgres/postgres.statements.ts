import type { StoreTables } from './postgres.schema.js';

/**
 * The store's SQL, one statement per operation so that each is atomic on its own and costs one
 * round trip. Only the (validated, quoted) table names are spliced in; every value is a bound
 * parameter, and every value read back is cast to text so that no host type parser changes it.
 *
 * Leases and TTLs use the database clock (`statement_timestamp()`): every instance then agrees on
 * when a claim expires, whatever its own clock says. It is the same for the whole statement, so
 * the CASE branches of the claim see one "now". The reconciliation queue instead compares the
 * epoch ms the caller passes (`takeDuePending(now, ...)`), as the store interface asks.
 */
export interface StoreStatements {
  // Each member is the SQL of the store method of the same name; `cleanup` is the lazy sweep.
  saveBinding: string;
  findBinding: string;
  claim: string;
  markDone: string;
  release: string;
  schedulePending: string;
  takeDuePending: string;
  findPending: string;
  removePending: string;
  countPending: string;
  saveOutcome: string;
  getOutcome: string;
  listOutcomes: string;
  listFailedOutcomes: string;
  cleanup: string;
  ping: string;
}

/** How many expired rows of each table one cleanup deletes at most: keeps it short. */
export const CLEANUP_BATCH = 1000;

const expiresIn = (param: string) => `statement_timestamp() + ${param}::double precision * interval '1 millisecond'`;

/** Builds the statements for a set of tables. */
export function storeStatements(t: StoreTables): StoreStatements {
  // Claimable: nothing there, an expired row (claim or done marker), or our own claim (a resent
  // claim renews its lease). The row is always updated, unchanged when not claimable, so that the
  // statement returns the row as it stands after the conflict was resolved under its row lock:
  // that tells `done` from `busy` without a second, racy read.
  const claimable = `(e.expires_at <= statement_timestamp() OR (e.state = 'claimed' AND e.owner = EXCLUDED.owner))`;
  return {
    saveBinding: `INSERT INTO ${t.bindings} (token_id, binding, expires_at)
VALUES ($1::text, $2::text::jsonb, ${expiresIn('$3')})
ON CONFLICT (token_id) DO UPDATE SET binding = EXCLUDED.binding, expires_at = EXCLUDED.expires_at`,

    findBinding: `SELECT binding::text AS value FROM ${t.bindings} WHERE token_id = $1::text AND expires_at > statement_timestamp()`,

    claim: `INSERT INTO ${t.events} AS e (event_key, state, owner, expires_at)
VALUES ($1::text, 'claimed', $2::text, ${expiresIn('$3')})
ON CONFLICT (event_key) DO UPDATE SET
  state = CASE WHEN ${claimable} THEN 'claimed' ELSE e.state END,
  owner = CASE WHEN ${claimable} THEN EXCLUDED.owner ELSE e.owner END,
  expires_at = CASE WHEN ${claimable} THEN EXCLUDED.expires_at ELSE e.expires_at END
RETURNING state, owner`,

    // Compare-and-set on the owner and an unexpired lease: an owner whose lease ran out (and was
    // maybe taken over) must not overwrite the new holder's claim.
    markDone: `UPDATE ${t.events} SET state = 'done', owner = NULL, expires_at = ${expiresIn('$3')}
WHERE event_key = $1::text AND state = 'claimed' AND owner = $2::text AND expires_at > statement_timestamp()
RETURNING 1 AS ok`,

    release: `DELETE FROM ${t.events} WHERE event_key = $1::text AND state = 'claimed' AND owner = $2::text`,

    schedulePending: `INSERT INTO ${t.pending} (payment_id, entry, due_at)
VALUES ($1::text, $2::text::jsonb, $3::bigint)
ON CONFLICT (payment_id) DO UPDATE SET entry = EXCLUDED.entry, due_at = EXCLUDED.due_at`,

    // SKIP LOCKED: concurrent takers on other connections pass over the rows this one is taking
    // instead of waiting for them; a row taken meanwhile is re-checked against `due_at <= $1`
    // after its lock is released, and no longer matches. Each due entry goes to one taker.
    takeDuePending: `WITH due AS (
  SELECT payment_id, due_at FROM ${t.pending}
  WHERE due_at <= $1::bigint
  ORDER BY due_at, payment_id
  LIMIT $2::integer
  FOR UPDATE SKIP LOCKED
), taken AS (
  UPDATE ${t.pending} AS p SET due_at = $3::bigint FROM due
  WHERE p.payment_id = due.payment_id
  RETURNING p.payment_id, p.entry, due.due_at AS was_due
)
SELECT entry::text AS value FROM taken ORDER BY was_due, payment_id`,

    findPending: `SELECT entry::text AS value FROM ${t.pending} WHERE payment_id = $1::text`,

    removePending: `DELETE FROM ${t.pending} WHERE payment_id = $1::text`,

    countPending: `SELECT count(*)::text AS value FROM ${t.pending}`,

    saveOutcome: `INSERT INTO ${t.outcomes} (payment_id, outcome, handlers, updated_at, record, expires_at)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::text::jsonb, ${expiresIn('$6')})
ON CONFLICT (payment_id) DO UPDATE SET
  outcome = EXCLUDED.outcome, handlers = EXCLUDED.handlers, updated_at = EXCLUDED.updated_at,
  record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,

    getOutcome: `SELECT record::text AS value FROM ${t.outcomes} WHERE payment_id = $1::text AND expires_at > statement_timestamp()`,

    // Newest update first, ties by payment id; the cursor is the last row's (updated_at,
    // payment_id). A NULL filter or cursor parameter means "none". The columns are COLLATE "C".
    listOutcomes: `SELECT record::text AS value, updated_at, payment_id FROM ${t.outcomes}
WHERE expires_at > statement_timestamp()
  AND ($1::text IS NULL OR handlers = $1::text)
  AND ($2::text IS NULL OR outcome = $2::text)
  AND ($3::text IS NULL OR updated_at < $3::text OR (updated_at = $3::text AND payment_id > $4::text))
ORDER BY updated_at DESC, payment_id
LIMIT $5::integer`,

    // listOutcomes({ handlers: 'failed' }), the admin's retry page. The filter is a literal so
    // that the partial index on failed records is provably usable, in generic plans too; the
    // parameters are those of listOutcomes ($1 is then 'failed').
    listFailedOutcomes: `SELECT record::text AS value, updated_at, payment_id FROM ${t.outcomes}
WHERE handlers = 'failed' AND expires_at > statement_timestamp()
  AND ($1::text IS NULL OR $1::text = 'failed')
  AND ($2::text IS NULL OR outcome = $2::text)
  AND ($3::text IS NULL OR updated_at < $3::text OR (updated_at = $3::text AND payment_id > $4::text))
ORDER BY updated_at DESC, payment_id
LIMIT $5::integer`,

    // One statement, three bounded deletes (data-modifying CTEs all run): the sweep that stands
    // in for a cron. The pending queue has no expiry: its entries leave by removePending.
    // A row picked while expired may be written again (a re-claim after a crash, a record or
    // binding saved over it) by another connection before the DELETE reaches it: SKIP LOCKED
    // passes over rows being written right now, and the expiry repeated on the DELETE itself is
    // what PostgreSQL re-checks against a row updated meanwhile (a bare `key IN (...)` would
    // still match and delete the fresh claim, letting a third claimer in).
    cleanup: `WITH b AS (
  DELETE FROM ${t.bindings} WHERE expires_at < statement_timestamp() AND token_id IN (
    SELECT token_id FROM ${t.bindings} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), e AS (
  DELETE FROM ${t.events} WHERE expires_at < statement_timestamp() AND event_key IN (
    SELECT event_key FROM ${t.events} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), o AS (
  DELETE FROM ${t.outcomes} WHERE expires_at < statement_timestamp() AND payment_id IN (
    SELECT payment_id FROM ${t.outcomes} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
)
SELECT ((SELECT count(*) FROM b) + (SELECT count(*) FROM e) + (SELECT count(*) FROM o))::text AS value`,

    ping: 'SELECT 1 AS value',
  };
}
