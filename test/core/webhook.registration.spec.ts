// Tokens name the registration that minted them, and verify under the secret or a previous one.
import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { resolvePaymentsOptions } from '../../lib/core/client/payments.resolver.js';
import {
  registrationTag,
  tokenRegistrationVerdict,
  type TokenRegistration,
} from '../../lib/core/webhook/webhook.registration.js';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import { publicUrlMismatch } from '../../lib/core/webhook/webhook.processor.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { SecretRedactor } from '../../lib/core/api/secret.redactor.js';
import { inspect } from 'node:util';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const SECRET = 'whsec_registration_tests_0123456789abcdef';
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
  const shop = new WebhookTokenSigner(SECRET);
  const outlet = new WebhookTokenSigner(SECRET, { registration: 'outlet' });

  it("tells its own tokens from another registration's sharing the secret, and from legacy ones", () => {
    const own = shop.issue('100', 'order', 60_000);
    expect(shop.check(own.token)).toEqual({ kind: 'valid', claims: own.claims, registration: 'own' });
    expect(outlet.check(own.token)).toMatchObject({ kind: 'valid', registration: 'other' });
    expect(outlet.verify(own.token)).toBeUndefined();
    expect(shop.check(legacyToken(SECRET, '100'))).toMatchObject({ kind: 'valid', registration: 'legacy' });
    expect(shop.check(legacyToken(`${SECRET}x`, '100'))).toEqual({ kind: 'invalid' });
  });

  it('verifies tokens of a previous secret until they expire, and mints with the current one only', () => {
    const before = new WebhookTokenSigner(OLD).issue('100', undefined, 60_000);
    const rotated = new WebhookTokenSigner(SECRET, { previousSecrets: [OLD] });
    expect(rotated.verify(before.token)).toEqual(before.claims);
    expect(rotated.verify(before.token, before.claims.expiresAt)).toBeUndefined();
    const after = rotated.issue('100', undefined, 60_000);
    expect(new WebhookTokenSigner(SECRET).verify(after.token)).toEqual(after.claims);
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
    webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
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
      webhookSecret: SECRET,
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
      webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET, previousSecrets: [OLD] },
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
        webhook: { publicUrl: 'http://127.0.0.1:9/payments/webhook', secret: SECRET },
      }),
    );
    const handled: string[] = [];
    client.setHandlers(outcomeHandlers(async (_name, event) => void handled.push(event.paymentId)));
    try {
      const { paymentId } = await client.generatePayment({ amount: '2500' });
      await sandbox.completePayment(paymentId, { requireDelivery: false });
      const delivery = { query: {}, body: { payment_id: paymentId }, pathToken: legacyToken(SECRET, '2500') };
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
