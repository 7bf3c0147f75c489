import { eq, lt } from 'drizzle-orm';
import session, { type SessionData } from 'express-session';
import type { ShopDb } from '../db/database.js';
import { shopSessions } from '../db/schema.js';

/** Expired rows are deleted at most this often, by whichever write comes next. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** Used when a session's cookie has no expiry (the shop always sets one): one day. */
const DEFAULT_TTL_MS = 24 * 3600 * 1000;

type Callback<T = void> = (error?: unknown, value?: T) => void;

/**
 * express-session's store on the shop's own database (`shop_sessions`, through Drizzle: PGlite or
 * PostgreSQL alike). A session lives only as long as its row: `destroy()` at sign-out deletes it,
 * so the signed cookie the browser may still hold reads as no session.
 */
export class DrizzleSessionStore extends session.Store {
  #lastPrune = 0;

  /** @param db the shop's database */
  constructor(private readonly db: ShopDb) {
    super();
  }

  /** The session of `sid`, or null when there is none or it expired. */
  override get(sid: string, callback: Callback<SessionData | null>): void {
    this.db
      .select({ sess: shopSessions.sess, expiresAt: shopSessions.expiresAt })
      .from(shopSessions)
      .where(eq(shopSessions.sid, sid))
      .then(
        ([row]) =>
          callback(
            undefined,
            row && row.expiresAt.getTime() > Date.now() ? (row.sess as unknown as SessionData) : null,
          ),
        (error: unknown) => callback(error),
      );
  }

  /** Creates or replaces the session of `sid`. */
  override set(sid: string, sess: SessionData, callback?: Callback): void {
    const expiresAt = expiryOf(sess);
    const data = JSON.parse(JSON.stringify(sess)) as Record<string, unknown>;
    this.db
      .insert(shopSessions)
      .values({ sid, sess: data, expiresAt })
      .onConflictDoUpdate({ target: shopSessions.sid, set: { sess: data, expiresAt } })
      .then(() => this.#pruneNowAndThen())
      .then(
        () => callback?.(),
        (error: unknown) => callback?.(error),
      );
  }

  /** Deletes the session of `sid` (sign-out). */
  override destroy(sid: string, callback?: Callback): void {
    this.db
      .delete(shopSessions)
      .where(eq(shopSessions.sid, sid))
      .then(
        () => callback?.(),
        (error: unknown) => callback?.(error),
      );
  }

  /** Moves the expiry of an active session (rolling sessions). */
  override touch(sid: string, sess: SessionData, callback?: Callback): void {
    this.db
      .update(shopSessions)
      .set({ expiresAt: expiryOf(sess) })
      .where(eq(shopSessions.sid, sid))
      .then(
        () => callback?.(),
        (error: unknown) => callback?.(error),
      );
  }

  async #pruneNowAndThen(): Promise<void> {
    const now = Date.now();
    if (now - this.#lastPrune < PRUNE_INTERVAL_MS) return;
    this.#lastPrune = now;
    await this.db.delete(shopSessions).where(lt(shopSessions.expiresAt, new Date(now)));
  }
}

function expiryOf(sess: SessionData): Date {
  const expires = sess.cookie?.expires;
  if (expires) return new Date(expires);
  return new Date(Date.now() + (sess.cookie?.maxAge ?? DEFAULT_TTL_MS));
}
