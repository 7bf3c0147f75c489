// Express: the router learns its mount path from the first request and warns once when
// webhook.publicUrl does not lead there; a client with webhook.previousSecrets takes the tokens
// of the secret it rotated from.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentConfirmedEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

const OLD = 'whsec_express_secret_before_rotation_0001';
const NEW = 'whsec_express_secret_after_rotation_00002';

let sandbox: PaymentsSandbox;
beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});
afterAll(async () => {
  await sandbox.close();
});

async function serve(mount: string, publicPath: string, secret: string, previousSecrets?: string[]) {
  const warnings: string[] = [];
  const confirmed: string[] = [];
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client: PaymentsClient = createPaymentsClient({
    ...sandbox.options(),
    reconciliation: { enabled: false },
    logger: { log() {}, error() {}, warn: (m: string) => void warnings.push(m) },
    webhook: { publicUrl: `${base}${publicPath}`, secret, previousSecrets },
  });
  app.use(
    mount,
    createWebhookRouter({ client, onPaymentConfirmed: (e: PaymentConfirmedEvent) => void confirmed.push(e.paymentId) }),
  );
  const close = async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return { client, base, warnings, confirmed, close };
}

describe('the Express webhook router', () => {
  it('warns once, naming both paths, when the public URL does not lead to its mount path', async () => {
    const app = await serve('/api/payments/webhook', '/payments/webhook', NEW);
    try {
      const { paymentId } = await app.client.generatePayment({ amount: '1000' });
      // The public URL leads nowhere: Express answers 404 and the router hears nothing yet.
      expect((await sandbox.completePayment(paymentId, { requireDelivery: false })).lastStatus).toBe(404);
      // Anything reaching the router (a set-up probe, a stray request) tells it its mount path.
      for (let i = 0; i < 2; i++) await fetch(`${app.base}/api/payments/webhook/not-a-token`, { method: 'POST' });
      expect(app.warnings).toEqual([
        expect.stringMatching(
          /^webhook\.publicUrl of this client has the path '\/payments\/webhook' but its webhook route is served at '\/api\/payments\/webhook'/,
        ),
      ]);
    } finally {
      await app.close();
    }
  });

  it('is silent when mounted where the public URL leads, and takes the tokens of the previous secret', async () => {
    const app = await serve('/api/payments/webhook', '/api/payments/webhook', NEW, [OLD]);
    // An instance not yet rotated: mints with the old secret, its deliveries reach the new one.
    const before = createPaymentsClient({
      ...sandbox.options(),
      reconciliation: { enabled: false },
      webhook: { publicUrl: `${app.base}/api/payments/webhook`, secret: OLD },
    });
    try {
      const old = await before.generatePayment({ amount: '1500', developerTrackingId: 'order-old' });
      const fresh = await app.client.generatePayment({ amount: '2500', developerTrackingId: 'order-new' });
      expect((await sandbox.completePayment(old.paymentId)).lastStatus).toBe(200);
      expect((await sandbox.completePayment(fresh.paymentId)).lastStatus).toBe(200);
      expect(app.confirmed.sort()).toEqual([old.paymentId, fresh.paymentId].sort());
      expect(app.warnings).toEqual([]);
    } finally {
      await before.close();
      await app.close();
    }
  });

  it("answers another client's token 421, with a warning naming both clients and no secret, when their secrets differ", async () => {
    const SHOP = 'whsec_express_shop_account_secret_000001';
    const OUTLET = 'whsec_express_outlet_account_secret_00002';
    const warnings: string[] = [];
    const confirmed: string[] = [];
    const app = express();
    const server: Server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const logger = { log() {}, error() {}, warn: (m: string) => void warnings.push(m) };
    const client = (name: string, secret: string) =>
      createPaymentsClient({
        ...sandbox.options(),
        name,
        reconciliation: { enabled: false },
        logger,
        // Both publish the shop's URL: the outlet's is a copy-paste mistake.
        webhook: { publicUrl: `${base}/shop/webhook`, secret },
      });
    const shop = client('shop', SHOP);
    const outlet = client('outlet', OUTLET);
    const onPaymentConfirmed = (e: PaymentConfirmedEvent) => void confirmed.push(e.paymentId);
    app.use('/shop/webhook', createWebhookRouter({ client: shop, onPaymentConfirmed }));
    app.use('/outlet/webhook', createWebhookRouter({ client: outlet, onPaymentConfirmed }));
    try {
      const { paymentId } = await outlet.generatePayment({ amount: '3100', developerTrackingId: 'order-outlet' });
      // Before: 401 'missing or invalid webhook token', and no warning.
      expect((await sandbox.completePayment(paymentId, { requireDelivery: false })).lastStatus).toBe(421);
      expect(confirmed).toEqual([]);
      expect(warnings.filter((w) => w.includes('another registration'))).toEqual([
        expect.stringMatching(
          /^webhook: refused a delivery on route '\/shop\/webhook' of client 'shop' carrying a token minted by another registration of this app, client 'outlet'/,
        ),
      ]);
      const runs = (secret: string) => Array.from({ length: secret.length - 7 }, (_, i) => secret.slice(i, i + 8));
      for (const warning of warnings)
        for (const run of [...runs(SHOP), ...runs(OUTLET)]) expect(warning).not.toContain(run);
      // A forged token is still 401, and warns nothing more.
      const forged = await fetch(`${base}/shop/webhook/AAAAAAAAAAAAAAAA.zzzzzz.3100..abcdef.AAAAAAAAAAAAAAAAAAAAAA`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payment_id: paymentId }),
      });
      expect(forged.status).toBe(401);
      expect(warnings.filter((w) => w.includes('another registration'))).toHaveLength(1);
    } finally {
      await shop.close();
      await outlet.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
