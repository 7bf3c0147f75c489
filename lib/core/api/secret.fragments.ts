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
export const FRAGMENT = 8;

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
export function fragmentSources(secret: string): string[] {
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
export class FragmentIndex {
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
