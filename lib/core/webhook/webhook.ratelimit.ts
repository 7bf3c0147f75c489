import { randomUUID } from 'node:crypto';
import type { PaymentsStore } from '../store/payments.store.js';

/** One slot per key per window, shared by every instance that shares the store. */
export interface SlotLimiter {
  /** Takes the key's slot for `windowMs`: false when it is taken. */
  take(key: string, windowMs: number): Promise<boolean>;
  /** Ends the key's window early. */
  free(key: string): Promise<void>;
}

/** The store's rate limiter. */
export function rateLimiterOf(store: PaymentsStore): SlotLimiter {
  const own = (store as { rateLimits?: SlotLimiter }).rateLimits;
  if (own) return own;
  // TRANSITIONAL: a store without its own rate-limit port keeps slots as claims.
  const owners = new Map<string, string>();
  return {
    take: async (key, windowMs) => {
      const owner = randomUUID();
      const taken = (await store.claim(key, owner, windowMs)) === 'claimed';
      if (taken) owners.set(key, owner);
      return taken;
    },
    free: async (key) => {
      const owner = owners.get(key);
      owners.delete(key);
      if (owner) await store.release(key, owner);
    },
  };
}
