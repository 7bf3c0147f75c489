/** What replaces a secret found in an answer of the service. */
export const REDACTED = '[redacted]';

/** Shorter strings are not searched for: they would match ordinary text. */
const MIN_SECRET_LENGTH = 4;

/**
 * Cuts a secret (the private key) out of what the service answers, so that a service or a proxy
 * echoing the request's Authorization header cannot put it into an error message, an excerpt,
 * a verify answer's `details`, an event or a log line.
 *
 * Two passes, because no list of textual forms is complete: the raw body loses the key as
 * written, URL-encoded and JSON-escaped (also PHP's `\/`); a JSON body is then parsed and every
 * string in it (keys too, at any depth) loses the key, whatever escapes spelled it
 * (`\u002f`, `\"`, ...).
 */
export class SecretRedactor {
  // A private field: this object must not show the key to util.inspect or JSON.stringify.
  readonly #forms: readonly string[];
  readonly #secret?: string;

  /** @param secret the value to cut out; one shorter than 4 characters is left alone */
  constructor(secret: string) {
    if (secret.length < MIN_SECRET_LENGTH) {
      this.#forms = [];
      return;
    }
    this.#secret = secret;
    const json = JSON.stringify(secret).slice(1, -1);
    // Longest first: a form containing another is replaced whole.
    this.#forms = [...new Set([secret, encodeURIComponent(secret), json, json.replace(/\//g, '\\/')])].sort((a, b) => b.length - a.length);
  }

  /** A text with every raw form of the secret replaced. */
  text(text: string): string {
    let out = text;
    for (const form of this.#forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }

  /**
   * A parsed JSON value with the secret replaced in every string and key, recursively; `changed`
   * says whether anything was replaced (the value is then a copy, the input is left as it is).
   */
  json(value: unknown): { value: unknown; changed: boolean } {
    const secret = this.#secret;
    if (secret === undefined) return { value, changed: false };
    let changed = false;
    const clean = (s: string): string => {
      if (!s.includes(secret)) return s;
      changed = true;
      return s.split(secret).join(REDACTED);
    };
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return clean(v);
      if (Array.isArray(v)) return v.map(walk);
      if (typeof v === 'object' && v !== null) {
        const out: Record<string, unknown> = {};
        // defineProperty: a key named `__proto__` stays an own key, as JSON.parse made it.
        for (const [k, inner] of Object.entries(v))
          Object.defineProperty(out, clean(k), { value: walk(inner), enumerable: true, writable: true, configurable: true });
        return out;
      }
      return v;
    };
    const result = walk(value);
    return { value: changed ? result : value, changed };
  }
}
