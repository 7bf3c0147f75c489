/**
 * The Lua scripts behind {@link RedisPaymentsStore}. Each check-and-set runs as one script so that
 * it is atomic across every app instance sharing the Redis, and costs one round trip.
 *
 * Event keys hold `claimed:<owner>` (with the lease as PX) or `done` (with the done TTL as PX).
 */

/** Value of an event key whose delivery has been handled. */
export const DONE_VALUE = 'done';

/** Prefix of the value of an event key held by a delivery attempt (`claimed:<owner>`). */
export const CLAIMED_PREFIX = 'claimed:';

// KEYS[1] event key; ARGV[1] owner; ARGV[2] lease in ms. The same owner claiming again (a command
// resent after a reconnect) gets its claim back with a fresh lease. Anything else but an empty key
// or `done` counts as a claim by someone (even a foreign value), so the script errs on not running.
const CLAIM_LUA = `
local current = redis.call('GET', KEYS[1])
if current == '${DONE_VALUE}' then
  return 'done'
end
if not current or current == '${CLAIMED_PREFIX}' .. ARGV[1] then
  redis.call('SET', KEYS[1], '${CLAIMED_PREFIX}' .. ARGV[1], 'PX', ARGV[2])
  return 'claimed'
end
return 'busy'
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

/**
 * Names under which the scripts are defined on the ioredis client (`defineCommand`). They are
 * namespaced because the client may belong to the host, which may define commands of its own;
 * defining them again (a second store on the same client) is harmless, the Lua is the same.
 */
export const SCRIPT_NAMES = {
  claim: 'nestjsPaymentsClaim',
  markDone: 'nestjsPaymentsMarkDone',
  release: 'nestjsPaymentsRelease',
} as const;

/** The scripts, in the shape `Redis#defineCommand` takes. */
export const SCRIPTS: ReadonlyArray<{ name: string; lua: string; numberOfKeys: number }> = [
  { name: SCRIPT_NAMES.claim, lua: CLAIM_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.markDone, lua: MARK_DONE_LUA, numberOfKeys: 1 },
  { name: SCRIPT_NAMES.release, lua: RELEASE_LUA, numberOfKeys: 1 },
];

/**
 * The methods `defineCommand` adds to the client. ioredis cannot type them, so the store views
 * the client through this interface once, right after defining them.
 */
export interface StoreScriptCommands {
  /** Replies `'claimed'`, `'done'` or `'busy'`. */
  [SCRIPT_NAMES.claim](eventKey: string, owner: string, leaseMs: number): Promise<unknown>;
  /** Replies 1 when the owner's claim became `done`, else 0. */
  [SCRIPT_NAMES.markDone](eventKey: string, owner: string, ttlMs: number): Promise<unknown>;
  /** Replies 1 when the owner's claim was deleted, else 0. */
  [SCRIPT_NAMES.release](eventKey: string, owner: string): Promise<unknown>;
}
