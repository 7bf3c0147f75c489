import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The desk's form tokens (CSRF): `<issued, base 36>.<HMAC-SHA256 of the principal and the issue
 * time>`, under a key held by this desk (never module state). A token is good for one principal
 * and `ttlMs`: a page of another site cannot read one (the desk's pages are same-origin), and a
 * token taken from one person's page is refused for anyone else.
 */
export class DeskFormTokens {
  readonly #key: Buffer;
  readonly #ttlMs: number;

  /**
   * @param key the HMAC key (the desk's `formKey`, or random bytes)
   * @param ttlMs how long a token is accepted after it was issued
   */
  constructor(key: Buffer, ttlMs: number) {
    this.#key = key;
    this.#ttlMs = ttlMs;
  }

  /** A token for `principalId`, issued at `now` (epoch ms). */
  issue(principalId: string, now: number): string {
    const issued = Math.floor(now / 1000).toString(36);
    return `${issued}.${this.#sign(principalId, issued)}`;
  }

  /** Whether `token` was issued by this desk for `principalId` and has not expired at `now`. */
  check(token: unknown, principalId: string, now: number): boolean {
    if (typeof token !== 'string' || token.length > 100) return false;
    const [issued, mac, extra] = token.split('.');
    if (issued === undefined || mac === undefined || extra !== undefined || !/^[0-9a-z]{1,10}$/.test(issued))
      return false;
    const at = parseInt(issued, 36) * 1000;
    if (!(at <= now + 60_000 && now - at <= this.#ttlMs)) return false;
    const expected = Buffer.from(this.#sign(principalId, issued));
    const given = Buffer.from(mac);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** Shows nothing of the key. */
  toJSON(): Record<string, never> {
    return {};
  }

  #sign(principalId: string, issued: string): string {
    return createHmac('sha256', this.#key).update(`desk-form\n${issued}\n${principalId}`).digest('base64url');
  }
}
