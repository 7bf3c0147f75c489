import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import express from 'express';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import { orderLedgerOf, type PaymentsStore } from '../../lib/core/store/store.ports.js';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentAuthorizedEvent,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentFailedEvent,
  type PaymentRefundedEvent,
  type PaymentsClient,
  PaymentsValidationError,
} from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { describeWithService } from '../support/services.js';
import { sharedStoreKinds } from '../support/shared-stores.js';

// Issue 32: one order, one charge. Against the real sandbox, with two app instances sharing one
// store (memory: one object; Redis; PostgreSQL in the transactional mode): a repeated checkout
// opens one payment; two payments of one order paid at once, on two instances, by webhook or
// return, give one payment.confirmed and one payment.duplicate, each once; with automatic refunds
// the second payment is refunded at most once, also when the first refund call is turned away.

jest.setTimeout(60_000);
const SECRET = 'whsec_orders_0123456789abcdef0123456789';

interface Seen {
  confirmed: PaymentConfirmedEvent[];
  authorized?: PaymentAuthorizedEvent[];
  failed?: PaymentFailedEvent[];
  duplicate: PaymentDuplicateEvent[];
  refunded: PaymentRefundedEvent[];
}

interface Instance {
  client: PaymentsClient;
  close(): Promise<void>;
}

async function instance(
  sandbox: PaymentsSandbox,
  store: PaymentsStore,
  seen: Seen,
  options: { webhook: boolean; refund?: boolean },
): Promise<Instance> {
  const app = express();
  const http: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const hook = `http://127.0.0.1:${(http.address() as AddressInfo).port}/hook`;
  const client = createPaymentsClient({
    ...sandbox.options(),
    store,
    logger: quietLogger(),
    webhook: options.webhook ? { publicUrl: hook, secret: SECRET } : undefined,
    reconciliation: { enabled: false },
    duplicates: { refund: options.refund ?? false },
  });
  app.use(
    '/hook',
    createWebhookRouter({
      client,
      onPaymentConfirmed: async (e) => {
        // A little work, so that concurrent attempts overlap.
        await new Promise((r) => setTimeout(r, 10));
        seen.confirmed.push(e);
      },
      onPaymentDuplicate: (e) => void seen.duplicate.push(e),
      onPaymentAuthorized: (e) => void seen.authorized?.push(e),
      onPaymentFailed: (e) => void seen.failed?.push(e),
      onPaymentRefunded: (e) => void seen.refunded.push(e),
    }),
  );
  return {
    client,
    close: async () => {
      await client.close();
      await new Promise((r) => http.close(r));
    },
  };
}

const KINDS = await sharedStoreKinds('orders');

for (const kind of KINDS) {
  describeWithService(kind.available, `${kind.name} not reachable`)(
    `one order, one charge (${kind.name}, two instances, the sandbox)`,
    () => {
      let sandbox: PaymentsSandbox;
      afterAll(() => kind.cleanup());
      beforeAll(async () => {
        sandbox = await PaymentsSandbox.start({ webhookAttempts: 3 });
      });
      afterAll(() => sandbox.close());

      async function pair(options: { webhook: boolean; refund?: boolean }) {
        const seen: Seen = { confirmed: [], duplicate: [], refunded: [], authorized: [], failed: [] };
        const storeOf = kind.make();
        const A = await instance(sandbox, storeOf(), seen, options);
        const B = await instance(sandbox, storeOf(), seen, options);
        return { A, B, seen, close: () => Promise.all([A.close(), B.close()]) };
      }

      it('answers one payment to two checkouts of one order, also two at once on two instances', async () => {
        const { A, B, close } = await pair({ webhook: true });
        try {
          const order = `order-${randomUUID()}`;
          const first = await A.client.generatePayment({ amount: '12500', developerTrackingId: order });
          const again = await B.client.generatePayment({ amount: '12500', developerTrackingId: order });
          expect(again).toEqual(first);
          const other = `order-${randomUUID()}`;
          const [x, y] = await Promise.all([
            A.client.generatePayment({ amount: '9000', developerTrackingId: other }),
            B.client.generatePayment({ amount: '9000', developerTrackingId: other }),
          ]);
          expect(y).toEqual(x);
          expect(
            sandbox.payments().filter((p) => p.developerTrackingId === order || p.developerTrackingId === other),
          ).toHaveLength(2);
          // A changed amount opens a new payment; the open one is remembered as superseded.
          const changed = await A.client.generatePayment({ amount: '13000', developerTrackingId: order });
          expect(changed.paymentId).not.toBe(first.paymentId);
          expect((await orderLedgerOf(A.client.store)!.findCheckout(`order:${order}`))?.superseded).toEqual([
            first.paymentId,
          ]);
          // An idempotency key answers its own payment, and a new key opens another.
          const keyed = await A.client.generatePayment(
            { amount: '13000', developerTrackingId: order },
            { idempotencyKey: `${order}/2` },
          );
          expect(
            await B.client.generatePayment(
              { amount: '13000', developerTrackingId: order },
              { idempotencyKey: `${order}/2` },
            ),
          ).toEqual(keyed);
          expect(keyed.paymentId).not.toBe(changed.paymentId);
        } finally {
          await close();
        }
      });

      // Two payments of one order (two idempotency keys, or a changed amount), paid at once.
      const ways = [
        { label: 'idempotency keys, by webhook', webhook: true, returns: false, amounts: ['12500', '12500'] },
        {
          label: 'changed amount, by webhook and return at once',
          webhook: true,
          returns: true,
          amounts: ['12500', '14000'],
        },
        { label: 'idempotency keys, by return only', webhook: false, returns: true, amounts: ['12500', '12500'] },
      ];
      for (const way of ways) {
        for (const swapped of [false, true]) {
          it(`confirms one payment and reports the other once as a duplicate: ${way.label}${swapped ? ', the second generated paid first' : ''}`, async () => {
            const { A, B, seen, close } = await pair({ webhook: way.webhook });
            try {
              const order = `order-${randomUUID()}`;
              const p1 = await A.client.generatePayment(
                { amount: way.amounts[0], developerTrackingId: order },
                { idempotencyKey: `${order}/1` },
              );
              const p2 = await B.client.generatePayment(
                { amount: way.amounts[1], developerTrackingId: order },
                { idempotencyKey: `${order}/2` },
              );
              expect(p2.paymentId).not.toBe(p1.paymentId);
              const [x, y] = swapped ? [p2, p1] : [p1, p2];
              const paying = Promise.all([sandbox.completePayment(x.paymentId), sandbox.completePayment(y.paymentId)]);
              const returns = way.returns
                ? (async () => {
                    if (!way.webhook) await paying;
                    return Promise.all(
                      [A.client, B.client].flatMap((c) => [
                        c.reconcilePayment(x.paymentId),
                        c.reconcilePayment(y.paymentId),
                      ]),
                    );
                  })()
                : Promise.resolve([]);
              await Promise.all([paying, returns]);
              // Whatever came first, settle what is left by return (a return that ran while the payment was pending).
              for (const c of [A.client, B.client]) for (const p of [x, y]) await c.reconcilePayment(p.paymentId);

              expect(seen.confirmed).toHaveLength(1);
              expect(seen.duplicate).toHaveLength(1);
              const paid = seen.confirmed[0].paymentId;
              const dup = seen.duplicate[0];
              expect([p1.paymentId, p2.paymentId]).toContain(paid);
              expect(dup.paymentId).toBe(paid === p1.paymentId ? p2.paymentId : p1.paymentId);
              expect(dup.settledBy.paymentId).toBe(paid);
              expect(dup.order).toBe(order);
              expect(dup.settledBy.amount).toBe(seen.confirmed[0].amount);
              expect(dup.refund).toBeUndefined();
              // The return of the second payment says the order is paid, by which payment.
              for (const c of [A.client, B.client]) {
                expect(await c.reconcilePayment(dup.paymentId)).toMatchObject({
                  outcome: 'duplicate',
                  settledBy: paid,
                  handled: false,
                });
                expect(await c.reconcilePayment(paid)).toMatchObject({ outcome: 'confirmed', handled: false });
              }
              // Transactional: a confirmation that lost the order inside its transaction rolled back (one attempt more).
              expect(await A.client.getOutcome(dup.paymentId)).toMatchObject({
                outcome: 'duplicate',
                settledBy: paid,
                handlers: 'succeeded',
              });
              expect((await A.client.listOutcomes({ outcome: 'duplicate' })).items.map((r) => r.paymentId)).toContain(
                dup.paymentId,
              );
              // Nothing is refunded unless asked.
              expect(sandbox.getPayment(dup.paymentId)?.state).toBe('paid');
            } finally {
              await close();
            }
          });
        }
      }

      // The customer's "try again" after a payment that can no longer be paid
      // gets a new link at once, on either instance (the outcome is read from the shared store).
      it('opens a new payment when the open one was declined (payment.failed): never its link again', async () => {
        const { A, B, seen, close } = await pair({ webhook: true });
        try {
          const order = `order-${randomUUID()}`;
          const input = { amount: '12500', developerTrackingId: order };
          const first = await A.client.generatePayment(input);
          await sandbox.failPayment(first.paymentId);
          expect(seen.failed?.map((e) => e.paymentId)).toEqual([first.paymentId]);
          const retry = await B.client.generatePayment(input);
          expect(retry.paymentId).not.toBe(first.paymentId);
          expect(sandbox.getPayment(retry.paymentId)?.state).toBe('pending');
          // The new payment is the order's open one: a second retry answers it (one payment per checkout).
          expect(await A.client.generatePayment(input)).toEqual(retry);
          await sandbox.completePayment(retry.paymentId);
          expect(seen.confirmed.map((e) => e.paymentId)).toEqual([retry.paymentId]);
          expect(seen.duplicate).toEqual([]);
        } finally {
          await close();
        }
      });

      it('opens a new payment when the held pre-authorization was cancelled (cancelPayment)', async () => {
        const { A, B, seen, close } = await pair({ webhook: true });
        try {
          const order = `order-${randomUUID()}`;
          const input = { amount: '12500', developerTrackingId: order, preAuthorization: true };
          const first = await A.client.generatePayment(input);
          await sandbox.completePayment(first.paymentId);
          expect(seen.authorized?.map((e) => e.paymentId)).toEqual([first.paymentId]);
          // Held and not cancelled: the order's payment, answered again (no second hold).
          expect(await B.client.generatePayment(input)).toEqual(first);
          await A.client.cancelPayment(first.paymentId);
          const retry = await B.client.generatePayment(input);
          expect(retry.paymentId).not.toBe(first.paymentId);
          expect(sandbox.getPayment(retry.paymentId)?.state).toBe('pending');
          expect(await A.client.generatePayment(input)).toEqual(retry);
        } finally {
          await close();
        }
      });

      it('opens a new payment when the open one expired (its EXPIRED outcome recorded)', async () => {
        const { A, B, close } = await pair({ webhook: true });
        try {
          const order = `order-${randomUUID()}`;
          const input = { amount: '12500', developerTrackingId: order };
          const first = await A.client.generatePayment(input);
          await sandbox.expirePayment(first.paymentId);
          // The customer's return (or reconciliation) learns it, on one instance.
          expect(await A.client.reconcilePayment(first.paymentId)).toMatchObject({ outcome: 'expired' });
          const retry = await B.client.generatePayment(input);
          expect(retry.paymentId).not.toBe(first.paymentId);
          expect(sandbox.getPayment(retry.paymentId)?.state).toBe('pending');
          expect(await A.client.generatePayment(input)).toEqual(retry);
        } finally {
          await close();
        }
      });

      // A pre-authorization of an order another payment already paid is a
      // second charge in waiting: a duplicate, never authorized, and its capture refused.
      it('reports a pre-authorization of a paid order as payment.duplicate, and refuses its capture', async () => {
        const { A, B, seen, close } = await pair({ webhook: true });
        try {
          const order = `order-${randomUUID()}`;
          const p1 = await A.client.generatePayment(
            { amount: '12500', developerTrackingId: order },
            { idempotencyKey: `${order}/1` },
          );
          const p2 = await B.client.generatePayment(
            { amount: '12500', developerTrackingId: order, preAuthorization: true },
            { idempotencyKey: `${order}/2` },
          );
          await sandbox.completePayment(p1.paymentId);
          await sandbox.completePayment(p2.paymentId);
          expect(sandbox.getPayment(p2.paymentId)?.state).toBe('preauthorized');
          expect(seen.confirmed.map((e) => e.paymentId)).toEqual([p1.paymentId]);
          expect(seen.authorized).toEqual([]);
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({
            paymentId: p2.paymentId,
            status: 'PREAUTH_SUCCESS',
            settledBy: { paymentId: p1.paymentId, amount: '12500' },
            order,
          });
          for (const c of [A.client, B.client])
            expect(await c.reconcilePayment(p2.paymentId)).toMatchObject({
              outcome: 'duplicate',
              settledBy: p1.paymentId,
            });
          expect(await B.client.getOutcome(p2.paymentId)).toMatchObject({
            outcome: 'duplicate',
            settledBy: p1.paymentId,
          });
          await expect(A.client.capturePayment(p2.paymentId)).rejects.toThrow(PaymentsValidationError);
          await expect(B.client.capturePayment(p2.paymentId)).rejects.toThrow(/duplicate/);
          expect(sandbox.getPayment(p2.paymentId)?.state).toBe('preauthorized');
          // Releasing the hold is what is left to do, and allowed.
          await A.client.cancelPayment(p2.paymentId);
          expect(sandbox.getPayment(p2.paymentId)?.state).toBe('cancelled');
        } finally {
          await close();
        }
      });

      it('refuses the capture of a hold whose order was paid after it; a captured hold pays its order', async () => {
        const { A, B, seen, close } = await pair({ webhook: true });
        try {
          // Held first, then the order paid by another payment: the hold stays authorized, its capture is refused.
          const order = `order-${randomUUID()}`;
          const held = await A.client.generatePayment(
            { amount: '12500', developerTrackingId: order, preAuthorization: true },
            { idempotencyKey: `${order}/1` },
          );
          const paid = await B.client.generatePayment(
            { amount: '12500', developerTrackingId: order },
            { idempotencyKey: `${order}/2` },
          );
          await sandbox.completePayment(held.paymentId);
          await sandbox.completePayment(paid.paymentId);
          expect(seen.authorized?.map((e) => e.paymentId)).toEqual([held.paymentId]);
          expect(seen.confirmed.map((e) => e.paymentId)).toEqual([paid.paymentId]);
          await expect(B.client.capturePayment(held.paymentId)).rejects.toThrow(
            new RegExp(`already paid by payment ${paid.paymentId}`),
          );
          expect(sandbox.getPayment(held.paymentId)?.state).toBe('preauthorized');

          // Held, captured, then another payment of the order paid: that one is the duplicate.
          const other = `order-${randomUUID()}`;
          const hold = await A.client.generatePayment(
            { amount: '9000', developerTrackingId: other, preAuthorization: true },
            { idempotencyKey: `${other}/1` },
          );
          const second = await B.client.generatePayment(
            { amount: '9000', developerTrackingId: other },
            { idempotencyKey: `${other}/2` },
          );
          await sandbox.completePayment(hold.paymentId);
          await A.client.capturePayment(hold.paymentId);
          expect(sandbox.getPayment(hold.paymentId)?.state).toBe('captured');
          await sandbox.completePayment(second.paymentId);
          expect(seen.duplicate.map((e) => [e.paymentId, e.settledBy.paymentId])).toEqual([
            [second.paymentId, hold.paymentId],
          ]);
        } finally {
          await close();
        }
      });

      it('refunds the duplicate once through the normal refund path, also when the first refund call was turned away', async () => {
        const { A, B, seen, close } = await pair({ webhook: true, refund: true });
        try {
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
          // The service turns the first refund call away unprocessed (429): the duplicate is
          // reported at once (the first delivery is answered 2xx), and the refund tried again on
          // the next attempt (here a return on A; B, which got the 429, holds its verifies).
          sandbox.fault('/api/v2/refund_payment', { status: 429, body: '{"status":"error"}', times: 1 });
          const settled = await sandbox.completePayment(p2.paymentId);
          expect(settled).toMatchObject({ delivered: true, attempts: 1, lastStatus: 200 });
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.duplicate[0]).toMatchObject({ paymentId: p2.paymentId, refundState: 'retry' });
          expect(await A.client.reconcilePayment(p2.paymentId)).toMatchObject({
            outcome: 'duplicate',
            settledBy: p1.paymentId,
          });
          // And late returns and checks refund nothing more.
          for (const c of [A.client, B.client])
            expect(await c.reconcilePayment(p2.paymentId, { source: 'reconciliation' })).toMatchObject({
              outcome: 'duplicate',
              settledBy: p1.paymentId,
            });
          expect(await A.client.reconcilePayment(p2.paymentId)).toMatchObject({
            outcome: 'duplicate',
            settledBy: p1.paymentId,
          });

          const refundCalls = sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment');
          expect(refundCalls).toHaveLength(2);
          expect(sandbox.getPayment(p2.paymentId)?.state).toBe('refunded');
          expect(sandbox.getPayment(p1.paymentId)?.state).toBe('paid');
          expect(seen.confirmed.map((e) => e.paymentId)).toEqual([p1.paymentId]);
          expect(seen.duplicate).toHaveLength(1);
          expect(seen.refunded).toHaveLength(1);
          expect(seen.refunded[0]).toMatchObject({
            paymentId: p2.paymentId,
            duplicateOf: p1.paymentId,
            refundId: sandbox.getPayment(p2.paymentId)?.refundId,
          });
          expect(await B.client.getOutcome(p2.paymentId)).toMatchObject({
            outcome: 'duplicate',
            refundState: 'refunded',
            refundTries: 2,
            refund: { refundId: seen.refunded[0].refundId },
          });
        } finally {
          sandbox.fault('/api/v2/refund_payment', null);
          await close();
        }
      });
    },
  );
}

describe('a payment without a tracking id keeps its behaviour', () => {
  it('confirms every paid payment, and opens one payment per call', async () => {
    const sandbox = await PaymentsSandbox.start();
    const seen: Seen = { confirmed: [], duplicate: [], refunded: [] };
    const A = await instance(sandbox, new MemoryPaymentsStore(), seen, { webhook: true });
    try {
      const p1 = await A.client.generatePayment({ amount: '12500' });
      const p2 = await A.client.generatePayment({ amount: '12500' });
      expect(p2.paymentId).not.toBe(p1.paymentId);
      await sandbox.completePayment(p1.paymentId);
      await sandbox.completePayment(p2.paymentId);
      expect(seen.confirmed.map((e) => e.paymentId)).toEqual([p1.paymentId, p2.paymentId]);
      expect(seen.duplicate).toEqual([]);
    } finally {
      await A.close();
      await sandbox.close();
    }
  });
});
