/**
 * The shape of a signed webhook token (`<nonce>.<expiry>.<amount>.<tracking hash>.<tag>.<HMAC>`,
 * base64url and digits), and of a probe's: cut out of whatever a page shows, wherever it came from
 * (a customer can type one into an order note, a handler can throw one in its message).
 */
const WEBHOOK_TOKEN =
  /[A-Za-z0-9_-]{4,}\.[0-9a-z]{1,13}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16,}/g;
const PROBE_TOKEN = /probe\.[0-9a-z]{1,13}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

/** What replaces a token or a secret in a page. */
export const CUT = '[redacted]';

/**
 * A text as a page may show it: the client's secrets cut out by `secrets` (the private key and
 * the webhook secrets, in every encoding the core searches answers for), then every webhook token.
 */
export function cleanText(text: string, secrets: (text: string) => string): string {
  return secrets(text).replace(PROBE_TOKEN, CUT).replace(WEBHOOK_TOKEN, CUT);
}

/** A copy of a plain value (records, lists) with every string in it cleaned by `clean`. */
export function cleanDeep<T>(value: T, clean: (text: string) => string): T {
  if (typeof value === 'string') return clean(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => cleanDeep(v, clean)) as T;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = cleanDeep(v, clean);
    return out as T;
  }
  return value;
}
