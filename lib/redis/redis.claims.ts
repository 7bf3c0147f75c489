// The Lua of claims (see redis.scripts.ts for how they are registered). Event keys hold
// `claimed:<owner>` (with the lease as PX) or `done` (with the done TTL as PX).

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

/**
 * KEYS[1] event key; ARGV[1] owner; ARGV[2] lease in ms.
 */
export const CLAIM_LUA = `${claimLua('KEYS[1]', 'ARGV[1]', 'ARGV[2]')}
return claimed
`;

/**
 * KEYS[1] binding key, KEYS[2] event key; ARGV[1] payment id, ARGV[2] owner, ARGV[3] lease in ms.
 * A webhook's binding lookup and claim in one round trip: claims only when the binding names the
 * payment. Replies {} (no binding), { binding } (another payment's, or not one: nothing claimed)
 * or { binding, claim outcome }.
 */
export const FIND_BINDING_AND_CLAIM_LUA = `
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

/**
 * KEYS[1] event key; ARGV[1] owner; ARGV[2] done TTL in ms. Compare-and-set: an owner whose
 * lease expired (and was maybe taken over) must not overwrite the new holder's claim.
 */
export const MARK_DONE_LUA = `
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('SET', KEYS[1], '${DONE_VALUE}', 'PX', ARGV[2])
  return 1
end
return 0
`;

/**
 * KEYS[1] event key; ARGV[1] owner. Compare-and-delete, for the same reason as MARK_DONE_LUA.
 */
export const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/**
 * KEYS[1] the order's checkout, KEYS[2] its lock; ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] '1'
 * to read the found payment's standing, ARGV[4] the prefix of outcome records, ARGV[5] and ARGV[6]
 * what comes before and after the payment id in the key of its cancellation note. The order's
 * lock (a claim, as CLAIM_LUA's) and its checkout in one round trip; with ARGV[3] '1' (the single
 * layout, where every key is on one server) also the payment's outcome record and note, by keys
 * built from the checkout's payment id. Replies { claim } (no checkout), { claim, checkout }
 * (standing not read) or { claim, checkout, record or '', note or '' }.
 */
export const OPEN_CHECKOUT_LUA = `${claimLua('KEYS[2]', 'ARGV[1]', 'ARGV[2]')}
local checkout = redis.call('GET', KEYS[1])
if not checkout then
  return { claimed }
end
if ARGV[3] ~= '1' then
  return { claimed, checkout }
end
local ok, found = pcall(cjson.decode, checkout)
if not ok or type(found) ~= 'table' or type(found.paymentId) ~= 'string' then
  return { claimed, checkout }
end
local record = redis.call('GET', ARGV[4] .. found.paymentId) or ''
local note = redis.call('GET', ARGV[5] .. found.paymentId .. ARGV[6]) or ''
return { claimed, checkout, record, note }
`;

/**
 * KEYS[1] the order's checkout, KEYS[2] its lock; ARGV[1] owner, ARGV[2] the checkout's JSON ('':
 * none to save), ARGV[3] its TTL in ms. The checkout saved, then the lock deleted if the owner
 * still holds it (compare-and-delete, as RELEASE_LUA). Replies 1 when the lock was freed, else 0.
 */
export const CLOSE_CHECKOUT_LUA = `
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if redis.call('GET', KEYS[2]) == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
`;
