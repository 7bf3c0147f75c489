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
  // Each member is the SQL of the store method of the same name; `cleanup` is the lazy cleanup of expired rows.
  saveBinding: string;
  findBinding: string;
  claim: string;
  findBindingAndClaim: string;
  finishOutcome: string;
  markDone: string;
  release: string;
  schedulePending: string;
  queueGenerated: string;
  queueRecheck: string;
  takeDuePending: string;
  findPending: string;
  removePending: string;
  countPending: string;
  saveOutcome: string;
  getOutcome: string;
  listOutcomes: string;
  listFailedOutcomes: string;
  listOutcomesOf: string;
  takeRateLimit: string;
  freeRateLimit: string;
  cleanup: string;
  ping: string;
  now: string;
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

    // A webhook's binding lookup and claim in one statement (one round trip): the claim's INSERT
    // takes its rows from the binding's SELECT, so it runs only when an unexpired binding names
    // the payment ($4). The binding is returned either way; `state` and `owner` are NULL when
    // nothing was claimed. Same claim rule as `claim` above.
    findBindingAndClaim: `WITH b AS (
  SELECT binding FROM ${t.bindings} WHERE token_id = $1::text AND expires_at > statement_timestamp()
), c AS (
  INSERT INTO ${t.events} AS e (event_key, state, owner, expires_at)
  SELECT $2::text, 'claimed', $3::text, ${expiresIn('$5')} FROM b WHERE b.binding->>'paymentId' = $4::text
  ON CONFLICT (event_key) DO UPDATE SET
    state = CASE WHEN ${claimable} THEN 'claimed' ELSE e.state END,
    owner = CASE WHEN ${claimable} THEN EXCLUDED.owner ELSE e.owner END,
    expires_at = CASE WHEN ${claimable} THEN EXCLUDED.expires_at ELSE e.expires_at END
  RETURNING state, owner
)
SELECT b.binding::text AS value, c.state, c.owner FROM b LEFT JOIN c ON true`,

    // The end of an attempt in one statement (one round trip; data-modifying CTEs all run, on one
    // snapshot): markDone ($9 'done') or release ($9 'release') under the same compare-and-set as
    // the statements of those names, removePending when done, and the outcome record saved with
    // its attempts counted from the current, unexpired record's ($10 added). Returns whether the
    // claim was marked done.
    finishOutcome: `WITH marked AS (
  UPDATE ${t.events} SET state = 'done', owner = NULL, expires_at = ${expiresIn('$3')}
  WHERE $9::text = 'done' AND event_key = $1::text AND state = 'claimed' AND owner = $2::text AND expires_at > statement_timestamp()
  RETURNING 1
), released AS (
  DELETE FROM ${t.events} WHERE $9::text = 'release' AND event_key = $1::text AND state = 'claimed' AND owner = $2::text
  RETURNING 1
), unqueued AS (
  DELETE FROM ${t.pending} WHERE $9::text = 'done' AND payment_id = $4::text
  RETURNING 1
), saved AS (
  INSERT INTO ${t.outcomes} AS o (payment_id, outcome, handlers, updated_at, record, expires_at)
  VALUES ($4::text, $5::text, $6::text, $7::text, jsonb_set($8::text::jsonb, '{attempts}', to_jsonb($10::integer)), ${expiresIn('$11')})
  ON CONFLICT (payment_id) DO UPDATE SET
    outcome = EXCLUDED.outcome, handlers = EXCLUDED.handlers, updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,
    record = jsonb_set(EXCLUDED.record, '{attempts}', to_jsonb($10::integer + CASE
      WHEN o.expires_at > statement_timestamp() AND jsonb_typeof(o.record->'attempts') = 'number' THEN (o.record->>'attempts')::numeric
      ELSE 0 END))
  RETURNING 1
)
SELECT (SELECT count(*) FROM marked)::text AS value`,

    // Compare-and-set on the owner and an unexpired lease: an owner whose lease ran out (and was
    // maybe taken over) must not overwrite the new holder's claim.
    markDone: `UPDATE ${t.events} SET state = 'done', owner = NULL, expires_at = ${expiresIn('$3')}
WHERE event_key = $1::text AND state = 'claimed' AND owner = $2::text AND expires_at > statement_timestamp()
RETURNING 1 AS ok`,

    release: `DELETE FROM ${t.events} WHERE event_key = $1::text AND state = 'claimed' AND owner = $2::text`,

    schedulePending: `INSERT INTO ${t.pending} (payment_id, entry, due_at)
VALUES ($1::text, $2::text::jsonb, $3::bigint)
ON CONFLICT (payment_id) DO UPDATE SET entry = EXCLUDED.entry, due_at = EXCLUDED.due_at`,

    // An entry already queued (a path put the payment in the pending lane first) keeps its due
    // time, checks and lane place, and takes the generated fields (mergeGenerated in the core).
    queueGenerated: `INSERT INTO ${t.pending} AS p (payment_id, entry, due_at)
VALUES ($1::text, $2::text::jsonb, $3::bigint)
ON CONFLICT (payment_id) DO UPDATE SET entry = (EXCLUDED.entry - 'rechecks') || jsonb_strip_nulls(jsonb_build_object(
  'checks', COALESCE(p.entry->'checks', '0'::jsonb), 'rechecks', p.entry->'rechecks'))`,

    // An entry already queued (generatePayment's, written after the path read the queue) keeps
    // every field but checks and rechecks, which the path's entry sets, as does its due time
    // (mergeRecheck in the core).
    queueRecheck: `INSERT INTO ${t.pending} AS p (payment_id, entry, due_at)
VALUES ($1::text, $2::text::jsonb, $3::bigint)
ON CONFLICT (payment_id) DO UPDATE SET entry = EXCLUDED.entry || (p.entry - 'checks' - 'rechecks'), due_at = EXCLUDED.due_at`,

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

    // listOutcomes({ outcome }) of any outcome but 'confirmed', the desk's lists: the literal
    // `outcome <> 'confirmed'` makes the partial index by outcome provably usable, in generic plans
    // too, and `outcome = $2` its leading column; the parameters are those of listOutcomes.
    listOutcomesOf: `SELECT record::text AS value, updated_at, payment_id FROM ${t.outcomes}
WHERE outcome <> 'confirmed' AND outcome = $2::text AND expires_at > statement_timestamp()
  AND ($1::text IS NULL OR handlers = $1::text)
  AND ($3::text IS NULL OR updated_at < $3::text OR (updated_at = $3::text AND payment_id > $4::text))
ORDER BY updated_at DESC, payment_id
LIMIT $5::integer`,

    // The slot is taken when there is no row or only an expired one; ON CONFLICT resolves
    // concurrent takes under the row lock and re-checks the WHERE on the row as it then stands,
    // so exactly one of them gets a row back.
    takeRateLimit: `INSERT INTO ${t.rateLimits} AS r (limit_key, expires_at)
VALUES ($1::text, ${expiresIn('$2')})
ON CONFLICT (limit_key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE r.expires_at <= statement_timestamp()
RETURNING 1 AS ok`,

    freeRateLimit: `DELETE FROM ${t.rateLimits} WHERE limit_key = $1::text`,

    // One statement, eight bounded deletes (data-modifying CTEs all run): the cleanup that stands
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
), r AS (
  DELETE FROM ${t.rateLimits} WHERE expires_at < statement_timestamp() AND limit_key IN (
    SELECT limit_key FROM ${t.rateLimits} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), d AS (
  DELETE FROM ${t.orders} WHERE expires_at < statement_timestamp() AND (order_key, kind) IN (
    SELECT order_key, kind FROM ${t.orders} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), f AS (
  DELETE FROM ${t.refunds} WHERE expires_at < statement_timestamp() AND refund_key IN (
    SELECT refund_key FROM ${t.refunds} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), s AS (
  DELETE FROM ${t.stories} WHERE expires_at < statement_timestamp() AND (registration, payment_id) IN (
    SELECT registration, payment_id FROM ${t.stories} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
), c AS (
  DELETE FROM ${t.tallies} WHERE expires_at < statement_timestamp() AND (registration, bucket, name) IN (
    SELECT registration, bucket, name FROM ${t.tallies} WHERE expires_at < statement_timestamp() LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED)
  RETURNING 1
)
SELECT ((SELECT count(*) FROM b) + (SELECT count(*) FROM e) + (SELECT count(*) FROM o) + (SELECT count(*) FROM r) + (SELECT count(*) FROM d) + (SELECT count(*) FROM f) + (SELECT count(*) FROM s) + (SELECT count(*) FROM c))::text AS value`,

    ping: 'SELECT 1 AS value',

    // clock_timestamp(), not now(): the time of this call, not of its transaction's start.
    now: 'SELECT (extract(epoch from clock_timestamp()) * 1000)::float8::text AS value',
  };
}
