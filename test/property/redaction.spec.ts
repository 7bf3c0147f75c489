import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { REDACTED, SecretRedactor } from '../../lib/core/api/secret.redactor.js';

// Echoes of a secret in part: any run of 8 or more consecutive characters of the private key, the
// webhook secret or the Authorization value (from its colon on), in the encodings a service, a
// proxy or a framework writes, inside arbitrary text. None survives the redactor: no window of 8
// characters of the run is left in the output in that encoding.

const KEY_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-';
const secretArb = fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 24, maxLength: 48 });
// Text around the echo: words, punctuation and spaces, none of them able to finish an encoding.
const noiseArb = fc.string({ unit: fc.constantFrom(...'xyz .,;:"{}[]=&QWJ'), maxLength: 20 });

const hex = (s: string) => Buffer.from(s).toString('hex');
const pairs = (s: string) => hex(s).match(/../g)!;
const uEscape = (s: string) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

/** Every window of `size` characters of a run. */
const windows = (run: string, size: number) =>
  Array.from({ length: run.length - size + 1 }, (_, i) => run.slice(i, i + size));

/**
 * An encoding: how the echo is written (`pad` bytes of other data before it, for base64), and the
 * forms in which no 8 characters of the run may survive: each 8-window encoded the same way (for
 * base64, the 8 characters that only 6 bytes of the run write, at every alignment).
 */
interface Encoding {
  name: string;
  write: (run: string, pad: number) => string;
  forms: (run: string) => string[];
}

const each = (encode: (w: string) => string) => (run: string) => windows(run, 8).map(encode);
const ENCODINGS: Encoding[] = [
  { name: 'as is', write: (r) => r, forms: each((w) => w) },
  { name: 'upper-cased', write: (r) => r.toUpperCase(), forms: each((w) => w) },
  { name: 'lower-cased', write: (r) => r.toLowerCase(), forms: each((w) => w) },
  { name: 'hex', write: hex, forms: each(hex) },
  { name: 'HEX', write: (r) => hex(r).toUpperCase(), forms: each(hex) },
  { name: 'spaced hex', write: (r) => pairs(r).join(' '), forms: each((w) => pairs(w).join(' ')) },
  { name: 'colon hex', write: (r) => pairs(r).join(':'), forms: each((w) => pairs(w).join(':')) },
  {
    name: '%-escaped bytes',
    write: (r) =>
      pairs(r)
        .map((p) => `%${p}`)
        .join(''),
    forms: each((w) =>
      pairs(w)
        .map((p) => `%${p}`)
        .join(''),
    ),
  },
  {
    name: '\\x-escaped bytes',
    write: (r) =>
      pairs(r)
        .map((p) => `\\x${p}`)
        .join(''),
    forms: each((w) =>
      pairs(w)
        .map((p) => `\\x${p}`)
        .join(''),
    ),
  },
  { name: 'spaced characters', write: (r) => [...r].join(' '), forms: each((w) => [...w].join(' ')) },
  { name: 'URL-encoded', write: encodeURIComponent, forms: each(encodeURIComponent) },
  {
    name: 'JSON-escaped',
    write: (r) => JSON.stringify(r).slice(1, -1),
    forms: each((w) => JSON.stringify(w).slice(1, -1)),
  },
  { name: '\\u-escaped', write: uEscape, forms: each(uEscape) },
  {
    name: 'HTML hex entities',
    write: (r) => [...r].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join(''),
    forms: each((w) => [...w].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')),
  },
  {
    name: 'HTML decimal entities',
    write: (r) => [...r].map((c) => `&#${c.charCodeAt(0)};`).join(''),
    forms: each((w) => [...w].map((c) => `&#${c.charCodeAt(0)};`).join('')),
  },
  {
    name: 'octal escapes',
    write: (r) => [...r].map((c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`).join(''),
    forms: each((w) => [...w].map((c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`).join('')),
  },
  {
    name: '0x list',
    write: (r) =>
      pairs(r)
        .map((p) => `0x${p}`)
        .join(', '),
    forms: each((w) =>
      pairs(w)
        .map((p) => `0x${p}`)
        .join(', '),
    ),
  },
  { name: 'zero-width split', write: (r) => [...r].join('\u200b'), forms: each((w) => [...w].join('\u200b')) },
  { name: 'soft-hyphen split', write: (r) => [...r].join('\u00ad'), forms: each((w) => [...w].join('\u00ad')) },
  {
    name: 'char-code list',
    write: (r) => `[${[...r].map((c) => c.charCodeAt(0)).join(', ')}]`,
    forms: each((w) => [...w].map((c) => c.charCodeAt(0)).join(', ')),
  },
  {
    name: 'base64 inside longer data',
    write: (r, pad) => Buffer.from(`${'#'.repeat(pad)}${r}`).toString('base64'),
    forms: (run) => windows(run, 6).map((w) => Buffer.from(w).toString('base64')),
  },
  {
    name: 'base64url inside longer data',
    write: (r, pad) => Buffer.from(`${'#'.repeat(pad)}${r}`).toString('base64url'),
    forms: (run) => windows(run, 6).map((w) => Buffer.from(w).toString('base64url')),
  },
];

const echoArb = fc.record({
  privateKey: secretArb,
  webhookSecret: secretArb,
  which: fc.constantFrom('privateKey', 'webhookSecret', 'authorization'),
  start: fc.nat(),
  length: fc.integer({ min: 8, max: 48 }),
  encoding: fc.constantFrom(...ENCODINGS),
  pad: fc.integer({ min: 0, max: 2 }),
  before: noiseArb,
  after: noiseArb,
});

describe('redaction of secrets echoed in part (property)', () => {
  it('cuts out any run of 8+ characters of a secret, in any of the common encodings, wherever it sits', () => {
    fc.assert(
      fc.property(echoArb, ({ privateKey, webhookSecret, which, start, length, encoding, pad, before, after }) => {
        const publicKey = 'pk_live_public';
        const source =
          which === 'authorization'
            ? `${publicKey}:${privateKey}`
            : which === 'privateKey'
              ? privateKey
              : webhookSecret;
        // For the Authorization value: a run holding the colon and at least one private-key character.
        const min = which === 'authorization' ? Math.max(0, publicKey.length + 2 - 8) : 0;
        const from = min + (start % Math.max(1, source.length - 8 - min + 1));
        const run = source.slice(from, Math.min(source.length, from + length));
        fc.pre(run.length >= 8);
        const redactor = new SecretRedactor({ privateKey, publicKey, webhookSecret });
        const text = `${before}${encoding.write(run, pad)}${after}`;
        const out = redactor.text(text);
        expect(out).toContain(REDACTED);
        expect(redactor.has(text)).toBe(true);
        for (const form of encoding.forms(run)) expect(out.toLowerCase()).not.toContain(form.toLowerCase());
      }),
      { numRuns: 600 },
    );
  });

  it('leaves text without a run of 8 characters of a secret as it is', () => {
    fc.assert(
      fc.property(
        secretArb,
        secretArb,
        fc.string({ unit: fc.constantFrom(...'abcdef0123 _-:{}"'), maxLength: 200 }),
        (privateKey, webhookSecret, text) => {
          const redactor = new SecretRedactor({ privateKey, publicKey: 'pk_x', webhookSecret });
          // Ordinary text of a narrow alphabet holds a run of a random 24+ character key only by chance: then it is cut.
          const out = redactor.text(text);
          if (out === text) expect(redactor.has(text)).toBe(false);
          else expect(out).toContain(REDACTED);
        },
      ),
      { numRuns: 200 },
    );
  });
});
