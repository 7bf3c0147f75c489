import { createHmac, createSecretKey, hash, randomFillSync, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Name of the query parameter that carries the plugin's webhook token. */
export const WEBHOOK_TOKEN_PARAM = 'webhook_token';

const DOMAIN = 'nestjs-payments:webhook:v1:';
const TOKEN_FORMAT = /^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{43})$/;
const NONCE_BYTES = 18;

// Nonces come from a pool refilled 256 at a time by the same CSPRNG (as crypto.randomUUID does):
// one randomBytes() call per payment was a measurable share of generatePayment's CPU. Each nonce
// is read once; the pool is module-private.
const pool = Buffer.alloc(NONCE_BYTES * 256);
let poolOffset = pool.length;

function nextNonce(): string {
  if (poolOffset + NONCE_BYTES > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const nonce = pool.toString('base64url', poolOffset, poolOffset + NONCE_BYTES);
  poolOffset += NONCE_BYTES;
  return nonce;
}

// A URL-safe stand-in for the token, replaced textually: the token's characters ([A-Za-z0-9._-])
// are never escaped in a query string, so this gives exactly what URLSearchParams would.
const TOKEN_PLACEHOLDER = '__nestjs_payments_token__';
const urlTemplates = new Map<string, [string, string]>();

/**
 * Issues and checks the tokens carried by signed webhook URLs.
 *
 * A token is `<nonce>.<HMAC-SHA256(secret, nonce)>` in base64url. The nonce is random because the
 * payment id is not known until the service answers; the store then binds nonce -> payment.
 * The HMAC lets forged tokens be refused without a store lookup, and a leaked store dump
 * cannot be turned into valid URLs.
 */
export class WebhookTokenSigner {
  readonly #secret: KeyObject;

  /** @param secret the webhook secret (validated elsewhere: at least 32 characters) */
  constructor(secret: string) {
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  /** A new token and its nonce (the id under which the binding is stored). */
  issue(): { token: string; nonce: string } {
    const nonce = nextNonce();
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
    let template = urlTemplates.get(publicUrl);
    if (!template) {
      const url = new URL(publicUrl);
      url.searchParams.set(WEBHOOK_TOKEN_PARAM, TOKEN_PLACEHOLDER);
      const text = url.toString();
      const at = text.indexOf(TOKEN_PLACEHOLDER);
      template = [text.slice(0, at), text.slice(at + TOKEN_PLACEHOLDER.length)];
      if (urlTemplates.size < 16) urlTemplates.set(publicUrl, template);
    }
    return template[0] + token + template[1];
  }

  #sign(nonce: string): string {
    return createHmac('sha256', this.#secret).update(DOMAIN + nonce).digest('base64url');
  }
}

/** Compares two strings in constant time (hashing first, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}
