import { randomUUID } from 'node:crypto';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import express from 'express';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentRefundedEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { refundOnce } from '../../lib/core/settlement/refund.once.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { describeWithService } from '../support/services.js';
import { sharedStoreKinds } from '../support/shared-stores.js';

// Duplicate refunds (`duplicates: { refund: true }`) against the sandbox, with two app instances
// sharing one store: a duplicate is reported (payment.duplicate, outcome record) at once whatever
// its refund does; a refund is sent at most once per payment, by the plugin's own marker in the
// store, whatever the service answers (a 5xx, a refund whose answer is a 502, a timeout); only a
// refund the service cannot have acted on (a 429) is tried again, at most 3 times in all.

jest.setTimeout(60_000);
const SECRET = 'whsec_refunds_0123456789abcdef0123456789';
const REFUND = '/api/v2/refund_payment';

interface Seen {
  confirmed: PaymentConfirmedEvent[];
  duplicate: PaymentDuplicateEvent[];
  refunded: PaymentRefundedEvent[];
}

interface Instance {
  client: PaymentsClient;
  close(): Promise<void>;
}

async function instance(
  baseUrl: string,
  sandbox: PaymentsSandbox,
  store: PaymentsStore,
  seen: Seen,
): Promise<Instance> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const client = createPaymentsClient({
    ...sandbox.options(),
    baseUrl,
    timeoutMs: 1_000,
    store,
    logger: quietLogger(),
    webhook: { publicUrl: hook, secret: SECRET },
    reconciliation: { enabled: false },
    duplicates: { refund: true },
  });
  app.use(
    '/hook',
    createWebhookRouter({
      client,
      onPaymentConfirmed: (e) => void seen.confirmed.push(e),
      onPaymentDuplicate: (e) => void seen.duplicate.push(e),
      onPaymentRefunded: (e) => void seen.refunded.push(e),
    }),
  );
  return {
    client,
    close: async () => {
      await client.close();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A loopback proxy in front of the sandbox: every request is passed on as it came; a refund's
 * answer is replaced by a 502 once the sandbox has made the refund (a gateway that lost the answer).
 */
async function losingProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const upstream = http.request(
        new URL(req.url ?? '/', target),
        { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
        (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('end', () => {
            if (req.url?.startsWith(REFUND)) {
              res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(body));
          });
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(Buffer.concat(chunks));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

const KINDS = await sharedStoreKinds('refunds');

for (const kind of KINDS) {
  describeWithService(kind.available, `${kind.name} not reachable`)(
    `duplicate refunds (${kind.name}, two instances, the sandbox)`,
    () => {
      let sandbox: PaymentsSandbox;
      afterAll(() => kind.cleanup());
      beforeAll(async () => {
        sandbox = await PaymentsSandbox.start({ webhookAttempts: 3 });
      });
      afterAll(() => sandbox.close());

      async function pair(baseUrl = sandbox.options().baseUrl) {
        const seen: Seen = { confirmed: [], duplicate: [], refunded: [] };
        const storeOf = kind.make();
        const A = await instance(baseUrl, sandbox, storeOf(), seen);
        const B = await instance(baseUrl, sandbox, storeOf(), seen);
        return { A, B, seen, close: () => Promise.all([A.close(), B.close()]) };
      }

      /** Two payments of one order: the first paid and confirmed, the second not yet paid. */
      async function twoPayments(A: Instance, B: Instance) {
        const order = `order-${randomUUID()}`;
        const p1 = await A.client.generatePayment(
          { amount: '12500', developerTrackingId: order },
          { idempotencyKey: `${order}/1` },
        );
        const p2 = await B.client.generatePayment(
          { amount: '12500', developerTrackingId: order },
          { idempotencyKey: `${order}/2` },
        );
        await sandbox.completePayment(p1.paymentId);
        sandbox.clearRequests();
        return { p1: p1.paymentId, p2: p2.paymentId };
      }

      /** Every later path a shop sees: returns on both instances, and each instance's own check. */
      async function laterPaths(clients: PaymentsClient[], paymentId: string) {
        for (const c of clients) {
          for (let i = 0; i < 3; i++) await c.reconcilePayment(paymentId);
          await c.reconcilePayment(paymentId, { source: 'reconciliation' });
        }
      }

      const refundCalls = () => sandbox.requests.filter((r) => r.path === REFUND);

      it('reports a duplicate at once while its refund fails with a 5xx, and never sends the refund again', async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p1, p2 } = await twoPayments(A, B);
          sandbox.fault(REFUND, { status: 503, body: '<html>Service Unavailable</html>' });
          // The first delivery is answered 2xx: the duplicate is reported, whatever its refund did.
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({
            paymentId: p2,
            settledBy: { paymentId: p1 },
            refundState: 'unknown',
          });
          expect(seen.duplicate[0].refund).toBeUndefined();
          expect(seen.duplicate[0].refundError).toMatch(/503/);
          await laterPaths([A.client, B.client], p2);
          // A 5xx after the request was sent may come after the refund: it is never sent again.
          expect(refundCalls()).toHaveLength(1);
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.refunded).toEqual([]);
          expect(await B.client.getOutcome(p2)).toMatchObject({
            outcome: 'duplicate',
            handlers: 'succeeded',
            settledBy: p1,
            refundState: 'unknown',
            refundTries: 1,
          });
          expect(await A.client.reconcilePayment(p2)).toMatchObject({ outcome: 'duplicate', settledBy: p1 });
          expect(sandbox.getPayment(p2)?.state).toBe('paid');
        } finally {
          sandbox.fault(REFUND, null);
          await close();
        }
      });

      it('sends a refund that went through but whose answer was lost (a 502) once, and records it unknown', async () => {
        const proxy = await losingProxy(sandbox.options().baseUrl);
        const { A, B, seen, close } = await pair(proxy.url);
        try {
          const { p1, p2 } = await twoPayments(A, B);
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          await laterPaths([A.client, B.client], p2);
          expect(refundCalls()).toHaveLength(1);
          expect(sandbox.getPayment(p2)?.state).toBe('refunded');
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2, refundState: 'unknown' });
          // Never "refused": nothing says the service refused it.
          expect(seen.duplicate[0].refundError).not.toMatch(/refused|REFUND_NOT_ALLOWED/);
          const record = await A.client.getOutcome(p2);
          expect(record).toMatchObject({ outcome: 'duplicate', settledBy: p1, refundState: 'unknown' });
          expect(record?.lastError).toMatch(/needs a person/);
          expect(record?.lastError).not.toMatch(/refused/);
        } finally {
          await close();
          await proxy.close();
        }
      });

      it('sends a refund that timed out once, and records it unknown', async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p2 } = await twoPayments(A, B);
          // The sandbox answers after the client gave up (timeoutMs 1 s), and refunds.
          sandbox.fault(REFUND, { delayMs: 1_500, times: 1 });
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          await laterPaths([A.client, B.client], p2);
          expect(refundCalls()).toHaveLength(1);
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2, refundState: 'unknown' });
          expect(await B.client.getOutcome(p2)).toMatchObject({ outcome: 'duplicate', refundState: 'unknown' });
        } finally {
          sandbox.fault(REFUND, null);
          await close();
        }
      });

      it("is the refund a platform's refund of the payment finds: one record per payment, no second call", async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p2 } = await twoPayments(A, B);
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          expect(seen.refunded).toHaveLength(1);
          expect(refundCalls()).toHaveLength(1);
          // The merchant refunds the order in Vendure or Medusa afterwards, on either instance.
          const platform = await refundOnce(
            { store: A.client.store, registration: A.client.name, refund: (id) => A.client.refundPayment(id) },
            p2,
          );
          expect(platform).toMatchObject({
            kind: 'refunded',
            earlier: true,
            refund: { refundId: sandbox.getPayment(p2)?.refundId },
          });
          expect(refundCalls()).toHaveLength(1);
        } finally {
          await close();
        }
      });

      it('sends no refund when the store says one was sent (the marker of an attempt that stopped), and records it unknown', async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p2 } = await twoPayments(A, B);
          // An attempt on another instance took the marker, sent the refund and stopped before its answer.
          expect(await A.client.store.claim(`refund:${p2}`, 'a-stopped-attempt', 3_600_000)).toBe('claimed');
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          await laterPaths([A.client, B.client], p2);
          expect(refundCalls()).toEqual([]);
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2, refundState: 'unknown' });
          expect(await B.client.getOutcome(p2)).toMatchObject({ outcome: 'duplicate', refundState: 'unknown' });
        } finally {
          await close();
        }
      });

      it('tries a refund the service did not take (429) again, at most 3 times in all, and records it failed', async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p2 } = await twoPayments(A, B);
          sandbox.fault(REFUND, {
            status: 429,
            body: '{"status":"error","message":"slow down","code":"RATE_LIMITED"}',
          });
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2, refundState: 'retry' });
          expect(await A.client.getOutcome(p2)).toMatchObject({ refundState: 'retry', refundTries: 1 });
          for (let i = 0; i < 4; i++)
            for (const c of [A.client, B.client]) await c.reconcilePayment(p2, { source: 'reconciliation' });
          expect(refundCalls()).toHaveLength(3);
          expect(seen.duplicate).toHaveLength(1);
          const record = await B.client.getOutcome(p2);
          expect(record).toMatchObject({
            outcome: 'duplicate',
            handlers: 'succeeded',
            refundState: 'failed',
            refundTries: 3,
          });
          expect(record?.lastError).toMatch(/by hand/);
          // Each try is one verify and one refund call: three of each, then none.
          const verifies = sandbox.requests.filter((r) => r.path.includes('verify_payment') && r.url.includes(p2));
          expect(verifies.length).toBeLessThanOrEqual(3 + 1);
        } finally {
          sandbox.fault(REFUND, null);
          await close();
        }
      });

      it('refunds on the next try after a 429, and emits payment.refunded then', async () => {
        const { A, B, seen, close } = await pair();
        try {
          const { p1, p2 } = await twoPayments(A, B);
          sandbox.fault(REFUND, { status: 429, body: '{"status":"error","message":"slow down"}', times: 1 });
          expect(await sandbox.completePayment(p2)).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2, refundState: 'retry' });
          expect(seen.refunded).toEqual([]);
          // The refund's 429 counts in the verify budget of the instance that got it (B, whose
          // payment's webhook it was): its returns make no call until the Retry-After.
          const calls = sandbox.requests.length;
          await expect(B.client.reconcilePayment(p2)).rejects.toMatchObject({ httpStatus: 429 });
          expect(sandbox.requests).toHaveLength(calls);
          // The next attempt (a return on A) tries the refund again.
          expect(await A.client.reconcilePayment(p2)).toMatchObject({ outcome: 'duplicate', settledBy: p1 });
          for (const c of [A.client, B.client])
            for (let i = 0; i < 3; i++) await c.reconcilePayment(p2, { source: 'reconciliation' });
          expect(refundCalls()).toHaveLength(2);
          expect(sandbox.getPayment(p2)?.state).toBe('refunded');
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.refunded).toHaveLength(1);
          expect(seen.refunded[0]).toMatchObject({ paymentId: p2, duplicateOf: p1 });
          expect(await A.client.getOutcome(p2)).toMatchObject({
            outcome: 'duplicate',
            refundState: 'refunded',
            refund: { refundId: sandbox.getPayment(p2)?.refundId },
          });
        } finally {
          sandbox.fault(REFUND, null);
          await close();
        }
      });
    },
  );
}
