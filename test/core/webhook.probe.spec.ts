import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { MemoryPaymentsStore, PaymentsClient, webhookProbeUrl, type PaymentsStore } from '../../lib/core/index.js';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import { quietLogger } from '../support/outcome-kit.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const SECRET = 'a-webhook-secret-of-at-least-32-chars!';

describe('webhook probe tokens', () => {
  const signer = new WebhookTokenSigner(SECRET);

  it('verify with the secret that signed them, under the path-token limits', () => {
    const probe = signer.issueProbe();
    expect(signer.verifyProbe(probe)).toBe(true);
    expect(probe).toMatch(/^probe\.[0-9a-z]+\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}$/);
    expect(probe.length).toBeLessThan(100);
    expect(new WebhookTokenSigner(`${SECRET}-other`).verifyProbe(probe)).toBe(false);
  });

  it('refuse a tampered, expired or malformed probe', () => {
    const probe = signer.issueProbe(1000);
    const [, expiry, nonce, mac] = probe.split('.');
    expect(signer.verifyProbe(`probe.${(parseInt(expiry, 36) + 3600).toString(36)}.${nonce}.${mac}`)).toBe(false);
    expect(signer.verifyProbe(`probe.${expiry}.${'A'.repeat(16)}.${mac}`)).toBe(false);
    expect(signer.verifyProbe(probe, parseInt(expiry, 36) * 1000)).toBe(false);
    expect(signer.verifyProbe(probe, parseInt(expiry, 36) * 1000 - 1)).toBe(true);
    for (const bad of [`${probe}x`, probe.slice(1), 42, undefined, '']) expect(signer.verifyProbe(bad)).toBe(false);
  });

  it('are never payment tokens, and payment tokens are never probes (separate HMAC domains)', () => {
    const { token } = signer.issue('12500', 'order-7', 60_000);
    expect(signer.verifyProbe(token)).toBe(false);
    expect(signer.verify(signer.issueProbe())).toBeUndefined();
    // A MAC of the probe's body under the payment tokens' domain does not make a probe; under the probe domain it does.
    const body = signer.issueProbe().replace(/\.[^.]+$/, '');
    const mac = (domain: string) =>
      createHmac('sha256', SECRET)
        .update(domain + body)
        .digest()
        .subarray(0, 16)
        .toString('base64url');
    expect(signer.verifyProbe(`${body}.${mac('nestjs-payments:webhook:v2:')}`)).toBe(false);
    expect(signer.verifyProbe(`${body}.${mac('nestjs-payments:webhook-probe:v1:')}`)).toBe(true);
  });

  it('webhookProbeUrl puts the probe in the path of the public URL, keeping its query', () => {
    const url = new URL(webhookProbeUrl('https://shop.example/api/payments/webhook?store=7', SECRET));
    expect(url.pathname).toMatch(/^\/api\/payments\/webhook\/probe\.[^/]+$/);
    expect(url.search).toBe('?store=7');
    expect(signer.verifyProbe(url.pathname.split('/').at(-1))).toBe(true);
  });
});

describe('WebhookProcessor and probes', () => {
  /** A store every method of which throws: a probe must not touch it. */
  function untouchableStore(touched: string[]): PaymentsStore {
    const real = new MemoryPaymentsStore();
    return new Proxy(real, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function' || key === 'close') return value;
        return () => {
          touched.push(String(key));
          throw new Error(`store.${String(key)} called`);
        };
      },
    });
  }

  function client(touched: string[]): PaymentsClient {
    return new PaymentsClient({
      publicKey: 'pk',
      privateKey: 'sk',
      // Nothing listens there: a verify call would fail the delivery with a 503.
      baseUrl: 'http://127.0.0.1:9',
      webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
      reconciliation: { enabled: false },
      telemetry: false,
      store: untouchableStore(touched),
      logger: quietLogger(),
    });
  }

  it('answers a valid probe 200 { received, probe } without the store, the service or handlers', async () => {
    const touched: string[] = [];
    const c = client(touched);
    let handled = 0;
    c.setHandlers(outcomeHandlers(async () => void handled++));
    const probe = new WebhookTokenSigner(SECRET).issueProbe();
    for (const request of [
      { query: {}, body: {}, pathToken: probe },
      { query: { payment_id: 'pay_1' }, body: '{"status":"SUCCESS"}', pathToken: probe },
      { query: { webhook_token: probe }, body: undefined },
    ]) {
      expect(await c.webhooks.handle(request)).toEqual({ status: 200, body: { received: true, probe: true } });
    }
    expect({ touched, handled }).toEqual({ touched: [], handled: 0 });
    await c.close();
  });

  it('refuses a probe signed with another secret (401), and a malformed body comes first (400)', async () => {
    const c = client([]);
    const foreign = new WebhookTokenSigner(`${SECRET}-other`).issueProbe();
    expect(await c.webhooks.handle({ query: {}, body: {}, pathToken: foreign })).toMatchObject({
      status: 401,
      body: { received: false },
    });
    const probe = new WebhookTokenSigner(SECRET).issueProbe();
    expect(await c.webhooks.handle({ query: {}, body: 'not & a = form', pathToken: probe })).toMatchObject({
      status: 400,
    });
    await c.close();
  });
});
