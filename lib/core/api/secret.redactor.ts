import { FRAGMENT, FragmentIndex, fragmentSources } from './secret.fragments.js';

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
 * scanned once, natively. Shorter echoes (any run of 8 characters of a secret, or of the
 * Authorization value's part from its colon on, in those encodings or in hex, octal, HTML numeric
 * entities, `0x` or character-code lists, base64 of the hex, spaced out or split by zero-width
 * characters) are found by a second pass over the text, which decodes as it reads
 * (`secret.fragments.ts`), and the span of the original text that spelled them is cut out too.
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
  /** Runs of FRAGMENT characters of the secrets, in their encodings. */
  readonly #fragments: FragmentIndex;

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
    this.#fragments = new FragmentIndex(
      fragmentSourcesOf(privateKey, publicKey, [webhookSecret, ...previousWebhookSecrets]),
    );
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

  /** Whether a text holds a form of a secret, or (unless `runs` is false) a run of 8 of its characters. */
  has(text: string, runs = true): boolean {
    return (
      (this.#probe !== undefined && this.#probe.test(text)) || (runs && this.#fragments.spans(text, true).length > 0)
    );
  }

  /** A text with every form of every secret, and (unless `runs` is false) every run of 8 of its characters, replaced. */
  text(text: string, runs = true): string {
    const whole = this.#pattern !== undefined && this.#probe!.test(text) ? text.replace(this.#pattern, REDACTED) : text;
    const spans = runs ? this.#fragments.spans(whole) : [];
    if (spans.length === 0) return whole;
    let out = '';
    let at = 0;
    for (const [start, end] of spans) {
      out += whole.slice(at, start) + REDACTED;
      at = end;
    }
    return out + whole.slice(at);
  }

  /**
   * A parsed JSON value with the secrets replaced in every string and key, recursively; `changed`
   * says whether anything was replaced (the value is then a copy, the input is left as it is).
   * With `runs: 'free text'`, runs of 8 characters are cut only out of free text (see
   * {@link isFreeText}), whole forms everywhere.
   */
  json(value: unknown, runs: boolean | 'free text' = true): { value: unknown; changed: boolean } {
    if (this.#probe === undefined && this.#fragments.empty) return { value, changed: false };
    let changed = false;
    const clean = (s: string, free: boolean): string => {
      const out = this.text(s, free);
      if (out !== s) changed = true;
      return out;
    };
    const walk = (v: unknown, free: boolean): unknown => {
      if (typeof v === 'string') return clean(v, free);
      if (Array.isArray(v)) return v.map((inner) => walk(inner, free));
      if (typeof v === 'object' && v !== null) {
        const out: Record<string, unknown> = {};
        // defineProperty: a key named `__proto__` stays an own key, as JSON.parse made it.
        for (const [k, inner] of Object.entries(v)) {
          const innerFree = free || isFreeText(k);
          Object.defineProperty(out, clean(k, innerFree), {
            value: walk(inner, innerFree),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return out;
      }
      return v;
    };
    const result = walk(value, runs === true);
    return { value: changed ? result : value, changed };
  }

  /**
   * An answer of the service, parsed once and cleaned: the text with every form replaced, and the
   * parsed JSON (`parse` returns undefined for a body that is not JSON) cleaned in every string
   * whatever escapes spelled a secret; a JSON body that held one is passed on re-serialised, so
   * that no escaped form survives in an excerpt.
   *
   * Runs of 8 characters of a secret are cut out of all of an answer that is no success (`status`
   * not 2xx) or not JSON: it is free text. A JSON success holds the values the plugin reads (ids,
   * links, amounts), which an echo does not reach and which must reach the plugin unaltered even
   * if 8 of their characters happen to be a key's: there runs are cut only out of free text
   * (`details`, messages), whole forms out of everything.
   *
   * Per successful answer (the common case) this costs one native scan of the raw text and one
   * pass of the fragment index over it besides the parse, never a walk or a copy of the tree
   * (bench/plugin-work.mjs measures it on the bench's verify and generate answers).
   */
  answer(raw: string, parse: (text: string) => unknown, status = 200): RedactedAnswer {
    const json = parse(raw);
    // Without a form or a run in the text and without an escape that could spell one (`\/` is
    // decoded), the parsed strings hold no secret either: nothing to walk or copy.
    if (!this.has(raw) && (json === undefined || !ESCAPE.test(raw)))
      return json === undefined ? { body: raw } : { body: raw, json };
    if (json === undefined) return { body: this.text(raw) };
    const success = status >= 200 && status < 300;
    const { value, changed } = this.json(json, success ? 'free text' : true);
    return { body: changed ? JSON.stringify(value) : this.text(raw, !success), json: value };
  }
}

/** Keys whose values are free text in an answer: where an echo lands, and no value the plugin reads. */
const FREE_TEXT_KEYS = new Set([
  'details',
  'message',
  'messages',
  'error',
  'errors',
  'description',
  'detail',
  'reason',
]);

/** Whether the value of a key of an answer is free text (see {@link SecretRedactor.answer}). */
function isFreeText(key: string): boolean {
  return FREE_TEXT_KEYS.has(key.toLowerCase());
}

/**
 * Where runs of a secret come from: the private key and the webhook secrets (current and previous), and the Authorization
 * value `public:private` from its colon on (its public key alone is no secret), each in the
 * encodings of {@link fragmentSources}. Secrets shorter than a run have none.
 */
function fragmentSourcesOf(
  privateKey: string,
  publicKey: string | undefined,
  webhookSecrets: ReadonlyArray<string | undefined>,
): string[] {
  const sources: string[] = [];
  for (const secret of [privateKey, ...webhookSecrets])
    if (secret !== undefined && secret.length >= FRAGMENT) sources.push(...fragmentSources(secret));
  if (publicKey !== undefined && privateKey.length > 0) {
    const authorization = `${publicKey}:${privateKey}`;
    // Runs that hold the colon and at least one character of the private key.
    const fromColon = authorization.slice(Math.max(0, publicKey.length + 2 - FRAGMENT));
    sources.push(...fragmentSources(fromColon), ...fragmentSources(authorization).slice(1));
  }
  return sources;
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
