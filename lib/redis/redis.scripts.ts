/**
 * The Lua scripts behind {@link RedisPaymentsStore}. Each check-and-set runs as one script so that
 * it is atomic across every app instance sharing the Redis, and costs one round trip.
 *
 * Event keys hold `claimed:<owner>` (with the lease as PX) or `done` (with the done TTL as PX).
 * The reconciliation queue is a sorted set of payment ids by due time plus a hash of the entries.
 * Outcome records are string keys with PX, indexed by a sorted set ordered as `listOutcomes`
 * returns them and a sorted set of their expiry times (to drop index members of expired records).
 * On a Redis Cluster every script's keys hash to one slot (see redis.connection.ts).
 */
import {
  CLAIM_LUA,
  CLOSE_CHECKOUT_LUA,
  FIND_BINDING_AND_CLAIM_LUA,
  MARK_DONE_LUA,
  OPEN_CHECKOUT_LUA,
  RELEASE_LUA,
} from './redis.claims.js';
import { FINISH_OUTCOME_LUA, FINISH_RECORD_LUA, LIST_OUTCOMES_LUA, SAVE_OUTCOME_LUA } from './redis.records.js';

// The Lua of the reconciliation queue: a sorted set of payment ids by due time plus a hash of
// the entries, changed together by each script.
/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id, ARGV[2] entry JSON,
 * ARGV[3] due time (epoch ms). Both structures change together or not at all.
 */
export const SCHEDULE_PENDING_LUA = `
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;

/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id, ARGV[2] the generated
 * entry's JSON, ARGV[3] its due time. An entry already queued (a path put the payment in the
 * pending lane first) keeps its due time, checks and lane place, and takes the generated fields
 * (mergeGenerated in the core, in Lua); else the generated entry is queued as schedulePending does.
 */
export const QUEUE_GENERATED_LUA = `
local queued = redis.call('HGET', KEYS[2], ARGV[1])
if not queued then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  return 1
end
local ok, old = pcall(cjson.decode, queued)
if not ok or type(old) ~= 'table' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  return 0
end
local merged = cjson.decode(ARGV[2])
merged['checks'] = old['checks'] or 0
merged['rechecks'] = old['rechecks']
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(merged))
return 0
`;

/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id, ARGV[2] the path's entry
 * JSON, ARGV[3] its due time. An entry already queued (generatePayment's, landed after the path
 * read the queue) keeps every field but checks and rechecks, which it takes from the path's entry
 * (mergeRecheck in the core, in Lua); the due time is the path's either way.
 */
export const QUEUE_RECHECK_LUA = `
local entry = ARGV[2]
local queued = redis.call('HGET', KEYS[2], ARGV[1])
if queued then
  local ok, old = pcall(cjson.decode, queued)
  if ok and type(old) == 'table' then
    local merged = cjson.decode(ARGV[2])
    for field, value in pairs(old) do
      if field ~= 'checks' and field ~= 'rechecks' then merged[field] = value end
    end
    entry = cjson.encode(merged)
  end
end
redis.call('HSET', KEYS[2], ARGV[1], entry)
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;

/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] now, ARGV[2] limit, ARGV[3] now +
 * lease. Range and push-back in one script: no other instance can take the same entry between
 * them. Oldest due first (ties by payment id, the sorted set's own order). A due id without an
 * entry (written by hand, or a half-applied older version) is dropped from the queue.
 */
export const TAKE_DUE_PENDING_LUA = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local taken = {}
for _, id in ipairs(ids) do
  local entry = redis.call('HGET', KEYS[2], id)
  if entry then
    redis.call('ZADD', KEYS[1], ARGV[3], id)
    taken[#taken + 1] = entry
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return taken
`;

/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id.
 */
export const REMOVE_PENDING_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`;

/**
 * A batch of the payments' stories in one call (the keys share the registration's hash tag, so one
 * slot in a Cluster). KEYS: the entries lists of N payments, then the tally hashes of the batch's
 * buckets. ARGV[1] entries kept per payment, ARGV[2] the lists' retention ms, ARGV[3] N; then for
 * each payment its count of entries and the entries (JSON); then for each tally hash its expiry
 * (epoch ms), its count of counters and their (name, by) pairs.
 */
export const APPEND_STORY_LUA = `
local keep = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local a = 4
for i = 1, n do
  local c = tonumber(ARGV[a])
  redis.call('RPUSH', KEYS[i], unpack(ARGV, a + 1, a + c))
  a = a + c + 1
  redis.call('LTRIM', KEYS[i], -keep, -1)
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
for j = n + 1, #KEYS do
  local at = ARGV[a]
  local f = tonumber(ARGV[a + 1])
  a = a + 2
  for _ = 1, f do
    redis.call('HINCRBY', KEYS[j], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  redis.call('PEXPIREAT', KEYS[j], at)
end
return 1
`;

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
  openCheckout: 'nestjsPaymentsOpenCheckout',
  closeCheckout: 'nestjsPaymentsCloseCheckout',
  appendStory: 'nestjsPaymentsAppendStory',
} as const;

/**
 * The scripts, in the shape `Redis#defineCommand` takes (without `numberOfKeys`, the call passes
 * the count of keys first).
 */
export const SCRIPTS: ReadonlyArray<{ name: string; lua: string; numberOfKeys?: number }> = [
  { name: SCRIPT_NAMES.claim, lua: CLAIM_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.findBindingAndClaim, lua: FIND_BINDING_AND_CLAIM_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.finishOutcome, lua: FINISH_OUTCOME_LUA, numberOfKeys: 7 },
  { name: SCRIPT_NAMES.finishRecord, lua: FINISH_RECORD_LUA, numberOfKeys: 6 },
  { name: SCRIPT_NAMES.markDone, lua: MARK_DONE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.release, lua: RELEASE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.schedulePending, lua: SCHEDULE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.queueGenerated, lua: QUEUE_GENERATED_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.queueRecheck, lua: QUEUE_RECHECK_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.takeDuePending, lua: TAKE_DUE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.removePending, lua: REMOVE_PENDING_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.saveOutcome, lua: SAVE_OUTCOME_LUA, numberOfKeys: 4 },
  { name: SCRIPT_NAMES.listOutcomes, lua: LIST_OUTCOMES_LUA, numberOfKeys: 4 },
  { name: SCRIPT_NAMES.openCheckout, lua: OPEN_CHECKOUT_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.closeCheckout, lua: CLOSE_CHECKOUT_LUA, numberOfKeys: 2 },
  { name: SCRIPT_NAMES.appendStory, lua: APPEND_STORY_LUA },
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
    filtersKey: string,
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
    filtersKey: string,
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
    filtersKey: string,
    json: string,
    ttlMs: number,
    score: string,
    paymentId: string,
  ): Promise<unknown>;
  /** Replies `[claim]`, `[claim, checkoutJson]` or `[claim, checkoutJson, recordJson | '', noteJson | '']`. */
  [SCRIPT_NAMES.openCheckout](
    checkoutKey: string,
    lockKey: string,
    owner: string,
    leaseMs: number,
    readStanding: '1' | '0',
    outcomePrefix: string,
    noteHead: string,
    noteTail: string,
  ): Promise<unknown>;
  /** Replies 1 when the owner's lock was freed, else 0. */
  [SCRIPT_NAMES.closeCheckout](
    checkoutKey: string,
    lockKey: string,
    owner: string,
    checkoutJson: string,
    ttlMs: number,
  ): Promise<unknown>;
  /** Replies 1. `args`: the count of keys, the keys, then the arguments of {@link APPEND_STORY_LUA}. */
  [SCRIPT_NAMES.appendStory](...args: Array<string | number>): Promise<unknown>;
  /** Replies `[lastScore, lastId, exhausted, ...(score, id, recordJson) of each match]`. */
  [SCRIPT_NAMES.listOutcomes](
    indexKey: string,
    recordPrefix: string,
    expiryKey: string,
    filtersKey: string,
    minScore: string,
    hasCursor: string,
    afterId: string,
    want: number,
    handlers: string,
    outcome: string,
  ): Promise<unknown>;
}
