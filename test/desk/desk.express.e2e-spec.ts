import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import { createPaymentsDesk } from '../../lib/desk/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { confirmedHandler, deskChecks, SECRETS, seed, type DeskHarness, type Seeded } from './desk-scenario.js';

// The desk on Express, over loopback, against the sandbox: the app's webhook route, its desk at
// /desk behind an `authorize` reading a header (as a session would be read).

jest.setTimeout(60_000);
const PORT = 29102;

describe('the payments desk on Express', () => {
  let sandbox: PaymentsSandbox;
  let client: PaymentsClient;
  let server: Server;
  let harness: DeskHarness;
  let seeded: Seeded;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start({ port: 29101, privateKey: SECRETS.privateKey });
    const logs: string[] = [];
    client = createPaymentsClient({
      ...sandbox.options(),
      logger: quietLogger(),
      webhook: { publicUrl: `http://127.0.0.1:${PORT}/hook`, secret: SECRETS.webhookSecret },
      reconciliation: { enabled: false, maxChecks: 1 },
    });
    harness = { desk: `http://127.0.0.1:${PORT}/desk`, client, sandbox, failing: new Set(), settled: new Map(), logs };
    const onConfirmed = confirmedHandler(harness);
    const app = express();
    app.use(
      '/hook',
      createWebhookRouter({ client, onPaymentConfirmed: (e) => onConfirmed(e.paymentId, e.developerTrackingId) }),
    );
    app.use(
      '/desk',
      createPaymentsDesk({
        client,
        logger: quietLogger(logs),
        authorize: (req) => {
          const user = req.headers['x-user'];
          if (typeof user !== 'string') return undefined;
          return user === 'mallory' ? false : { id: user, name: `${user[0].toUpperCase()}${user.slice(1)}` };
        },
      }),
    );
    server = app.listen(PORT, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    seeded = await seed(harness, 'x');
  });

  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await client?.close();
    await sandbox?.close();
  });

  it('refuses to be built without authorize, naming the fix', () => {
    expect(() => createPaymentsDesk({ client } as unknown as Parameters<typeof createPaymentsDesk>[0])).toThrow(
      /options\.authorize is required: .* Pass \(req\) => the signed-in person's id/,
    );
    expect(() =>
      createPaymentsDesk({ authorize: () => 'a' } as unknown as Parameters<typeof createPaymentsDesk>[0]),
    ).toThrow(/options\.client must be the PaymentsClient/);
  });

  deskChecks(
    () => harness,
    () => seeded,
  );
});
