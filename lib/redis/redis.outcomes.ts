import { positiveMs, type OutcomeFinish, type OutcomeRecord } from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { FINISH_OUTCOME_LUA } from './redis.records.js';
import { writeThenWait } from './redis.replicas.js';
import { SCRIPT_NAMES } from './redis.scripts.js';
import { finishInTwoSlots } from './redis.split.js';
import { outcomeScore } from './redis.values.js';

/**
 * `RedisPaymentsStore.finishOutcome`: the claim's end, the queue entry's removal and the record,
 * in one script on a standalone server, in two steps on a cluster (see the store's method).
 */
export async function finishOutcomeOn(db: RedisConnection, finish: OutcomeFinish): Promise<boolean> {
  const donePx = positiveMs('RedisPaymentsStore', finish.doneTtlMs, 'doneTtlMs');
  const recordPx = positiveMs('RedisPaymentsStore', finish.recordTtlMs, 'recordTtlMs');
  const { attempts: _ignored, ...record } = finish.record as OutcomeRecord;
  if (db.keys.layout === 'cluster') return finishInTwoSlots(db, finish, record, donePx, recordPx);
  const keys = [
    db.keys.event(finish.eventKey),
    db.keys.pendingDue,
    db.keys.pendingEntries,
    db.keys.outcomePrefix + record.paymentId,
    db.keys.outcomesIndex,
    db.keys.outcomesExpiry,
  ] as const;
  const args = [
    finish.owner,
    finish.claim,
    donePx,
    JSON.stringify(record),
    recordPx,
    outcomeScore(record.updatedAt),
    record.paymentId,
    Math.trunc(finish.attemptsAdded),
  ] as const;
  // A done marker a promotion lost would let a redelivery run the handlers again: replicas (when
  // awaited) have it before the attempt counts as done.
  const reply =
    finish.claim === 'done' && db.replicas.wait > 0
      ? await writeThenWait(db, 'finishOutcome', `the done marker of ${record.paymentId}`, {
          lua: FINISH_OUTCOME_LUA,
          keys: [...keys],
          args: [...args],
        })
      : await db.run('finishOutcome', () => db.scripts[SCRIPT_NAMES.finishOutcome](...keys, ...args));
  // A host's client with `stringNumbers: true` answers '1' instead of 1.
  return Number(reply) === 1;
}

/** `RedisPaymentsStore.saveOutcome`: the record with its TTL, indexed, in one script. */
export async function saveOutcomeOn(db: RedisConnection, record: OutcomeRecord, ttlMs: number): Promise<void> {
  const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
  await db.run('saveOutcome', () =>
    db.scripts[SCRIPT_NAMES.saveOutcome](
      db.keys.outcomePrefix + record.paymentId,
      db.keys.outcomesIndex,
      db.keys.outcomesExpiry,
      JSON.stringify(record),
      px,
      outcomeScore(record.updatedAt),
      record.paymentId,
    ),
  );
}
