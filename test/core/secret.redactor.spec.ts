import { describe, expect, it } from '@jest/globals';
import { parseJson } from '../../lib/core/api/wire.mapper.js';
import { REDACTED, SecretRedactor } from '../../lib/core/api/secret.redactor.js';

const PRIVATE = 'sk_test_0123456789abcdefXYZ';
const SECRET = 'whsec_0123456789abcdef0123456789abcdef';
const redactor = new SecretRedactor({ privateKey: PRIVATE, publicKey: 'pk_test', webhookSecret: SECRET });
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('SecretRedactor', () => {
  it.each([
    ['the private key', PRIVATE],
    ['the webhook secret', SECRET],
    ['the private key upper-cased', PRIVATE.toUpperCase()],
    ['the webhook secret in mixed case', SECRET.replace(/[a-f]/g, (c) => c.toUpperCase())],
    ['base64 of public:private', b64(`pk_test:${PRIVATE}`)],
    ['base64url of the webhook secret', Buffer.from(SECRET).toString('base64url')],
    ['the URL-encoded base64 of public:private', encodeURIComponent(b64(`pk_test:${PRIVATE}`))],
    ['the private key URL-encoded', encodeURIComponent(PRIVATE)],
    ['the webhook secret \\u-escaped', SECRET.replace(/_/g, '\\u005f')],
  ])('cuts out %s', (_name, form) => {
    const text = `before ${form} after`;
    expect(redactor.text(text)).toBe(`before ${REDACTED} after`);
    expect(redactor.has(text)).toBe(true);
  });

  it.each([0, 1, 2, 3, 4, 5])('cuts the key out of base64 of a longer text, %i bytes before it', (before) => {
    const encoded = b64(`${'x'.repeat(before)}${PRIVATE} and more`);
    const out = redactor.text(`auth=${encoded}`);
    expect(out).toContain(REDACTED);
    // Whatever is left decodes to no more than two bytes of the key on either side.
    expect(Buffer.from(out.replace(/^auth=|\[redacted\]/g, ''), 'base64').toString('latin1')).not.toContain(
      PRIVATE.slice(2, -2),
    );
  });

  it('passes a clean answer on as it came: parsed once, not copied', () => {
    const raw = '{"success":true,"result":{"status":"SUCCESS","amount":900,"link":"https:\\/\\/pay.example\\/x"}}';
    const parsed: unknown[] = [];
    const answer = redactor.answer(raw, (text) => {
      const value = parseJson(text);
      parsed.push(value);
      return value;
    });
    expect(answer.body).toBe(raw);
    expect(parsed).toHaveLength(1);
    expect(answer.json).toBe(parsed[0]);
  });

  it('walks a JSON answer whose escapes could spell a secret, and re-serialises it', () => {
    const hidden = PRIVATE.replace(/_/g, '\\u005F');
    const raw = `{"result":{"status":400,"message":"bad key ${hidden}"}}`;
    const answer = redactor.answer(raw, parseJson);
    expect(answer.json).toEqual({ result: { status: 400, message: `bad key ${REDACTED}` } });
    expect(answer.body).toBe(JSON.stringify(answer.json));
  });

  it('cuts a run of 8 characters out of an error answer and out of free text, never out of the values a success answer gives the plugin', () => {
    const keyed = new SecretRedactor({ privateKey: 'sk_budget_private', publicKey: 'pk_budget' });
    const success = '{"result":{"payment_id":"pay_budget_1","details":{"note":"for sk_budget_"}}}';
    const cleaned = keyed.answer(success, parseJson, 200);
    expect(cleaned.json).toEqual({ result: { payment_id: 'pay_budget_1', details: { note: `for ${REDACTED}` } } });
    expect(cleaned.body).toBe(JSON.stringify(cleaned.json));
    const failure = keyed.answer('{"message":"no pay_budget_1"}', parseJson, 400);
    expect(failure.json).toEqual({ message: `no pay${REDACTED}1` });
    expect(keyed.answer('<p>key k_budget_priv</p>', parseJson, 200).body).toBe(`<p>key ${REDACTED}</p>`);
  });

  it('leaves short secrets and ordinary text alone', () => {
    const none = new SecretRedactor('abc');
    expect(none.text('abc abc')).toBe('abc abc');
    expect(redactor.text('nothing secret here, sk_test and whsec_ prefixes only')).toBe(
      'nothing secret here, sk_test and whsec_ prefixes only',
    );
  });
});
