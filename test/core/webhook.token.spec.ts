import { describe, expect, it } from '@jest/globals';
import { trackingHash, WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import { parseWebhook } from '../../lib/core/webhook/webhook.payload.js';

const SECRET = 'a-webhook-secret-of-at-least-32-chars!';

describe('webhook tokens', () => {
  const signer = new WebhookTokenSigner(SECRET);

  it('carries the amount and a hash of the tracking id, signed', () => {
    const { token, claims } = signer.issue('12500', 'order-7', 60_000);
    expect(signer.verify(token)).toStrictEqual(claims);
    expect(claims.amount).toBe('12500');
    expect(claims.trackingHash).toBe(trackingHash('order-7'));
    expect(trackingHash(undefined)).toBe('');
    expect(token).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('refuses a token whose amount, tracking hash or expiry was changed, or signed with another secret', () => {
    const { token } = signer.issue('12500', 'order-7', 60_000);
    const parts = token.split('.');
    const tampered = [
      [parts[0], parts[1], '1', parts[3], parts[4]],
      [parts[0], parts[1], parts[2], trackingHash('order-8'), parts[4]],
      [parts[0], 'zzzzzzz', parts[2], parts[3], parts[4]],
    ].map((p) => p.join('.'));
    for (const t of tampered) expect(signer.verify(t)).toBeUndefined();
    expect(new WebhookTokenSigner(`${SECRET}-other`).verify(token)).toBeUndefined();
    expect(signer.verify(`${token}x`)).toBeUndefined();
    expect(signer.verify(42)).toBeUndefined();
  });

  it('refuses an expired token', () => {
    const { token, claims } = signer.issue('100', undefined, 1000);
    expect(signer.verify(token, claims.expiresAt - 1)).toBeDefined();
    expect(signer.verify(token, claims.expiresAt)).toBeUndefined();
  });

  it('puts the token in the path and keeps the public URL query', () => {
    expect(WebhookTokenSigner.urlWithToken('https://shop.example/api/hook/', 'TOK')).toBe(
      'https://shop.example/api/hook/TOK',
    );
    expect(WebhookTokenSigner.urlWithToken('https://shop.example/hook?tenant=a b', 'TOK')).toBe(
      'https://shop.example/hook/TOK?tenant=a%20b',
    );
  });
});

describe('webhook payloads', () => {
  const parse = (query: unknown, body: unknown, pathToken?: string) => parseWebhook({ query, body, pathToken }, 65_536);

  it.each([
    ['JSON body', {}, { payment_id: 'p1' }],
    ['form body as text', {}, 'payment_id=p1&status=SUCCESS'],
    ['JSON as text/plain', {}, '{"payment_id":"p1"}'],
    ['raw Buffer', {}, Buffer.from('{"paymentId":"p1"}')],
    ['query', { payment_id: 'p1' }, undefined],
    ['data.payment_id', {}, { data: { payment_id: 'p1' } }],
    ['payment_ref', {}, { payment_ref: 'p1' }],
    ['result.payment_id', {}, { result: { payment_id: 'p1' } }],
    ['id alone', {}, { id: 'p1' }],
    ['payment_id beside an unrelated id', {}, { payment_id: 'p1', id: 'evt_99' }],
    ['a repeated equal parameter', { payment_id: ['p1', 'p1'] }, undefined],
  ])('finds the payment id in a %s', (_name, query, body) => {
    const parsed = parse(query, body);
    expect(parsed).toMatchObject({ ok: true, paymentId: 'p1' });
  });

  it('splits a naive append (a second "?") back into parameters', () => {
    const parsed = parse({ tenant: 'a?payment_id=p9' }, undefined);
    expect(parsed).toMatchObject({ ok: true, paymentId: 'p9', query: { tenant: 'a', payment_id: 'p9' } });
    const legacy = parse({ webhook_token: 'TOKEN?payment_id=p3' }, undefined);
    expect(legacy).toMatchObject({ ok: true, token: 'TOKEN', paymentId: 'p3' });
  });

  it('prefers the path token to a query one', () => {
    expect(parse({ webhook_token: 'Q' }, undefined, 'P')).toMatchObject({ ok: true, token: 'P' });
  });

  it('refuses ambiguous or malformed ids and oversized bodies, with reasons', () => {
    expect(parse({ payment_id: ['a', 'b'] }, undefined)).toMatchObject({ ok: false });
    expect(parse({}, { payment_id: 'a\nb' })).toMatchObject({ ok: false });
    expect(parse({}, { payment_id: 'x'.repeat(300) })).toMatchObject({ ok: false });
    // An id that could never be verified (it would change the verify request's path) is malformed,
    // not a 503 the service would deliver again for ever (found by the webhook property, seed 235732840).
    for (const id of ['{"\\":""}', '..', 'a/b', 'a#b', 'a%2fb'])
      expect(parse({ payment_id: id }, undefined)).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/^payment id must not/),
      });
    expect(parse({}, 'not json and not a form')).toMatchObject({
      ok: false,
      reason: 'body is neither JSON nor form data',
    });
    expect(parseWebhook({ query: {}, body: { big: 'x'.repeat(100) } }, 50)).toMatchObject({
      ok: false,
      reason: 'payload too large',
    });
  });
});

describe('webhook token size', () => {
  it("stays under Fastify's default 100-character path parameter limit at the largest amount and any tracking id", () => {
    const { token } = new WebhookTokenSigner(SECRET).issue('9'.repeat(15), 'x'.repeat(256), 10 * 365 * 86_400_000);
    expect(token.length).toBeLessThanOrEqual(86);
  });
});
