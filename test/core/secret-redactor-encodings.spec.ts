// Every encoding docs/security.md ("What is never logged") lists beyond the plain forms, for the
// private key and the webhook secret, whole and in part, in every place an echo lands: none
// survives, and what is cut is the encoded span itself (the text around it is kept).
import { describe, expect, it } from '@jest/globals';
import { parseJson } from '../../lib/core/api/wire.mapper.js';
import { REDACTED, SecretRedactor } from '../../lib/core/api/secret.redactor.js';

const PRIVATE = 'sk_live_Q7rT2mZx9LpW4vKc8NbY';
const SECRET = 'whsec_h3J8kLm2Np5Qr7St9Uv1Wx4Yz6AbCd';
const redactor = new SecretRedactor({ privateKey: PRIVATE, publicKey: 'pk_live_public', webhookSecret: SECRET });

const codes = (s: string) => [...s].map((c) => c.charCodeAt(0));
const hex = (s: string) => Buffer.from(s).toString('hex');
const pairs = (s: string) => hex(s).match(/../g)!;
const windows = (run: string, size: number) =>
  Array.from({ length: Math.max(0, run.length - size + 1) }, (_, i) => run.slice(i, i + size));

/** An encoding: how an echo is written, and the forms of which none may be left (each 8-window of the run, so encoded). */
interface Encoding {
  write: (run: string) => string;
  forms: (run: string) => string[];
}
const each = (write: (s: string) => string): Encoding => ({
  write,
  forms: (run) => windows(run, 8).map(write),
});
const split = (mark: string) => each((s) => [...s].join(mark));

const ENCODINGS: Record<string, Encoding> = {
  'HTML hex entities (&#x73;)': each((s) =>
    codes(s)
      .map((c) => `&#x${c.toString(16)};`)
      .join(''),
  ),
  'HTML hex entities, upper-case (&#X6B;)': each((s) =>
    codes(s)
      .map((c) => `&#X${c.toString(16).toUpperCase()};`)
      .join(''),
  ),
  'HTML decimal entities (&#115;)': each((s) =>
    codes(s)
      .map((c) => `&#${c};`)
      .join(''),
  ),
  'octal escapes (\\163)': each((s) =>
    codes(s)
      .map((c) => `\\${c.toString(8).padStart(3, '0')}`)
      .join(''),
  ),
  '0x list (0x73, 0x6b)': each((s) =>
    pairs(s)
      .map((p) => `0x${p}`)
      .join(', '),
  ),
  '0x list without spaces (0x73,0x6B)': each((s) =>
    pairs(s)
      .map((p) => `0x${p.toUpperCase()}`)
      .join(','),
  ),
  'split by U+200B (zero-width space)': split('\u200b'),
  'split by U+200C (zero-width non-joiner)': split('\u200c'),
  'split by U+200D (zero-width joiner)': split('\u200d'),
  'split by U+FEFF (zero-width no-break space)': split('\ufeff'),
  'split by U+00AD (soft hyphen)': split('\u00ad'),
  'base64 of the hex': {
    write: (s) => Buffer.from(hex(s)).toString('base64'),
    // 3 hex characters (1.5 bytes of the run) make 4 base64 characters: 6 of them, aligned, make 8.
    forms: (run) =>
      windows(hex(run), 6)
        .filter((_, i) => i % 3 === 0)
        .map((w) => Buffer.from(w).toString('base64')),
  },
  'base64 of the upper-case hex': {
    write: (s) => Buffer.from(hex(s).toUpperCase()).toString('base64'),
    forms: (run) =>
      windows(hex(run).toUpperCase(), 6)
        .filter((_, i) => i % 3 === 0)
        .map((w) => Buffer.from(w).toString('base64')),
  },
  'char-code array ([115, 107, 95])': each((s) => `[${codes(s).join(', ')}]`),
  'char-code array without spaces ([115,107,95])': each((s) => `[${codes(s).join(',')}]`),
};

const SOURCES: Record<string, string> = {
  'the private key, whole': PRIVATE,
  'the private key, a run of 12 of its characters': PRIVATE.slice(5, 17),
  'the webhook secret, whole': SECRET,
  'the webhook secret, a run of 10 of its characters': SECRET.slice(9, 19),
};

/**
 * Where an echo lands, and what comes out of there: free text, an error answer's message (JSON), a
 * success answer's `details` (JSON), an HTML page. Each gives the texts to check.
 */
const PLACEMENTS: Record<string, (echo: string) => string[]> = {
  'free text (an error message)': (echo) => [redactor.text(`before ${echo} after`)],
  "an error answer's message": (echo) => {
    const answer = redactor.answer(JSON.stringify({ message: `before ${echo} after` }), parseJson, 400);
    return [answer.body, (answer.json as { message: string }).message];
  },
  "a success answer's details": (echo) => {
    const raw = JSON.stringify({ result: { status: 'SUCCESS', details: { note: `before ${echo} after` } } });
    const answer = redactor.answer(raw, parseJson, 200);
    return [answer.body, (answer.json as { result: { details: { note: string } } }).result.details.note];
  },
  'an HTML page': (echo) => [redactor.answer(`<p>before ${echo} after</p>`, parseJson, 502).body],
};

const cases = Object.entries(ENCODINGS).flatMap(([encodingName, encoding]) =>
  Object.entries(SOURCES).flatMap(([sourceName, run]) =>
    Object.entries(PLACEMENTS).map(([placementName, place]) => ({
      name: `${encodingName} | ${sourceName} | ${placementName}`,
      encoding,
      run,
      place,
    })),
  ),
);

describe('secrets in the encodings the redactor decodes, in every placement', () => {
  it('covers every encoding x secret x placement', () => {
    expect(cases).toHaveLength(15 * 4 * 4);
  });

  it.each(cases)('$name', ({ encoding, run, place }) => {
    const echo = encoding.write(run);
    expect(redactor.has(echo)).toBe(true);
    for (const out of place(echo)) {
      expect(out).toContain(REDACTED);
      // The text around the echo is kept: what was cut is the echo's own span.
      expect(out).toMatch(/before .*\[redacted\].* after/s);
      const rest = out.slice(out.indexOf('before ') + 7, out.lastIndexOf(' after')).replace(REDACTED, '');
      expect(rest.length).toBeLessThanOrEqual(6);
      for (const form of encoding.forms(run)) expect(out.toLowerCase()).not.toContain(form.toLowerCase());
      expect(redactor.has(out)).toBe(false);
    }
  });

  it('leaves ordinary entities, octal escapes, hex lists, number lists and zero-width characters alone', () => {
    const text =
      'caf&#xe9; &amp; &#169; 2024, path C:\\101\\102, bytes 0x01, 0x02, 0xff, ids [1, 2, 3, 400, 5000], ' +
      'word\u200bjoiner\u00adsoft, base64 MTIzNDU2Nzg5MA==';
    expect(redactor.text(text)).toBe(text);
    expect(redactor.has(text)).toBe(false);
  });
});
