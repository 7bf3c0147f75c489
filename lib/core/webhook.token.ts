import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the query parameter that carries the plugin's webhook token. */
export const WEBHOOK_TOKEN_PARAM = 'webhook_token';

const DOMAIN = 'nestjs-payments:webhook:v1:';
const TOKEN_FORMAT = /^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{43})$/;

/**
 * Issues and checks the tokens carried by signed webhook URLs.
 *
 * A token is `<nonce>.<HMAC-SHA256(secret, nonce)>` in base64url. The nonce is random because the
 * payment id is not known until the service answers; the store then binds nonce -> payment.
 * The HMAC lets forged tokens be refused without a store lookup, and a leaked store dump
 * cannot be turned into valid URLs.
 */
export class WebhookTokenSigner {
  readonly #secret: Buffer;

  /** @param secret the webhook secret (validated elsewhere: at least 32 characters) */
  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'utf8');
  }

  /** A new token and its nonce (the id under which the binding is stored). */
  issue(): { token: string; nonce: string } {
    const nonce = randomBytes(18).toString('base64url');
    return { token: `${nonce}.${this.#sign(nonce)}`, nonce };
  }

  /**
   * Checks a token's signature in constant time.
   * @returns its nonce when the signature is right, otherwise undefined
   */
  verify(token: unknown): string | undefined {
    if (typeof token !== 'string') return undefined;
    const match = TOKEN_FORMAT.exec(token);
    if (!match) return undefined;
    const expected = Buffer.from(this.#sign(match[1]), 'utf8');
    const actual = Buffer.from(match[2], 'utf8');
    return expected.length === actual.length && timingSafeEqual(expected, actual) ? match[1] : undefined;
  }

  /** The webhook URL for a token: `publicUrl` with the token added to its query. */
  static urlWithToken(publicUrl: string, token: string): string {
    const url = new URL(publicUrl);
    url.searchParams.set(WEBHOOK_TOKEN_PARAM, token);
    return url.toString();
  }

  #sign(nonce: string): string {
    return createHmac('sha256', this.#secret).update(DOMAIN + nonce).digest('base64url');
  }
}

/** Compares two strings in constant time (hashing first, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}
