import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { parseWebhook } from '../../lib/core/webhook/webhook.payload.js';
import { safeEqual, trackingHash, WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';

// Webhook tokens (the last path segment of `<publicUrl>/<token>`) carry the amount and a hash of
// the tracking id, signed. These properties pin them down for any input: a token verifies to
// exactly what it was issued for, any change refuses it, and whatever the service appends to the
// URL leaves the token intact.

const SECRET = 'whsec_tokens_property_0123456789abcdef';
const RUNS = Number(process.env.PROPERTY_RUNS ?? 1500);

const amount = fc.oneof(
  fc.stringMatching(/^[1-9][0-9]{0,14}$/),
  fc.integer({ min: 1, max: 999_999_999_999_999 }).map(String),
); // amounts: at most 15 digits (MAX_AMOUNT_DIGITS)
const tracking = fc.option(
  fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 256 }), fc.constantFrom('order-42', 'ü€😀', ' ')),
  { nil: undefined },
);
const publicUrl = fc.oneof(
  fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: false }),
  fc.constantFrom(
    'https://shop.example',
    'https://shop.example/',
    'https://shop.example/api/payments/webhook?a=1&b=x%20y+z',
    'https://shop.example/hook///',
    'https://shop.example/hook?debug',
    'https://shop.example/hook?',
    'https://shop.example/hook??=',
    'http://127.0.0.1:3000/payments/webhook',
    'https://SHOP.example:443/a b/ü?q=ü',
  ),
);

describe('webhook tokens', () => {
  const signer = new WebhookTokenSigner(SECRET);
  const other = new WebhookTokenSigner(`${SECRET}-other`);

  it('a token verifies to exactly the claims it was issued with, and only under its own secret, until it expires', () => {
    fc.assert(
      fc.property(amount, tracking, fc.integer({ min: 1_000, max: 30 * 86_400_000 }), (a, t, ttl) => {
        const { token, claims } = signer.issue(a, t, ttl);
        expect(signer.verify(token)).toStrictEqual(claims);
        expect([claims.amount, claims.trackingHash]).toEqual([a, trackingHash(t)]);
        expect(claims.trackingHash === trackingHash(`${t ?? ''}x`)).toBe(false);
        expect(other.verify(token)).toBeUndefined();
        expect(signer.verify(token, claims.expiresAt - 1)).toStrictEqual(claims);
        expect(signer.verify(token, claims.expiresAt)).toBeUndefined();
        // Only characters a URL path never escapes.
        expect(token).toMatch(/^[A-Za-z0-9._-]+$/);
        expect(encodeURIComponent(token)).toBe(token);
      }),
      { numRuns: RUNS },
    );
  });

  it('changing any one character of a token refuses it', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(amount, tracking, fc.nat(), fc.constantFrom(...alphabet), (a, t, at, replacement) => {
        const { token } = signer.issue(a, t, 60_000);
        const i = at % token.length;
        fc.pre(token[i] !== replacement);
        const changed = `${token.slice(0, i)}${replacement}${token.slice(i + 1)}`;
        expect(signer.verify(changed)).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('the token is the last path segment of the URL, whatever the public URL and whatever the service appends', () => {
    fc.assert(
      fc.property(
        publicUrl,
        amount,
        tracking,
        fc.constantFrom('none', 'naive', 'proper', 'ampersand'),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
        (url, a, t, append, paymentId) => {
          const { token } = signer.issue(a, t, 60_000);
          const webhook = WebhookTokenSigner.urlWithToken(url, token);
          const base = new URL(url);
          const built = new URL(webhook);
          // The public URL's origin and query are kept; the token is appended as one path segment.
          expect([built.origin, built.search]).toEqual([base.origin, base.search]);
          expect(built.pathname).toBe(`${base.pathname.replace(/\/+$/, '')}/${token}`);
          // What the service may do to it: nothing, `?payment_id=` appended naively, properly, or
          // `&payment_id=` whether or not there is a query (then it lands in the path segment).
          const delivered =
            append === 'none'
              ? webhook
              : append === 'naive'
                ? `${webhook}?payment_id=${paymentId}`
                : append === 'ampersand'
                  ? `${webhook}&payment_id=${paymentId}`
                  : `${webhook}${webhook.includes('?') ? '&' : '?'}payment_id=${paymentId}`;
          const received = new URL(delivered);
          const segment = received.pathname.split('/').at(-1) as string;
          expect(segment).toBe(
            append === 'ampersand' && !webhook.includes('?') ? `${token}&payment_id=${paymentId}` : token,
          );
          const parsed = parseWebhook(
            { query: Object.fromEntries(received.searchParams), body: undefined, pathToken: segment },
            65_536,
          );
          expect(parsed).toMatchObject({ ok: true, token });
          // The appended id is found, also when a naive append hid it in another parameter (`?a=b?payment_id=`, `?flag?payment_id=`).
          if (append !== 'none' && !base.searchParams.has('payment_id')) expect(parsed).toMatchObject({ paymentId });
          expect(signer.verify(token)).toBeDefined();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("urlMaker, the public URL parsed once, builds urlWithToken's URL for every token", () => {
    const anyUrl = fc.oneof(
      publicUrl,
      fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }),
      fc.constantFrom('https://shop.example/hook#', 'https://shop.example/a/%2e%2E/b?#x', 'https://u:p@shop.example/h'),
    );
    fc.assert(
      fc.property(anyUrl, amount, tracking, (url, a, t) => {
        const make = WebhookTokenSigner.urlMaker(url);
        for (const token of [signer.issue(a, t, 60_000).token, signer.issue(a, undefined, 1).token])
          expect(make(token)).toBe(WebhookTokenSigner.urlWithToken(url, token));
      }),
      { numRuns: RUNS },
    );
  });

  it('nonces are unique across many tokens', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const { token, claims } = signer.issue('100', undefined, 60_000);
      expect(token.startsWith(`${claims.nonce}.`)).toBe(true);
      seen.add(claims.nonce);
    }
    expect(seen.size).toBe(20_000);
  });

  it('safeEqual is string equality', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(safeEqual(a, b)).toBe(a === b);
        expect(safeEqual(a, a)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
