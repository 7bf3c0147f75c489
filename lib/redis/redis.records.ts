import { CLAIMED_PREFIX, DONE_VALUE } from './redis.claims.js';

// The Lua of the record of outcomes: string keys with PX, indexed by a sorted set ordered as
// listOutcomes returns them and a sorted set of their expiry times (to drop index members of
// expired records). Also finishOutcome, which ends a claim and writes the record in one script.
//
// The filter indexes: besides the index of every record, one sorted set per outcome other than
// `confirmed` (`<outcomesBy>outcome:<outcome>`) and one of the records whose handlers failed
// (`<outcomesBy>handlers:failed`), with the same scores, so that a filtered listOutcomes (the
// desk's lists, the retry page, the overdue count) reads the few records that match instead of
// every record. A store that held records before these indexes existed builds them from the index
// of every record, a step per filtered listOutcomes (oldest first, `<outcomesBy>backfill` keeping
// where it is), and reads them once `<outcomesBy>ready` says the build went through the index.

/** The outcomes that have a filter index of their own: every outcome but `confirmed`, most records. */
export const FILTERED_OUTCOMES = ['failed', 'expired', 'authorized', 'pending', 'mismatch', 'duplicate'] as const;

/** Index members one step of the filter indexes' build reads at most. */
export const BACKFILL_STEP = 1000;

// Functions of the filter indexes, at the head of every script that writes, lists or drops records.
// `by` is the key prefix of the filter indexes (a key argument, so that a host client's ioredis
// keyPrefix applies to it too).
const FILTERS_LUA = `
local FILTERED = { ${FILTERED_OUTCOMES.map((o) => `['${o}'] = true`).join(', ')} }
-- The filter indexes a record's JSON belongs in (none for a JSON that does not parse).
local function filtersOf(json)
  local names = {}
  if not json then return names end
  local ok, rec = pcall(cjson.decode, json)
  if ok and type(rec) == 'table' then
    if type(rec.outcome) == 'string' and FILTERED[rec.outcome] then names[#names + 1] = 'outcome:' .. rec.outcome end
    if rec.handlers == 'failed' then names[#names + 1] = 'handlers:failed' end
  end
  return names
end
-- Indexes a record by its filters (score as in the index of every record), and takes it out of
-- the filter indexes of its previous version it left.
local function refilter(by, old, json, score, id)
  local now = filtersOf(json)
  local keep = {}
  for _, name in ipairs(now) do
    keep[name] = true
    redis.call('ZADD', by .. name, score, id)
  end
  for _, name in ipairs(filtersOf(old)) do
    if not keep[name] then redis.call('ZREM', by .. name, id) end
  end
end
-- Drops a record that expired from every index.
local function forget(index, expiry, by, id)
  redis.call('ZREM', index, id)
  redis.call('ZREM', expiry, id)
  redis.call('ZREM', by .. 'handlers:failed', id)
  for name in pairs(FILTERED) do redis.call('ZREM', by .. 'outcome:' .. name, id) end
end
`;

/** How many index members of expired records one saveOutcome drops at most: keeps it short. */
export const OUTCOME_SWEEP_BATCH = 100;

// Writes a record (its JSON in the variable `json`, the JSON it replaces in `old`, or false) with
// its TTL, indexes it, and drops a few index members of records that expired. The expiry index
// uses the server's clock, like the record's PX.
const saveOutcomeLua = (
  record: string,
  index: string,
  expiry: string,
  by: string,
  ttl: string,
  score: string,
  id: string,
) => `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The first record of a store (or of one whose records all left): nothing to build the filter indexes from.
if redis.call('ZCARD', ${index}) == 0 then
  redis.call('SET', ${by} .. 'ready', '1')
  redis.call('DEL', ${by} .. 'backfill')
end
redis.call('SET', ${record}, json, 'PX', ${ttl})
redis.call('ZADD', ${index}, ${score}, ${id})
redis.call('ZADD', ${expiry}, now + tonumber(${ttl}), ${id})
refilter(${by}, old, json, ${score}, ${id})
local expired = redis.call('ZRANGEBYSCORE', ${expiry}, '-inf', now, 'LIMIT', 0, ${OUTCOME_SWEEP_BATCH})
for _, gone in ipairs(expired) do
  forget(${index}, ${expiry}, ${by}, gone)
end
`;

/**
 * KEYS[1] record key, KEYS[2] order index, KEYS[3] expiry index, KEYS[4] filter indexes' prefix;
 * ARGV[1] record JSON, ARGV[2] TTL in ms, ARGV[3] order score, ARGV[4] payment id.
 */
export const SAVE_OUTCOME_LUA = `
${FILTERS_LUA}
local json = ARGV[1]
local old = redis.call('GET', KEYS[1])
${saveOutcomeLua('KEYS[1]', 'KEYS[2]', 'KEYS[3]', 'KEYS[4]', 'ARGV[2]', 'ARGV[3]', 'ARGV[4]')}
return 1
`;

// The record half of an attempt's end, with the keys and arguments named by the caller: drops
// the payment from the queue when done, and writes the record with its attempts counted from the
// current record's.
const finishRecordLua = (
  k: { due: string; entries: string; record: string; index: string; expiry: string; by: string },
  a: { mode: string; json: string; ttl: string; score: string; id: string; added: string },
) => `
if ${a.mode} == 'done' then
  redis.call('ZREM', ${k.due}, ${a.id})
  redis.call('HDEL', ${k.entries}, ${a.id})
end
local attempts = tonumber(${a.added})
local old = redis.call('GET', ${k.record})
if old then
  local ok, previous = pcall(cjson.decode, old)
  if ok and type(previous) == 'table' and type(previous.attempts) == 'number' then
    attempts = attempts + previous.attempts
  end
end
-- The JSON object of the record with attempts put first (the JSON is never '{}': it has the id).
local json = '{"attempts":' .. string.format('%d', attempts) .. ',' .. string.sub(${a.json}, 2)
${saveOutcomeLua(k.record, k.index, k.expiry, k.by, a.ttl, a.score, a.id)}
`;

/**
 * KEYS[1] event key, KEYS[2] due-time sorted set, KEYS[3] entries hash, KEYS[4] record key,
 * KEYS[5] order index, KEYS[6] expiry index, KEYS[7] filter indexes' prefix; ARGV[1] owner, ARGV[2] 'done' or 'release', ARGV[3]
 * done TTL in ms, ARGV[4] record JSON without attempts, ARGV[5] record TTL in ms, ARGV[6] order
 * score, ARGV[7] payment id, ARGV[8] attempts to add. The end of an attempt in one round trip:
 * markDone (or release), removePending when done, and the record with its attempts counted from
 * the current one. Replies 1 when the claim was marked done, else 0.
 */
export const FINISH_OUTCOME_LUA = `
${FILTERS_LUA}
local marked = 0
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  if ARGV[2] == 'done' then
    redis.call('SET', KEYS[1], '${DONE_VALUE}', 'PX', ARGV[3])
    marked = 1
  else
    redis.call('DEL', KEYS[1])
  end
end
${finishRecordLua(
  { due: 'KEYS[2]', entries: 'KEYS[3]', record: 'KEYS[4]', index: 'KEYS[5]', expiry: 'KEYS[6]', by: 'KEYS[7]' },
  { mode: 'ARGV[2]', json: 'ARGV[4]', ttl: 'ARGV[5]', score: 'ARGV[6]', id: 'ARGV[7]', added: 'ARGV[8]' },
)}
return marked
`;

/**
 * KEYS[1] due-time sorted set, KEYS[2] entries hash, KEYS[3] record key, KEYS[4] order index,
 * KEYS[5] expiry index, KEYS[6] filter indexes' prefix (all in one slot); ARGV[1] 'done' or 'release', ARGV[2] record JSON without
 * attempts, ARGV[3] record TTL in ms, ARGV[4] order score, ARGV[5] payment id, ARGV[6] attempts to
 * add. The record half of FINISH_OUTCOME_LUA, for a cluster, where the event key lives in another
 * slot: the claim is ended first (MARK_DONE_LUA or RELEASE_LUA), then this runs. Replies 1.
 */
export const FINISH_RECORD_LUA = `
${FILTERS_LUA}
${finishRecordLua(
  { due: 'KEYS[1]', entries: 'KEYS[2]', record: 'KEYS[3]', index: 'KEYS[4]', expiry: 'KEYS[5]', by: 'KEYS[6]' },
  { mode: 'ARGV[1]', json: 'ARGV[2]', ttl: 'ARGV[3]', score: 'ARGV[4]', id: 'ARGV[5]', added: 'ARGV[6]' },
)}
return 1
`;

/** Most index members one listOutcomes examines; a page may end early, with a cursor, past it. */
export const OUTCOME_SCAN_BUDGET = 1000;

/**
 * KEYS[1] order index, KEYS[2] record key prefix (a key, so that a host client's ioredis
 * keyPrefix applies to it too), KEYS[3] expiry index, KEYS[4] filter indexes' prefix. ARGV[1]
 * lowest score ('-inf' or the cursor's), ARGV[2] '1' when there is a cursor, ARGV[3] the cursor's
 * payment id, ARGV[4] how many records to return, ARGV[5] handlers filter or '', ARGV[6] outcome
 * filter or ''.
 * The index scores are -updatedAt in ms, so ascending score is newest first and ties are ordered
 * by member (payment id, byte order). A filter with an index of its own (handlers `failed`, an
 * outcome but `confirmed`) reads that index once it is built, else builds a step of it and reads
 * the index of every record; every record read is checked against both filters. Members whose
 * record expired are dropped from every index as they are met.
 * Replies { lastScore, lastId, exhausted ('1'/'0'), then score, id, record JSON of each match }.
 */
export const LIST_OUTCOMES_LUA = `
${FILTERS_LUA}
local want = tonumber(ARGV[4])
local hasCursor = ARGV[2] == '1'
local cursorScore = tonumber(ARGV[1])
local afterId = ARGV[3]
local by = KEYS[4]
-- One step of the filter indexes' build, oldest records first; the step ends after every member
-- of its last score, so that the next starts past it (scores are whole ms). A step short of
-- BACKFILL_STEP read the newest record: the build is done.
local function backfill()
  local from = redis.call('GET', by .. 'backfill') or '+inf'
  local chunk = redis.call('ZREVRANGEBYSCORE', KEYS[1], from, '-inf', 'WITHSCORES', 'LIMIT', 0, ${BACKFILL_STEP})
  if #chunk == 0 then
    redis.call('SET', by .. 'ready', '1')
    redis.call('DEL', by .. 'backfill')
    return
  end
  local last = chunk[#chunk]
  local tied = redis.call('ZRANGEBYSCORE', KEYS[1], last, last, 'WITHSCORES')
  for _, part in ipairs({ chunk, tied }) do
    for i = 1, #part, 2 do
      local id, score = part[i], part[i + 1]
      local raw = redis.call('GET', KEYS[2] .. id)
      if raw then refilter(by, false, raw, score, id) else forget(KEYS[1], KEYS[3], by, id) end
    end
  end
  if #chunk < ${BACKFILL_STEP * 2} then
    redis.call('SET', by .. 'ready', '1')
    redis.call('DEL', by .. 'backfill')
  else
    redis.call('SET', by .. 'backfill', '(' .. last)
  end
end
local scanned = KEYS[1]
local filter = ''
if ARGV[5] == 'failed' then
  filter = 'handlers:failed'
elseif FILTERED[ARGV[6]] then
  filter = 'outcome:' .. ARGV[6]
end
if filter ~= '' then
  if redis.call('EXISTS', by .. 'ready') == 0 then backfill() end
  if redis.call('EXISTS', by .. 'ready') == 1 then scanned = by .. filter end
end
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
  local chunk = redis.call('ZRANGEBYSCORE', scanned, ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', offset, 100)
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
  forget(KEYS[1], KEYS[3], by, id)
end
local reply = { lastScore, lastId, exhausted }
for _, raw in ipairs(items) do reply[#reply + 1] = raw end
return reply
`;
