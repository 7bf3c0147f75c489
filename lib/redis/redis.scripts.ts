/**
 * The Lua scripts behind {@link RedisPaymentsStore}. Each check-and-set runs as one script so that
 * it is atomic across every app instance sharing the Redis, and costs one round trip.
 *
 * Event keys hold `claimed:<owner>` (with the lease as PX) or `done` (with the done TTL as PX).
 * The reconciliation queue is a sorted set of payment ids by due time plus a hash of the entries.
 * Outcome records are string keys with PX, indexed by a sorted set ordered as `listOutcomes`
 * returns them and a sorted set of their expiry times (to drop index members of expired records).
 */

/** Value of an event key whose delivery has been handled. */
export const DONE_VALUE = 'done';

/** Prefix of the value of an event key held by a delivery attempt (`claimed:<owner>`). */
export const CLAIMED_PREFIX = 'claimed:';

// The claim of an event key, for every script that claims: the same owner claiming again (a
// command resent after a reconnect, a lease renewal) gets its claim back with a fresh lease.
// Anything else but an empty key or `done` counts as a claim by someone (even a foreign value),
// so the script errs on not running. Leaves 'claimed', 'done' or 'busy' in `claimed`.
const claimLua = (key: string, owner: string, lease: string) => `
local claimed
local current = redis.call('GET', ${key})
if current == '${DONE_VALUE}' then
  claimed = 'done'
elseif not current or current == '${CLAIMED_PREFIX}' .. ${owner} then
  redis.call('SET', ${key}, '${CLAIMED_PREFIX}' .. ${owner}, 'PX', ${lease})
  claimed = 'claimed'
else
  claimed = 'busy'
end
`;

// KEYS[1] event key; ARGV[1] owner; ARGV[2] lease in ms.
const CLAIM_LUA = `${claimLua('KEYS[1]', 'ARGV[1]', 'ARGV[2]')}
return claimed
`;

// KEYS[1] binding key, KEYS[2] event key; ARGV[1] payment id, ARGV[2] owner, ARGV[3] lease in ms.
// A webhook's binding lookup and claim in one round trip: claims only when the binding names the
// payment. Replies {} (no binding), { binding } (another payment's, or not one: nothing claimed)
// or { binding, claim outcome }.
const FIND_BINDING_AND_CLAIM_LUA = `
local raw = redis.call('GET', KEYS[1])
if not raw then
  return {}
end
local ok, binding = pcall(cjson.decode, raw)
if not ok or type(binding) ~= 'table' or binding.paymentId ~= ARGV[1] then
  return { raw }
end
${claimLua('KEYS[2]', 'ARGV[2]', 'ARGV[3]')}
return { raw, claimed }
`;

// KEYS[1] event key; ARGV[1] owner; ARGV[2] done TTL in ms. Compare-and-set: an owner whose
// lease expired (and was maybe taken over) must not overwrite the new holder's claim.
const MARK_DONE_LUA = `
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('SET', KEYS[1], '${DONE_VALUE}', 'PX', ARGV[2])
  return 1
end
return 0
`;

// KEYS[1] event key; ARGV[1] owner. Compare-and-delete, for the same reason as MARK_DONE_LUA.
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

// KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id, ARGV[2] entry JSON,
// ARGV[3] due time (epoch ms). Both structures change together or not at all.
const SCHEDULE_PENDING_LUA = `
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;

// KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] now, ARGV[2] limit, ARGV[3] now +
// lease. Range and push-back in one script: no other instance can take the same entry between
// them. Oldest due first (ties by payment id, the sorted set's own order). A due id without an
// entry (written by hand, or a half-applied older version) is dropped from the queue.
const TAKE_DUE_PENDING_LUA = `
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

// KEYS[1] due-time sorted set, KEYS[2] entries hash; ARGV[1] payment id.
const REMOVE_PENDING_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`;

/** How many index members of expired records one saveOutcome drops at most: keeps it short. */
export const OUTCOME_SWEEP_BATCH = 100;

// Writes a record (its JSON in the variable `json`) with its TTL, indexes it, and drops a few index
// members of records that expired. The expiry index uses the server's clock, like the record's PX.
const saveOutcomeLua = (record: string, index: string, expiry: string, ttl: string, score: string, id: string) => `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', ${record}, json, 'PX', ${ttl})
redis.call('ZADD', ${index}, ${score}, ${id})
redis.call('ZADD', ${expiry}, now + tonumber(${ttl}), ${id})
local expired = redis.call('ZRANGEBYSCORE', ${expiry}, '-inf', now, 'LIMIT', 0, ${OUTCOME_SWEEP_BATCH})
for _, gone in ipairs(expired) do
  redis.call('ZREM', ${index}, gone)
  redis.call('ZREM', ${expiry}, gone)
end
`;

// KEYS[1] record key, KEYS[2] order index, KEYS[3] expiry index; ARGV[1] record JSON, ARGV[2]
// TTL in ms, ARGV[3] order score, ARGV[4] payment id.
const SAVE_OUTCOME_LUA = `
local json = ARGV[1]
${saveOutcomeLua('KEYS[1]', 'KEYS[2]', 'KEYS[3]', 'ARGV[2]', 'ARGV[3]', 'ARGV[4]')}
return 1
`;

// KEYS[1] event key, KEYS[2] due-time sorted set, KEYS[3] entries hash, KEYS[4] record key,
// KEYS[5] order index, KEYS[6] expiry index; ARGV[1] owner, ARGV[2] 'done' or 'release', ARGV[3]
// done TTL in ms, ARGV[4] record JSON without attempts, ARGV[5] record TTL in ms, ARGV[6] order
// score, ARGV[7] payment id, ARGV[8] attempts to add. The end of an attempt in one round trip:
// markDone (or release), removePending when done, and the record with its attempts counted from
// the current one. Replies 1 when the claim was marked done, else 0.
const FINISH_OUTCOME_LUA = `
local marked = 0
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  if ARGV[2] == 'done' then
    redis.call('SET', KEYS[1], '${DONE_VALUE}', 'PX', ARGV[3])
    marked = 1
  else
    redis.call('DEL', KEYS[1])
  end
end
if ARGV[2] == 'done' then
  redis.call('ZREM', KEYS[2], ARGV[7])
  redis.call('HDEL', KEYS[3], ARGV[7])
end
local attempts = tonumber(ARGV[8])
local old = redis.call('GET', KEYS[4])
if old then
  local ok, previous = pcall(cjson.decode, old)
  if ok and type(previous) == 'table' and type(previous.attempts) == 'number' then
    attempts = attempts + previous.attempts
  end
end
-- The JSON object of the record with attempts put first (ARGV[4] is never '{}': it has the id).
local json = '{"attempts":' .. string.format('%d', attempts) .. ',' .. string.sub(ARGV[4], 2)
${saveOutcomeLua('KEYS[4]', 'KEYS[5]', 'KEYS[6]', 'ARGV[5]', 'ARGV[6]', 'ARGV[7]')}
return marked
`;

/** Most index members one listOutcomes examines; a page may end early, with a cursor, past it. */
export const OUTCOME_SCAN_BUDGET = 1000;

// KEYS[1] order index, KEYS[2] record key prefix (a key, so that a host client's ioredis
// keyPrefix applies to it too), KEYS[3] expiry index. ARGV[1] lowest score ('-inf' or the
// cursor's), ARGV[2] '1' when there is a cursor, ARGV[3] the cursor's payment id, ARGV[4] how many
// records to return, ARGV[5] handlers filter or '', ARGV[6] outcome filter or ''.
// The index scores are -updatedAt in ms, so ascending score is newest first and ties are ordered
// by member (payment id, byte order). Members whose record expired are dropped as they are met.
// Replies { lastScore, lastId, exhausted ('1'/'0'), then score, id, record JSON of each match }.
const LIST_OUTCOMES_LUA = `
local want = tonumber(ARGV[4])
local hasCursor = ARGV[2] == '1'
local cursorScore = tonumber(ARGV[1])
local afterId = ARGV[3]
-- Byte order, independent of the server's locale (Lua's < on strings uses strcoll).
local function after(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
local items, stale = {}, {}
local examined, offset = 0, 0
local lastScore, lastId = '', ''
local exhausted = '0'
while #items < want * 3 and examined < ${OUTCOME_SCAN_BUDGET} do
  local chunk = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', offset, 100)
  if #chunk == 0 then
    exhausted = '1'
    break
  end
  offset = offset + #chunk / 2
  for i = 1, #chunk, 2 do
    local id, score = chunk[i], chunk[i + 1]
    if not hasCursor or tonumber(score) ~= cursorScore or after(id, afterId) then
      examined = examined + 1
      local raw = redis.call('GET', KEYS[2] .. id)
      if not raw then
        stale[#stale + 1] = id
      else
        local ok, rec = pcall(cjson.decode, raw)
        if ok and type(rec) == 'table' and (ARGV[5] == '' or rec.handlers == ARGV[5]) and (ARGV[6] == '' or rec.outcome == ARGV[6]) then
          items[#items + 1] = score
          items[#items + 1] = id
          items[#items + 1] = raw
        end
      end
      lastScore, lastId = score, id
      if #items >= want * 3 or examined >= ${OUTCOME_SCAN_BUDGET} then break end
    end
  end
end
for _, id in ipairs(stale) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[3], id)
end
local reply = { lastScore, lastId, exhausted }
for _, raw in ipairs(items) do reply[#reply + 1] = raw end
return reply
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
  markDone: 'nestjsPaymentsMarkDone',
  release: 'nestjsPaymentsRelease',
  schedulePending: 'nestjsPaymentsSchedulePending',
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
  { name: SCRIPT_NAMES.markDone, lua: MARK_DONE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.release, lua: RELEASE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.schedulePending, lua: SCHEDULE_PENDING_LUA, numberOfKeys: 2 },
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
  [SCRIPT_NAMES.findBindingAndClaim](bindingKey: string, eventKey: string, paymentId: string, owner: string, leaseMs: number): Promise<unknown>;
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
  /** Replies 1 when the owner's claim became `done`, else 0. */
  [SCRIPT_NAMES.markDone](eventKey: string, owner: string, ttlMs: number): Promise<unknown>;
  /** Replies 1 when the owner's claim was deleted, else 0. */
  [SCRIPT_NAMES.release](eventKey: string, owner: string): Promise<unknown>;
  /** Replies 1. */
  [SCRIPT_NAMES.schedulePending](dueKey: string, entriesKey: string, paymentId: string, entryJson: string, dueAt: string): Promise<unknown>;
  /** Replies the JSON of the entries taken, oldest due first. */
  [SCRIPT_NAMES.takeDuePending](dueKey: string, entriesKey: string, now: string, limit: number, leasedUntil: string): Promise<unknown>;
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
