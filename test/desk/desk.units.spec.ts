import { describe, expect, it } from '@jest/globals';
import { DeskFormTokens } from '../../lib/desk/desk.handler.js';
import { escapeHtml, html } from '../../lib/desk/desk.views.js';
import { cleanDeep, cleanText, tokenNonceOf } from '../../lib/desk/desk.handler.js';
import { needOf } from '../../lib/desk/desk.reviews.js';
import { needsPerson } from '../../lib/desk/desk.data.js';
import { resolveDeskOptions } from '../../lib/desk/desk.options.js';
import { quietLogger } from '../support/outcome-kit.js';
import type { OutcomeRecord } from '../../lib/store/index.js';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';

describe('the desk’s HTML', () => {
  it('escapes every interpolated value, in text and in attributes, and keeps markup it built', () => {
    const hostile = `"><script>alert('x')</script>&\``;
    expect(escapeHtml(hostile)).toBe('&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#96;');
    const inner = html`<b>${hostile}</b>`;
    expect(html`<a title="${hostile}">${inner}${[hostile, 1, undefined, null, false]}</a>`.value).toBe(
      `<a title="${escapeHtml(hostile)}"><b>${escapeHtml(hostile)}</b>${escapeHtml(hostile)}1</a>`,
    );
  });
});

describe('the desk’s form tokens', () => {
  const key = Buffer.alloc(32, 7);
  const now = Date.UTC(2026, 10, 28, 12);

  it('accepts a token for the person it was issued to, within its lifetime only', () => {
    const tokens = new DeskFormTokens(key, 3_600_000);
    const token = tokens.issue('alice', now);
    expect(tokens.check(token, 'alice', now + 3_599_000)).toBe(true);
    expect(tokens.check(token, 'alice', now + 3_601_000)).toBe(false);
    expect(tokens.check(token, 'bob', now)).toBe(false);
    expect(tokens.check(`${token}x`, 'alice', now)).toBe(false);
    expect(tokens.check(`${token}.x`, 'alice', now)).toBe(false);
    expect(tokens.check(undefined, 'alice', now)).toBe(false);
    expect(tokens.check(['a'], 'alice', now)).toBe(false);
  });

  it('refuses a token of another desk (another key), and shows nothing of its key', () => {
    const token = new DeskFormTokens(key, 3_600_000).issue('alice', now);
    expect(new DeskFormTokens(Buffer.alloc(32, 8), 3_600_000).check(token, 'alice', now)).toBe(false);
    expect(JSON.stringify(new DeskFormTokens(key, 1))).toBe('{}');
  });

  it('refuses a token dated in the future (a clock cannot be pushed ahead to stretch a token)', () => {
    const tokens = new DeskFormTokens(key, 3_600_000);
    expect(tokens.check(tokens.issue('alice', now + 600_000), 'alice', now)).toBe(false);
  });
});

describe('what a page may show', () => {
  const signer = new WebhookTokenSigner('whsec_units_0123456789abcdef0123456789abcd');
  const token = signer.issue('12500', 'order-7', 3_600_000).token;
  const noTracking = signer.issue('12500', undefined, 3_600_000).token;
  const probe = signer.issueProbe(60_000);
  const secrets = (text: string) => text.replaceAll('sk_live_secret', '[redacted]');

  it('cuts the webhook tokens the core signs, and the secrets the client names, out of any text', () => {
    for (const t of [token, noTracking, probe]) {
      expect(cleanText(`before ${t} after`, secrets)).toBe('before [redacted] after');
      expect(cleanText(`/payments/webhook/${t}?x=1`, secrets)).toBe('/payments/webhook/[redacted]?x=1');
    }
    expect(cleanText('key sk_live_secret here', secrets)).toBe('key [redacted] here');
    expect(cleanText('pay_0af106a68b107229ba2a5dfd 2026-11-28T01:02:57.354Z 12.500', secrets)).toBe(
      'pay_0af106a68b107229ba2a5dfd 2026-11-28T01:02:57.354Z 12.500',
    );
  });

  it('finds the nonce of a webhook token pasted alone or in its URL, and a nonce alone only when asked', () => {
    const nonce = token.split('.')[0];
    expect(tokenNonceOf(token, false)).toBe(nonce);
    expect(tokenNonceOf(`https://shop.example/payments/webhook/${token}?x=1`, false)).toBe(nonce);
    expect(tokenNonceOf(nonce, false)).toBeUndefined();
    expect(tokenNonceOf(nonce, true)).toBe(nonce);
    expect(tokenNonceOf('order 12', true)).toBeUndefined();
    expect(tokenNonceOf('desk-review:a:b', true)).toBeUndefined();
  });

  it('cleans every string of a record, at any depth, and leaves other values', () => {
    expect(
      cleanDeep({ a: token, b: [1, { c: `x ${token}` }], d: true, e: undefined }, (t) => cleanText(t, secrets)),
    ).toEqual({
      a: '[redacted]',
      b: [1, { c: 'x [redacted]' }],
      d: true,
      e: undefined,
    });
  });
});

describe('what a review is of', () => {
  const base: OutcomeRecord = {
    paymentId: 'p1',
    outcome: 'confirmed',
    status: 'SUCCESS',
    source: 'webhook',
    handlers: 'failed',
    attempts: 2,
    updatedAt: '2026-11-28T10:00:00.000Z',
  };
  it.each<[string, Partial<OutcomeRecord>, string | undefined]>([
    ['handlers failing', {}, 'confirmed/failed/-/2'],
    ['a new failure (one more attempt)', { attempts: 3 }, 'confirmed/failed/-/3'],
    ['settled: nothing to review', { handlers: 'succeeded' }, undefined],
    ['a mismatch', { outcome: 'mismatch', handlers: 'none' }, 'mismatch/none/-/2'],
    ['a duplicate to refund', { outcome: 'duplicate', handlers: 'none' }, 'duplicate/none/-/2'],
    [
      'a duplicate whose refund failed',
      { outcome: 'duplicate', handlers: 'none', refundState: 'failed' },
      'duplicate/none/failed/2',
    ],
    ['a refunded duplicate', { outcome: 'duplicate', handlers: 'none', refundState: 'refunded' }, undefined],
    ['a failed payment', { outcome: 'failed', handlers: 'none' }, undefined],
  ])('%s', (_name, change, need) => {
    expect(needOf({ ...base, ...change }, needsPerson)).toBe(need);
  });
});

describe('the review retention option', () => {
  const random = (n: number) => Buffer.alloc(n, 1);
  it('defaults to 30 days, takes seconds, and names a wrong value', () => {
    expect(resolveDeskOptions({}, random, quietLogger()).reviewRetentionMs).toBe(30 * 24 * 3600 * 1000);
    expect(resolveDeskOptions({ reviewRetentionSecs: 60 }, random, quietLogger()).reviewRetentionMs).toBe(60_000);
    expect(() => resolveDeskOptions({ reviewRetentionSecs: 0 }, random, quietLogger())).toThrow(
      'nestjs-payments desk: reviewRetentionSecs must be a positive integer',
    );
  });
});
