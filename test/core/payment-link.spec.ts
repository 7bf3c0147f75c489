import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { httpUrl } from '../../lib/core/api/payment.rules.js';
import { isHttpLink } from '../../lib/core/api/wire.mapper.js';

// The answer's link check takes a short cut for the common shape: it must agree with the full rule
// (httpUrl: class-validator's isURL, no credentials) on every string, accepting nothing it refuses.
const agrees = (link: string) => expect([link, isHttpLink(link)]).toEqual([link, httpUrl(link) === undefined]);

describe('isHttpLink (the link of a generate answer)', () => {
  it.each([
    'https://checkout.example/shop/pay_1',
    'http://localhost:3000/ok',
    'HTTP://SHOP.EXAMPLE/OK',
    'https://shop.example/ok?x=1&y=%20#frag',
    'https://xn--80ak6aa92e.com/',
    'https://a',
    'http://127.0.0.1:8080/x',
    'http://999.1.1.1/x',
    'http://1.2.3/x',
    'https://shop.example:0/x',
    'https://shop.example:65535/x',
    'https://shop.example:65536/x',
    'https://shop.example:99999/x',
    'https://user:pass@shop.example/x',
    'https://shop.example/x@y',
    'https://-a.example/',
    'https://a-.example/',
    `https://${'a'.repeat(63)}.example/`,
    `https://${'a'.repeat(64)}.example/`,
    `https://${'abcdefghi.'.repeat(26)}example/`,
    `https://shop.example/${'x'.repeat(2100)}`,
    'https://shop_1.example/',
    'https://shop.example./',
    'https://shop..example/',
    'javascript:alert(1)',
    'ftp://files.example/x',
    '//evil.example/x',
    'http://',
    'https://a b.example',
    'https://exa\nmple.com',
    'http://a.example\u0000.evil',
    'http://[::1]:3000/x',
    'https://shop.example/<script>',
  ])('%s', agrees);

  it('agrees with httpUrl on generated URLs and strings', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.webUrl({ withQueryParameters: true, withFragments: true }),
          fc.string(),
          fc.webUrl().map((u) => u.toUpperCase()),
        ),
        (link) => {
          // Never accepts what the full rule refuses.
          if (isHttpLink(link)) expect(httpUrl(link)).toBeUndefined();
          else expect(httpUrl(link)).toBeDefined();
        },
      ),
      { numRuns: 3000 },
    );
  });
});
