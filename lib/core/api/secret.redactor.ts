/** What replaces a secret found in an answer of the service. */
export const REDACTED = '[redacted]';

/** Shorter strings are not searched for: they would match ordinary text. */
const MIN_SECRET_LENGTH = 4;

/** Shortest base64 run kept as a form: shorter ones would match ordinary base64 data. */
const MIN_BASE64_CORE = 8;

/** The secrets of one client, as the transport knows them. */
export interface RedactedSecrets {
  /** The private key; also searched for inside base64 of the Authorization value `public:private`. */
  privateKey: string;
  /** The public key: only the base64 of `public:private` uses it (it is no secret itself). */
  publicKey?: string;
  /** The webhook secret, when one is configured. */
  webhookSecret?: string;
  /** The webhook secrets of before a rotation, still accepted. */
  previousWebhookSecrets?: readonly string[];
}

/** What an answer becomes: its text and its parsed JSON, with every secret cut out. */
export interface RedactedAnswer {
  /** The body's text. */
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: unknown;
}

/**
 * Cuts the secrets (the private key, the webhook secret) out of what the service answers, so that
 * a service or a proxy echoing the request's Authorization header, or anything else, cannot put
 * them into an error message, an excerpt, a verify answer's `details`, an event, a span or a log
 * line.
 *
 * The forms searched for are built once per client: each secret as written, in any case
 * (`SK_LIVE…`), URL-encoded, JSON-escaped (also PHP's `\/`), and inside base64 or base64url (the
 * Authorization value `public:private` as Basic auth encodes it, or the secret alone at any byte
 * offset: a run of base64 that only that secret can produce); the encoded forms are also searched
 * for URL-encoded and JSON-escaped. All of them make one case-insensitive pattern, so that a body is
 * scanned once, natively.
 *
 * JSON escapes can spell any character (`\u0073k_…`), so no list of textual forms is complete for a
 * JSON body: when a body holds an escape other than `\/`, or a form was found, the parsed value is
 * walked and every string in it (keys too, at any depth) is cleaned. A body without either (almost
 * every successful answer) is passed on as it came, parsed once and never copied.
 */
export class SecretRedactor {
  // Private fields: this object must not show the secrets to util.inspect or JSON.stringify.
  /** Every form, longest first; global (replace). */
  readonly #pattern?: RegExp;
  /** The same, non-global (test: no lastIndex to reset). */
  readonly #probe?: RegExp;

  /** @param secrets the values to cut out; one shorter than 4 characters is left alone */
  constructor(secrets: RedactedSecrets | string) {
    const {
      privateKey,
      publicKey,
      webhookSecret,
      previousWebhookSecrets = [],
    } = typeof secrets === 'string' ? ({ privateKey: secrets } as RedactedSecrets) : secrets;
    const forms = new Set<string>();
    for (const secret of [privateKey, webhookSecret, ...previousWebhookSecrets])
      if (secret !== undefined && secret.length >= MIN_SECRET_LENGTH) addForms(forms, secret);
    if (publicKey !== undefined && privateKey.length >= MIN_SECRET_LENGTH) {
      for (const encoded of base64Forms(Buffer.from(`${publicKey}:${privateKey}`))) addEncoded(forms, encoded);
    }
    if (forms.size === 0) return;
    // Longest first: a form containing another is replaced whole (alternatives are tried in order).
    const source = [...forms]
      .sort((a, b) => b.length - a.length)
      .map((f) => f.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&'))
      .join('|');
    this.#pattern = new RegExp(source, 'gi');
    this.#probe = new RegExp(source, 'i');
  }

  /** Whether a text holds a form of a secret. */
  has(text: string): boolean {
    return this.#probe !== undefined && this.#probe.test(text);
  }

  /** A text with every form of every secret replaced. */
  text(text: string): string {
    return this.#pattern !== undefined && this.#probe!.test(text) ? text.replace(this.#pattern, REDACTED) : text;
  }

  /**
   * A parsed JSON value with the secrets replaced in every string and key, recursively; `changed`
   * says whether anything was replaced (the value is then a copy, the input is left as it is).
   */
  json(value: unknown): { value: unknown; changed: boolean } {
    if (this.#probe === undefined) return { value, changed: false };
    let changed = false;
    const clean = (s: string): string => {
      const out = this.text(s);
      if (out !== s) changed = true;
      return out;
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

  /**
   * An answer of the service, parsed once and cleaned: the text with every form replaced, and the
   * parsed JSON (`parse` returns undefined for a body that is not JSON) cleaned in every string
   * whatever escapes spelled a secret; a JSON body that held one is passed on re-serialised, so
   * that no escaped form survives in an excerpt.
   *
   * Per successful answer (the common case) this costs one native scan of the raw text besides the
   * parse: on the bench's verify answer (250 bytes) 1.6 µs with the parse, against 5.5 µs when every
   * answer's tree was walked and copied (generate answer: 1.0 against 3.1 µs; bench/plugin-work.mjs).
   */
  answer(raw: string, parse: (text: string) => unknown): RedactedAnswer {
    const json = parse(raw);
    // Without a form in the text and without an escape that could spell one (`\/` is searched for
    // as a form), the parsed strings hold no secret either: nothing to walk or copy.
    if (!this.has(raw) && (json === undefined || !ESCAPE.test(raw))) return json === undefined ? { body: raw } : { body: raw, json };
    const body = this.text(raw);
    if (json === undefined) return { body };
    const { value, changed } = this.json(json);
    return { body: changed ? JSON.stringify(value) : body, json: value };
  }
}

/** A JSON escape other than `\/` (a `\\` counts: it is followed by a backslash). */
const ESCAPE = /\\[^/]/;

/** A secret's forms: as written (any case: the pattern ignores case), and inside base64 at each byte offset. */
function addForms(forms: Set<string>, secret: string): void {
  addEncoded(forms, secret);
  const bytes = Buffer.from(secret);
  for (const encoded of base64Forms(bytes)) addEncoded(forms, encoded);
  // The secret inside a longer base64 text: its bytes start at offset 0, 1 or 2 of a 3-byte group.
  // The characters of the groups it shares with its neighbours depend on them; the rest do not.
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // 3-byte group g is written by characters 4g to 4g + 3; the groups made of the secret's bytes only:
    const first = offset === 0 ? 0 : 1;
    const end = Math.floor((offset + bytes.length) / 3);
    const core = encoded.slice(4 * first, 4 * end);
    for (const run of [core, toBase64Url(core)]) if (run.length >= MIN_BASE64_CORE) addEncoded(forms, run);
  }
}

/** base64 and base64url of some bytes, padded and not. */
function base64Forms(bytes: Buffer): string[] {
  const padded = bytes.toString('base64');
  return [padded, padded.replace(/=+$/, ''), bytes.toString('base64url')];
}

function toBase64Url(text: string): string {
  return text.replace(/\+/g, '-').replace(/\//g, '_');
}

/**
 * A form, and the same URL-encoded and JSON-escaped: as JSON.stringify writes it, with PHP's `\/`,
 * and with every character but letters and digits written `\uXXXX` (some encoders do).
 */
function addEncoded(forms: Set<string>, form: string): void {
  const json = JSON.stringify(form).slice(1, -1);
  const hex = form.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const f of [form, encodeURIComponent(form), json, json.replace(/\//g, '\\/'), hex]) forms.add(f);
}
