// Webhook tokens: what they carry and how they are checked, the payloads that carry them, and the
// registration that minted them (tokens name it, and verify under the secret or a previous one).
import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { resolvePaymentsOptions } from '../../lib/core/client/payments.resolver.js';
import {
  registrationTag,
  tokenRegistrationVerdict,
  trackingHash,
  WebhookTokenSigner,
  type TokenRegistration,
} from '../../lib/core/webhook/webhook.token.js';
import { parseWebhook } from '../../lib/core/webhook/webhook.payload.js';
import { publicUrlMismatch } from '../../lib/core/webhook/webhook.processor.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { SecretRedactor } from '../../lib/core/api/secret.redactor.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

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

const REGISTRATION_SECRET = 'whsec_registration_tests_0123456789abcdef';
const OLD = 'whsec_previous_secret_0123456789abcdefghij';

/** A token as minted before tokens named their registration (no tag), signed with `secret`. */
function legacyToken(secret: string, amount: string, ttlMs = 60_000): string {
  const body = `${'n'.repeat(16)}.${Math.ceil((Date.now() + ttlMs) / 1000).toString(36)}.${amount}.`;
  const mac = createHmac('sha256', secret)
    .update(`nestjs-payments:webhook:v2:${body}`)
    .digest()
    .subarray(0, 16)
    .toString('base64url');
  return `${body}.${mac}`;
}

describe('tokenRegistrationVerdict', () => {
  it.each<[TokenRegistration, boolean, string]>([
    ['own', true, 'accept'],
    ['own', false, 'accept'],
    ['other', true, 'misrouted'],
    ['other', false, 'misrouted'],
    ['legacy', true, 'accept'],
    ['legacy', false, 'misrouted'],
  ])('a token %s, sole registration %s: %s', (registration, sole, verdict) => {
    expect(tokenRegistrationVerdict(registration, sole)).toBe(verdict);
  });
});

describe('registration tags', () => {
  it('differ between registrations, the default one included, and stay the same for one name', () => {
    const tags = [undefined, 'outlet', 'shop', 'default', '_'].map(registrationTag);
    expect(new Set(tags).size).toBe(tags.length);
    expect(registrationTag('outlet')).toBe(registrationTag('outlet'));
    expect(registrationTag('outlet')).toMatch(/^[A-Za-z0-9_-]{6}$/);
  });
});

describe('WebhookTokenSigner.check', () => {
  const shop = new WebhookTokenSigner(REGISTRATION_SECRET);
  const outlet = new WebhookTokenSigner(REGISTRATION_SECRET, { registration: 'outlet' });

  it("tells its own tokens from another registration's sharing the secret, and from legacy ones", () => {
    const own = shop.issue('100', 'order', 60_000);
    expect(shop.check(own.token)).toEqual({ kind: 'valid', claims: own.claims, registration: 'own' });
    expect(outlet.check(own.token)).toMatchObject({ kind: 'valid', registration: 'other' });
    expect(outlet.verify(own.token)).toBeUndefined();
    expect(shop.check(legacyToken(REGISTRATION_SECRET, '100'))).toMatchObject({
      kind: 'valid',
      registration: 'legacy',
    });
    expect(shop.check(legacyToken(`${REGISTRATION_SECRET}x`, '100'))).toEqual({ kind: 'invalid' });
  });

  it('verifies tokens of a previous secret until they expire, and mints with the current one only', () => {
    const before = new WebhookTokenSigner(OLD).issue('100', undefined, 60_000);
    const rotated = new WebhookTokenSigner(REGISTRATION_SECRET, { previousSecrets: [OLD] });
    expect(rotated.verify(before.token)).toEqual(before.claims);
    expect(rotated.verify(before.token, before.claims.expiresAt)).toBeUndefined();
    const after = rotated.issue('100', undefined, 60_000);
    expect(new WebhookTokenSigner(REGISTRATION_SECRET).verify(after.token)).toEqual(after.claims);
    expect(new WebhookTokenSigner(OLD).verify(after.token)).toBeUndefined();
    expect(rotated.verifyProbe(new WebhookTokenSigner(OLD).issueProbe())).toBe(true);
    expect(
      rotated.verify(
        new WebhookTokenSigner('whsec_neither_secret_0123456789abcdefgh').issue('100', undefined, 60_000).token,
      ),
    ).toBeUndefined();
  });
});

describe('webhook.previousSecrets validation', () => {
  const base = {
    publicKey: 'pk',
    privateKey: 'sk',
    baseUrl: 'https://pay.example',
    webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: REGISTRATION_SECRET },
  };
  it('checks each like the secret, never echoing one', () => {
    const short = 'too-short-a-secret';
    const build = () =>
      resolvePaymentsOptions({ ...base, webhook: { ...base.webhook, previousSecrets: [OLD, short] } });
    expect(build).toThrow('webhook.previousSecrets[1] (must be a string of at least 32 characters)');
    expect(build).not.toThrow(short);
    expect(() =>
      resolvePaymentsOptions({ ...base, webhook: { ...base.webhook, previousSecrets: OLD as never } }),
    ).toThrow('webhook.previousSecrets (must be a list of secrets)');
    expect(
      resolvePaymentsOptions({ ...base, webhook: { ...base.webhook, previousSecrets: [OLD] } }).webhook.previousSecrets,
    ).toEqual([OLD]);
  });
});

describe('previous secrets stay secret', () => {
  it('are cut out of what the service answers, and shown by no inspect of the client', async () => {
    const redactor = new SecretRedactor({
      privateKey: 'sk_private_value_0123',
      webhookSecret: REGISTRATION_SECRET,
      previousWebhookSecrets: [OLD],
    });
    expect(redactor.text(`echo: ${OLD} and ${Buffer.from(OLD).toString('base64')}`)).not.toContain(OLD);
    expect(redactor.text(`echo: ${Buffer.from(OLD).toString('base64')}`)).not.toContain(
      Buffer.from(OLD).toString('base64'),
    );
    const client = new PaymentsClient({
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'https://pay.example',
      reconciliation: { enabled: false },
      webhook: {
        publicUrl: 'https://shop.example/payments/webhook',
        secret: REGISTRATION_SECRET,
        previousSecrets: [OLD],
      },
    });
    try {
      expect(inspect(client, { depth: 20, showHidden: true })).not.toContain(OLD);
      expect(inspect(client.webhooks, { depth: 20, showHidden: true })).not.toContain(OLD);
    } finally {
      await client.close();
    }
  });
});

describe('publicUrlMismatch', () => {
  it.each<[string | undefined, string, boolean]>([
    ['https://shop.example/payments/webhook', '/payments/webhook', false],
    ['https://shop.example/payments/webhook/', 'payments/webhook', false],
    ['https://shop.example/api/payments/webhook', '/api/payments/webhook', false],
    ['https://shop.example/shop/api/payments/webhook', '/api/payments/webhook', false],
    ['https://shop.example/payments/webhook', '/api/payments/webhook', true],
    ['https://shop.example/payments/webhook', '/payments/outlet/webhook', true],
    ['https://shop.example/xpayments/webhook', '/payments/webhook', true],
    [undefined, '/payments/webhook', false],
  ])('%s served at %s: warns %s', (url, served, warns) => {
    expect(publicUrlMismatch(url, served, 'the default registration') !== undefined).toBe(warns);
  });
});

describe('a legacy token (no registration tag) on a route', () => {
  it('is handled when its registration is the only one, refused (421) otherwise', async () => {
    const sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
    const client = new PaymentsClient(
      sandbox.options({
        reconciliation: { enabled: false },
        webhook: { publicUrl: 'http://127.0.0.1:9/payments/webhook', secret: REGISTRATION_SECRET },
      }),
    );
    const handled: string[] = [];
    client.setHandlers(outcomeHandlers(async (_name, event) => void handled.push(event.paymentId)));
    try {
      const { paymentId } = await client.generatePayment({ amount: '2500' });
      await sandbox.completePayment(paymentId, { requireDelivery: false });
      const delivery = {
        query: {},
        body: { payment_id: paymentId },
        pathToken: legacyToken(REGISTRATION_SECRET, '2500'),
      };
      client.webhooks.setSoleRegistration(false);
      expect(await client.webhooks.handle(delivery)).toMatchObject({ status: 421 });
      expect(handled).toEqual([]);
      client.webhooks.setSoleRegistration(true);
      expect(await client.webhooks.handle(delivery)).toMatchObject({ status: 200 });
      expect(handled).toEqual([paymentId]);
    } finally {
      await client.close();
      await sandbox.close();
    }
  });
});
