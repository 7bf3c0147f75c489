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
