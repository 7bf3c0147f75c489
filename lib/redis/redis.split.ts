import type { OutcomeFinish, OutcomeRecord } from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { MARK_DONE_LUA } from './redis.claims.js';
import { writeThenWait } from './redis.replicas.js';
import { SCRIPT_NAMES } from './redis.scripts.js';
import { outcomeScore } from './redis.values.js';

/** How long, in ms, a record whose slot is failing over is written again in the background, and how often. */
const RECORD_RETRY_FOR_MS = 30_000;
const RECORD_RETRY_EVERY_MS = 1000;

/**
 * `finishOutcome` on a cluster, where the claim lives in its payment's slot and the queue and the
 * records in the shared one: the claim's end first (the done marker is what keeps the handlers
 * from running again), then the queue and the record. A crash between the two leaves the payment
 * queued; its next check finds it done and drops it. When the claim was marked done but the shared
 * slot does not answer (its master failing over), the attempt is done all the same (the handlers
 * must not run again): the queue and the record are written again in the background until they
 * land or {@link RECORD_RETRY_FOR_MS} has passed.
 * @returns whether the claim was marked done
 */
export async function finishInTwoSlots(
  db: RedisConnection,
  finish: OutcomeFinish,
  record: Omit<OutcomeRecord, 'attempts'>,
  donePx: number,
  recordPx: number,
): Promise<boolean> {
  const k = db.keys;
  const event = k.event(finish.eventKey);
  // The done marker waits for replicas (when asked) before the queue and the record: a marker that
  // fails to reach them leaves the payment queued, and its next check finds out.
  const ended =
    finish.claim === 'done'
      ? await markDoneOn(db, event, finish.owner, donePx, 'finishOutcome', record.paymentId)
      : await db.run('finishOutcome', () => db.scripts[SCRIPT_NAMES.release](event, finish.owner));
  const writeRecord = () =>
    db.run('finishOutcome', () =>
      db.scripts[SCRIPT_NAMES.finishRecord](
        k.pendingDue,
        k.pendingEntries,
        k.outcomePrefix + record.paymentId,
        k.outcomesIndex,
        k.outcomesExpiry,
        k.outcomesBy,
        finish.claim,
        JSON.stringify(record),
        recordPx,
        outcomeScore(record.updatedAt),
        record.paymentId,
        Math.trunc(finish.attemptsAdded),
      ),
    );
  // A host's client with `stringNumbers: true` answers '1' instead of 1.
  const marked = finish.claim === 'done' && Number(ended) === 1;
  try {
    await writeRecord();
  } catch (error) {
    if (!marked) throw error;
    void writeLater(writeRecord);
  }
  return marked;
}

/**
 * The done marker of an event key (compare-and-set on the owner's claim), with `WAIT` for the
 * replicas when `replicas.wait` asks for them (a promotion must not lose it).
 * @returns the script's reply (1 when marked)
 */
export function markDoneOn(
  db: RedisConnection,
  eventKey: string,
  owner: string,
  donePx: number,
  operation: string,
  paymentId: string,
): Promise<unknown> {
  if (db.replicas.wait > 0)
    return writeThenWait(db, operation, `the done marker of ${paymentId}`, {
      lua: MARK_DONE_LUA,
      keys: [eventKey],
      args: [owner, donePx],
    });
  return db.run(operation, () => db.scripts[SCRIPT_NAMES.markDone](eventKey, owner, donePx));
}

async function writeLater(write: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + RECORD_RETRY_FOR_MS;
  while (Date.now() < until) {
    // Unref'd: a record still being retried must not keep the process alive.
    await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_EVERY_MS).unref());
    try {
      await write();
      return;
    } catch {
      // The slot has no master yet: try again.
    }
  }
}
