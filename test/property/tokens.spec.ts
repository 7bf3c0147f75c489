import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { safeEqual, WEBHOOK_TOKEN_PARAM, WebhookTokenSigner } from '../../lib/core/webhook.token.js';

// The token helpers were tuned for speed (pooled nonces, a cached URL template, one-shot hashes);
// these properties pin their behaviour to the straightforward definitions.

const SECRET = 'whsec_tokens_property_0123456789abcdef';

/** The reference: what the URL API gives. */
function referenceUrl(publicUrl: string, token: string): string {
  const url = new URL(publicUrl);
  url.searchParams.set(WEBHOOK_TOKEN_PARAM, token);
  return url.toString();
}

describe('webhook tokens', () => {
  it('urlWithToken gives exactly what URL.searchParams.set gives, for any public URL and token', () => {
    const signer = new WebhookTokenSigner(SECRET);
    const publicUrl = fc.oneof(
      fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }),
      fc.constantFrom('https://shop.example', 'https://shop.example/', 'https://shop.example/api/payments/webhook?a=1&b=x%20y+z#frag', `https://shop.example/hook?${WEBHOOK_TOKEN_PARAM}=old&x=1`, 'http://127.0.0.1:3000/payments/webhook', 'https://SHOP.example:443/a b/ü?q=ü'),
    );
    fc.assert(
      fc.property(publicUrl, fc.integer({ min: 0, max: 3 }), (url, uses) => {
        // The same URL again and again (the cached path) and other URLs in between.
        for (let i = 0; i <= uses; i++) {
          const { token } = signer.issue();
          expect(WebhookTokenSigner.urlWithToken(url, token)).toBe(referenceUrl(url, token));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('nonces are unique, well-formed and verify, across many pool refills', () => {
    const signer = new WebhookTokenSigner(SECRET);
    const other = new WebhookTokenSigner(`${SECRET}-other`);
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const { token, nonce } = signer.issue();
      expect(token).toMatch(/^[A-Za-z0-9_-]{24}\.[A-Za-z0-9_-]{43}$/);
      expect(token.startsWith(`${nonce}.`)).toBe(true);
      if (i % 97 === 0) {
        expect(signer.verify(token)).toBe(nonce);
        expect(other.verify(token)).toBeUndefined();
      }
      seen.add(nonce);
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
