import type { OutcomeFinish, OutcomeRecord } from '../core/store/payments.store.js';
import type { RedisConnection } from './redis.connection.js';
import { SCRIPT_NAMES } from './redis.scripts.js';
import { outcomeScore } from './redis.values.js';

/**
 * `finishOutcome` on a cluster, where the claim lives in its payment's slot and the queue and the
 * records in the shared one: the claim's end first (the done marker is what keeps the handlers
 * from running again), then the queue and the record. A crash between the two leaves the payment
 * queued; its next check finds it done and drops it.
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
  const ended = await db.run('finishOutcome', () =>
    finish.claim === 'done' ? db.scripts[SCRIPT_NAMES.markDone](event, finish.owner, donePx) : db.scripts[SCRIPT_NAMES.release](event, finish.owner),
  );
  await db.run('finishOutcome', () =>
    db.scripts[SCRIPT_NAMES.finishRecord](
      k.pendingDue,
      k.pendingEntries,
      k.outcomePrefix + record.paymentId,
      k.outcomesIndex,
      k.outcomesExpiry,
      finish.claim,
      JSON.stringify(record),
      recordPx,
      outcomeScore(record.updatedAt),
      record.paymentId,
      Math.trunc(finish.attemptsAdded),
    ),
  );
  // A host's client with `stringNumbers: true` answers '1' instead of 1.
  return finish.claim === 'done' && Number(ended) === 1;
}
