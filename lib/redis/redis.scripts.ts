/**
 * The Lua scripts behind {@link RedisPaymentsStore}. Each check-and-set runs as one script so that
 * it is atomic across every app instance sharing the Redis, and costs one round trip.
 *
 * Event keys hold `claimed:<owner>` (with the lease as PX) or `done` (with the done TTL as PX).
 * The reconciliation queue is a sorted set of payment ids by due time plus a hash of the entries.
 * Outcome records are string keys with PX, indexed by a sorted set ordered as `listOutcomes`
 * returns them and a sorted set of their expiry times (to drop index members of expired records).
 * On a Redis Cluster every script's keys hash to one slot (see redis.keys.ts).
 */

import { CLAIM_LUA, FIND_BINDING_AND_CLAIM_LUA, MARK_DONE_LUA, RELEASE_LUA } from './redis.claims.js';
import {
  QUEUE_GENERATED_LUA,
  QUEUE_RECHECK_LUA,
  REMOVE_PENDING_LUA,
  SCHEDULE_PENDING_LUA,
  TAKE_DUE_PENDING_LUA,
} from './redis.queue.js';
import { FINISH_OUTCOME_LUA, FINISH_RECORD_LUA, LIST_OUTCOMES_LUA, SAVE_OUTCOME_LUA } from './redis.records.js';

/**
 * Names under which the scripts are defined on the ioredis client (`defineCommand`). They are
 * namespaced because the client may belong to the host, which may define commands of its own;
 * defining them again (a second store on the same client) is harmless, the Lua is the same.
 */
export const SCRIPT_NAMES = {
  claim: 'nestjsPaymentsClaim',
  findBindingAndClaim: 'nestjsPaymentsFindBindingAndClaim',
  finishOutcome: 'nestjsPaymentsFinishOutcome',
  finishRecord: 'nestjsPaymentsFinishRecord',
  markDone: 'nestjsPaymentsMarkDone',
  release: 'nestjsPaymentsRelease',
  schedulePending: 'nestjsPaymentsSchedulePending',
  queueGenerated: 'nestjsPaymentsQueueGenerated',
  queueRecheck: 'nestjsPaymentsQueueRecheck',
  takeDuePending: 'nestjsPaymentsTakeDuePending',
  removePending: 'nestjsPaymentsRemovePending',
  saveOutcome: 'nestjsPaymentsSaveOutcome',
  listOutcomes: 'nestjsPaymentsListOutcomes',
} as const;

/** The scripts, in the shape `Redis#defineCommand` takes. */
export const SCRIPTS: ReadonlyArray<{ name: string; lua: string; numberOfKeys: number }> = [
  { name: SCRIPT_NAMES.claim, lua: CLAIM_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.findBindingAndClaim, lua: FIND_BINDING_AND_CLAIM_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.finishOutcome, lua: FINISH_OUTCOME_LUA, numberOfKeys: 6 },
  { name: SCRIPT_NAMES.finishRecord, lua: FINISH_RECORD_LUA, numberOfKeys: 5 },
  { name: SCRIPT_NAMES.markDone, lua: MARK_DONE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.release, lua: RELEASE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.schedulePending, lua: SCHEDULE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.queueGenerated, lua: QUEUE_GENERATED_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.queueRecheck, lua: QUEUE_RECHECK_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.takeDuePending, lua: TAKE_DUE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.removePending, lua: REMOVE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.saveOutcome, lua: SAVE_OUTCOME_LUA, numberOfKeys: 3 },
  { name: SCRIPT_NAMES.listOutcomes, lua: LIST_OUTCOMES_LUA, numberOfKeys: 3 },
];

/**
 * The methods `defineCommand` adds to the client. ioredis cannot type them, so the store views
 * the client through this interface once, right after defining them.
 */
export interface StoreScriptCommands {
  /** Replies `'claimed'`, `'done'` or `'busy'`. */
  [SCRIPT_NAMES.claim](eventKey: string, owner: string, leaseMs: number): Promise<unknown>;
  /** Replies `[]`, `[bindingJson]` (nothing claimed) or `[bindingJson, 'claimed' | 'done' | 'busy']`. */
  [SCRIPT_NAMES.findBindingAndClaim](
    bindingKey: string,
    eventKey: string,
    paymentId: string,
    owner: string,
    leaseMs: number,
  ): Promise<unknown>;
  /** Replies 1 when the owner's claim became `done`, else 0. */
  [SCRIPT_NAMES.finishOutcome](
    eventKey: string,
    dueKey: string,
    entriesKey: string,
    recordKey: string,
    indexKey: string,
    expiryKey: string,
    owner: string,
    mode: 'done' | 'release',
    doneTtlMs: number,
    recordJson: string,
    recordTtlMs: number,
    score: string,
    paymentId: string,
    attemptsAdded: number,
  ): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.finishRecord](
    dueKey: string,
    entriesKey: string,
    recordKey: string,
    indexKey: string,
    expiryKey: string,
    mode: 'done' | 'release',
    recordJson: string,
    recordTtlMs: number,
    score: string,
    paymentId: string,
    attemptsAdded: number,
  ): Promise<unknown>;
  /** Replies 1 when the owner's claim became `done`, else 0. */
  [SCRIPT_NAMES.markDone](eventKey: string, owner: string, ttlMs: number): Promise<unknown>;
  /** Replies 1 when the owner's claim was deleted, else 0. */
  [SCRIPT_NAMES.release](eventKey: string, owner: string): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.schedulePending](
    dueKey: string,
    entriesKey: string,
    paymentId: string,
    entryJson: string,
    dueAt: string,
  ): Promise<unknown>;
  /** Replies 1 when the entry was queued, 0 when one queued already was merged with it. */
  [SCRIPT_NAMES.queueGenerated](
    dueKey: string,
    entriesKey: string,
    paymentId: string,
    entryJson: string,
    dueAt: string,
  ): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.queueRecheck](
    dueKey: string,
    entriesKey: string,
    paymentId: string,
    entryJson: string,
    dueAt: string,
  ): Promise<unknown>;
  /** Replies the JSON of the entries taken, oldest due first. */
  [SCRIPT_NAMES.takeDuePending](
    dueKey: string,
    entriesKey: string,
    now: string,
    limit: number,
    leasedUntil: string,
  ): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.removePending](dueKey: string, entriesKey: string, paymentId: string): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.saveOutcome](
    recordKey: string,
    indexKey: string,
    expiryKey: string,
    json: string,
    ttlMs: number,
    score: string,
    paymentId: string,
  ): Promise<unknown>;
  /** Replies `[lastScore, lastId, exhausted, ...(score, id, recordJson) of each match]`. */
  [SCRIPT_NAMES.listOutcomes](
    indexKey: string,
    recordPrefix: string,
    expiryKey: string,
    minScore: string,
    hasCursor: string,
    afterId: string,
    want: number,
    handlers: string,
    outcome: string,
  ): Promise<unknown>;
}
