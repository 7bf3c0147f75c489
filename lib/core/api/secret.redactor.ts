/**
 * Secrets cut out of everything the service answers, before anything reads it: whole secrets in
 * their encodings (below), and the runs of a secret too short to be the whole of it (the fragment
 * index at the end of this file).
 */
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
 * (the fragment index, below), and the span of the original text that spelled them is cut out too.
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

/**
 * Finds runs of a secret's characters too short to be the whole secret: a service or a proxy that
 * echoes the Authorization header cut short, hex-encoded or spaced out, or a prefix of the webhook
 * secret. The unit is the {@link FRAGMENT} characters of a secret (or their encodings), looked up
 * in a set built once per client; a text is read once, in one loop, through a normaliser that
 * decodes the encodings a run could be written in:
 *
 * - case changes: letters are compared lower-cased;
 * - spaced out: whitespace is skipped, and so are the invisible characters that can split a key
 *   without showing (zero-width space, non-joiner and joiner U+200B-U+200D, U+FEFF, the soft hyphen U+00AD);
 * - URL-encoded (`%73`), JSON-escaped (`\u0073`, `\/`, `\"`, `\\`), C-style hex (`\x73`) and octal
 *   (`\163`, three digits), HTML numeric entities (`&#x73;`, `&#115;`, the `;` optional): decoded;
 * - hex (`736b5f…`, any case, spaced or with `:` or `-` between bytes, or as a `0x73, 0x6b` list),
 *   base64 or base64url (at any byte offset, so inside a longer encoded text too), base64 of the
 *   hex (lower or upper case), and the character codes as a decimal list (`[115, 107, 95]`): the
 *   set holds those encodings' runs.
 *
 * The lookup is a rolling hash of the last {@link FRAGMENT} normalised characters checked against a
 * bit table, and only a table hit is checked exactly, so a text without a fragment costs one pass.
 * Every decoding looks at most 10 characters ahead, so the pass stays linear in the text.
 */

/** Length of the runs looked for: any run of this many characters of a secret is cut out (a power of two: the window is a ring indexed by masking). */
const FRAGMENT = 8;

const TABLE_BITS = 16;
// Read once: the loops below run per character of every answer, and in a vm context (Jest's) each
// lookup of a global such as `Math` is a slow call into the context's global object.
const { imul } = Math;
const { fromCharCode } = String;
const HASH_BASE = 0x01000193;
/** HASH_BASE to the power FRAGMENT, modulo 2^32: the weight of the character leaving the window. */
const OUTGOING = (() => {
  let p = 1;
  for (let i = 0; i < FRAGMENT; i++) p = imul(p, HASH_BASE);
  return p;
})();

const hexValue = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13 || c === 12;
/** Characters that show nothing: whitespace, zero-width space/non-joiner/joiner, U+FEFF, the soft hyphen. */
const isSkipped = (c: number): boolean => isSpace(c) || c === 0xad || (c >= 0x200b && c <= 0x200d) || c === 0xfeff;
/**
 * Whether the fast loop of {@link FragmentIndex.spans} must hand a character to readAt: spaces,
 * `%`, `&`, `\`, and the invisible ones (tested last: above U+00AC, rare in an answer).
 */
const needsRead = (c: number): boolean =>
  c < 39 ? c <= 32 || c >= 37 : c === 92 || (c >= 0xad && (c === 0xad || (c >= 0x200b && c <= 0x200d) || c === 0xfeff));
const isOctal = (c: number): boolean => c >= 48 && c <= 55;

// A read is packed into one small integer, so the hot loop allocates nothing: the characters it
// took (1 to 6) above READ_SHIFT bits, the normalised code + 1 below (0: skipped).
const READ_SHIFT = 17;
const READ_CODE = (1 << READ_SHIFT) - 1;
const packed = (code: number, taken: number): number => (taken << READ_SHIFT) | (code + 1);

/**
 * Reads the normalised character at `i` (packed, see READ_SHIFT): its code, or none when it is
 * skipped, and how many characters it took. One rule for the secrets' runs and for the texts
 * searched, so both normalise alike.
 */
function readAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c !== 37 && c !== 92 && c !== 38) return isSkipped(c) ? packed(-1, 1) : packed(lower(c), 1);
  if (c === 38 /* & */) return entityAt(text, i);
  if (c === 37 /* % */ && i + 2 < text.length) {
    const h = hexValue(text.charCodeAt(i + 1));
    const l = hexValue(text.charCodeAt(i + 2));
    if (h >= 0 && l >= 0) return packed(lower(h * 16 + l), 3);
  }
  if (c === 92 /* \ */ && i + 1 < text.length) {
    const e = text.charCodeAt(i + 1);
    if (e === 117 /* u */ && i + 5 < text.length) {
      let v = 0;
      for (let k = 2; k < 6; k++) {
        const d = hexValue(text.charCodeAt(i + k));
        if (d < 0) return packed(c, 1);
        v = v * 16 + d;
      }
      return packed(isSkipped(v) ? -1 : lower(v), 6);
    }
    if (e === 120 /* x */ && i + 3 < text.length) {
      const h = hexValue(text.charCodeAt(i + 2));
      const l = hexValue(text.charCodeAt(i + 3));
      if (h >= 0 && l >= 0) return packed(lower(h * 16 + l), 4);
    }
    if (e >= 48 && e <= 51 && i + 3 < text.length) {
      const m = text.charCodeAt(i + 2);
      const l = text.charCodeAt(i + 3);
      if (isOctal(m) && isOctal(l)) return packed(lower((e - 48) * 64 + (m - 48) * 8 + (l - 48)), 4);
    }
    if (e === 47 || e === 34 || e === 92) return packed(e, 2);
    if (e === 110 || e === 114 || e === 116 || e === 98 || e === 102) return packed(-1, 2);
  }
  return packed(c, 1);
}

/**
 * An HTML numeric entity at `i` (`&#x73;`: up to 6 hex digits; `&#115;`: up to 7 decimal ones; the
 * `;` optional), decoded; anything else is the `&` itself.
 */
function entityAt(text: string, i: number): number {
  if (text.charCodeAt(i + 1) !== 35 /* # */) return packed(38, 1);
  const x = text.charCodeAt(i + 2);
  const isHex = x === 120 || x === 88;
  let k = isHex ? i + 3 : i + 2;
  const first = k;
  let v = 0;
  for (; k < text.length && k - first < (isHex ? 6 : 7); k++) {
    const ch = text.charCodeAt(k);
    const d = isHex ? hexValue(ch) : ch >= 48 && ch <= 57 ? ch - 48 : -1;
    if (d < 0) break;
    v = v * (isHex ? 16 : 10) + d;
  }
  if (k === first || v > 0x10ffff) return packed(38, 1);
  if (text.charCodeAt(k) === 59 /* ; */) k++;
  return packed(isSkipped(v) ? -1 : lower(v), k - i);
}

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/** The normalised codes of a text. */
function normalise(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length;) {
    const read = readAt(text, i);
    const code = (read & READ_CODE) - 1;
    if (code >= 0) out.push(code);
    i += read >>> READ_SHIFT;
  }
  return out;
}

/**
 * The runs a secret can be echoed as: its characters, its hex (plain, `:`, `-`, a `0x` list with
 * or without commas), its character codes as a decimal list, and its base64 and base64url, and
 * those of its hex (lower and upper case), at each byte offset.
 */
function fragmentSources(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const hex = bytes.toString('hex');
  const pairs = hex.match(/../g) ?? [];
  const prefixed = pairs.map((p) => `0x${p}`);
  const codes = Array.from(secret, (c) => c.charCodeAt(0));
  const sources = [
    secret,
    hex,
    pairs.join(':'),
    pairs.join('-'),
    prefixed.join(','),
    prefixed.join(''),
    codes.join(','),
  ];
  for (const encoded of [bytes, Buffer.from(hex), Buffer.from(hex.toUpperCase())]) sources.push(...base64Runs(encoded));
  return sources;
}

/** The base64 and base64url of some bytes that do not depend on their neighbours, at each byte offset. */
function base64Runs(bytes: Buffer): string[] {
  const runs: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // 3-byte group g is written by characters 4g to 4g + 3; keep the groups of these bytes only.
    const core = encoded.slice(4 * (offset === 0 ? 0 : 1), 4 * Math.floor((offset + bytes.length) / 3));
    runs.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return runs;
}

/** The fragments of some secrets, and where a text holds one. */
class FragmentIndex {
  // Private fields: this object must not show the fragments to util.inspect or JSON.stringify.
  readonly #table = new Uint32Array(1 << (TABLE_BITS - 5));
  readonly #exact = new Set<string>();

  /** @param sources texts whose every run of FRAGMENT normalised characters is a fragment (see {@link fragmentSources}) */
  constructor(sources: Iterable<string>) {
    for (const source of sources) {
      const codes = normalise(source);
      // One code, one UTF-16 unit (fromCharCode keeps the low 16 bits), so each run is a slice of this.
      let text = '';
      for (const code of codes) text += fromCharCode(code);
      // The rolling hash spans() computes, over each run in turn.
      let h = 0;
      for (let i = 0; i < codes.length; i++) {
        h = (imul(h, HASH_BASE) + codes[i] - (i >= FRAGMENT ? imul(codes[i - FRAGMENT], OUTGOING) : 0)) | 0;
        if (i + 1 < FRAGMENT) continue;
        const bit = h >>> (32 - TABLE_BITS);
        this.#table[bit >>> 5] |= 1 << (bit & 31);
        this.#exact.add(text.slice(i + 1 - FRAGMENT, i + 1));
      }
    }
  }

  /** Whether the index holds any fragment. */
  get empty(): boolean {
    return this.#exact.size === 0;
  }

  /**
   * The spans of `text` (start, end: indices into `text`) that spell a fragment, in order, merged
   * where they overlap or touch; with `first`, at most the first one.
   */
  spans(text: string, first = false): Array<[number, number]> {
    const spans: Array<[number, number]> = [];
    if (this.#exact.size === 0) return spans;
    // The window: the last FRAGMENT codes and where each started in `text`, as rings.
    const codes = new Int32Array(FRAGMENT);
    const starts = new Int32Array(FRAGMENT);
    const table = this.#table;
    let count = 0;
    let h = 0;
    for (let i = 0; i < text.length;) {
      // Plain characters (almost all of them) are read here; escapes and spaces by readAt.
      let code = text.charCodeAt(i);
      let next = i + 1;
      if (needsRead(code)) {
        const read = readAt(text, i);
        code = (read & READ_CODE) - 1;
        next = i + (read >>> READ_SHIFT);
      } else if (code >= 65 && code <= 90) code += 32;
      if (code >= 0) {
        const slot = count & (FRAGMENT - 1);
        const leaving = count >= FRAGMENT ? codes[slot] : 0;
        h = (imul(h, HASH_BASE) + code - imul(leaving, OUTGOING)) | 0;
        codes[slot] = code;
        starts[slot] = i;
        count++;
        if (count >= FRAGMENT) {
          const bit = h >>> (32 - TABLE_BITS);
          if (table[bit >>> 5] & (1 << (bit & 31)) && this.#hit(codes, count)) {
            const start = starts[count & (FRAGMENT - 1)];
            const last = spans[spans.length - 1];
            if (last && start <= last[1]) last[1] = next;
            else spans.push([start, next]);
            if (first) return spans;
          }
        }
      }
      i = next;
    }
    return spans;
  }

  #hit(ring: Int32Array, count: number): boolean {
    let run = '';
    for (let k = 0; k < FRAGMENT; k++) run += fromCharCode(ring[(count + k) & (FRAGMENT - 1)]);
    return this.#exact.has(run);
  }
}
