import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import express from 'express';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentMismatchEvent,
  type PaymentRefundedEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { describeWithService } from '../support/services.js';
import { sharedStoreKinds } from '../support/shared-stores.js';

// Two tabs of one order, the cart changed between them: payment A for the old cart, then payment B
// (same tracking id, another amount) for the current one; the checkout desk records A as
// superseded. Against the sandbox, two app instances sharing one store: whichever is paid first, a
// superseded payment never settles the order (never `payment.confirmed` for the old cart's
// amount), and an automatic refund never refunds the current cart's payment.

jest.setTimeout(60_000);
const SECRET = 'whsec_superseded_0123456789abcdef012345';
// This file's servers: the two instances' webhook routes, on 28380 and 28381 (each test closes them).
const PORTS = [28380, 28381] as const;

interface Seen {
  confirmed: PaymentConfirmedEvent[];
  duplicate: PaymentDuplicateEvent[];
  mismatch: PaymentMismatchEvent[];
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
  refund: boolean,
  port: number,
): Promise<Instance> {
  const app = express();
  const http: Server = app.listen(port, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const client = createPaymentsClient({
    ...sandbox.options(),
    store,
    logger: quietLogger(),
    webhook: { publicUrl: `http://127.0.0.1:${port}/hook`, secret: SECRET },
    reconciliation: { enabled: false },
    duplicates: { refund },
  });
  app.use(
    '/hook',
    createWebhookRouter({
      client,
      onPaymentConfirmed: (e) => void seen.confirmed.push(e),
      onPaymentDuplicate: (e) => void seen.duplicate.push(e),
      onPaymentMismatch: (e) => void seen.mismatch.push(e),
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

const KINDS = await sharedStoreKinds('superseded', ['memory', 'postgres']);

for (const kind of KINDS) {
  describeWithService(kind.available, `${kind.name} not reachable`)(
    `two tabs of one order at different amounts (${kind.name}, the sandbox, two instances)`,
    () => {
      afterAll(() => kind.cleanup());
      let sandbox: PaymentsSandbox;
      beforeAll(async () => {
        sandbox = await PaymentsSandbox.start();
      });
      afterAll(() => sandbox.close());

      async function twoTabs(refund: boolean) {
        const seen: Seen = { confirmed: [], duplicate: [], mismatch: [], refunded: [] };
        const storeOf = kind.make();
        const one = await instance(sandbox, storeOf(), seen, refund, PORTS[0]);
        const two = await instance(sandbox, storeOf(), seen, refund, PORTS[1]);
        const order = `order-${randomUUID()}`;
        // Tab 1: the cart at 1000; tab 2, on the other instance, after the cart changed: 2000.
        const old = await one.client.generatePayment({ amount: '1000', developerTrackingId: order });
        const current = await two.client.generatePayment({ amount: '2000', developerTrackingId: order });
        expect(current.paymentId).not.toBe(old.paymentId);
        const close = async () => {
          await one.close();
          await two.close();
        };
        return { seen, one, two, order, old, current, close };
      }

      for (const refund of [false, true]) {
        const refunds = refund ? ', duplicates refunded' : '';

        it(`the old tab paid first: never confirmed; the current cart's payment confirms the order and is never refunded${refunds}`, async () => {
          const { seen, one, two, old, current, order, close } = await twoTabs(refund);
          try {
            await sandbox.completePayment(old.paymentId);
            await sandbox.completePayment(current.paymentId);
            for (const c of [one.client, two.client])
              for (const p of [old, current]) await c.reconcilePayment(p.paymentId).catch(() => undefined);

            expect(seen.confirmed.map((e) => [e.paymentId, e.amount])).toEqual([[current.paymentId, '2000']]);
            expect(seen.confirmed.map((e) => e.amount)).not.toContain('1000');
            // The merchant learns of the old cart's payment: a mismatch naming the current payment, once.
            expect(seen.mismatch.map((e) => e.paymentId)).toEqual([old.paymentId]);
            expect(seen.mismatch[0].problems.join(' ')).toContain(current.paymentId);
            expect(await one.client.getOutcome(old.paymentId)).toMatchObject({
              outcome: 'mismatch',
              status: 'SUCCESS',
            });
            expect(
              await two.client.reconcilePayment(current.paymentId, { expected: { developerTrackingId: order } }),
            ).toMatchObject({
              outcome: 'confirmed',
            });
            expect(sandbox.getPayment(current.paymentId)?.state).toBe('paid');
            expect(seen.refunded.map((e) => e.paymentId)).not.toContain(current.paymentId);
          } finally {
            await close();
          }
        });

        it(`the current tab paid first: confirmed; the old tab's payment is a duplicate of it${refund ? ', and the one refunded' : ''}`, async () => {
          const { seen, one, old, current, close } = await twoTabs(refund);
          try {
            await sandbox.completePayment(current.paymentId);
            await sandbox.completePayment(old.paymentId);

            expect(seen.confirmed.map((e) => [e.paymentId, e.amount])).toEqual([[current.paymentId, '2000']]);
            expect(seen.duplicate.map((e) => [e.paymentId, e.settledBy.paymentId])).toEqual([
              [old.paymentId, current.paymentId],
            ]);
            expect(sandbox.getPayment(current.paymentId)?.state).toBe('paid');
            expect(sandbox.getPayment(old.paymentId)?.state).toBe(refund ? 'refunded' : 'paid');
            expect(seen.refunded.map((e) => e.paymentId)).toEqual(refund ? [old.paymentId] : []);
            expect(await one.client.getOutcome(old.paymentId)).toMatchObject({ outcome: 'duplicate' });
          } finally {
            await close();
          }
        });
      }

      it('only the old tab is ever paid: never confirmed, recorded and emitted for a person, the money not refunded', async () => {
        const { seen, one, two, old, current, close } = await twoTabs(true);
        try {
          await sandbox.completePayment(old.paymentId);
          await sandbox.expirePayment(current.paymentId);
          expect(seen.confirmed).toEqual([]);
          expect(seen.mismatch.map((e) => [e.paymentId, e.amount, e.status])).toEqual([
            [old.paymentId, '1000', 'SUCCESS'],
          ]);
          expect(await two.client.reconcilePayment(old.paymentId)).toMatchObject({ outcome: 'mismatch' });
          expect((await one.client.getOutcome(old.paymentId))?.lastError).toMatch(/superseded/);
          expect((await one.client.listOutcomes({ outcome: 'mismatch' })).items.map((r) => r.paymentId)).toContain(
            old.paymentId,
          );
          expect(sandbox.getPayment(old.paymentId)?.state).toBe('paid');
          expect(seen.refunded).toEqual([]);
        } finally {
          await close();
        }
      });

      it("an order the old cart's payment settled before the cart changed: the current cart's payment is a duplicate, never refunded automatically", async () => {
        const { seen, one, two, order, close } = await (async () => {
          const seen: Seen = { confirmed: [], duplicate: [], mismatch: [], refunded: [] };
          const storeOf = kind.make();
          const one = await instance(sandbox, storeOf(), seen, true, PORTS[0]);
          const two = await instance(sandbox, storeOf(), seen, true, PORTS[1]);
          const close = async () => {
            await one.close();
            await two.close();
          };
          return { seen, one, two, order: `order-${randomUUID()}`, close };
        })();
        try {
          const old = await one.client.generatePayment({ amount: '1000', developerTrackingId: order });
          await sandbox.completePayment(old.paymentId);
          expect(seen.confirmed.map((e) => e.paymentId)).toEqual([old.paymentId]);
          const current = await two.client.generatePayment({ amount: '2000', developerTrackingId: order });
          expect(current.paymentId).not.toBe(old.paymentId);
          await sandbox.completePayment(current.paymentId);
          expect(seen.duplicate.map((e) => [e.paymentId, e.settledBy.paymentId, e.refund])).toEqual([
            [current.paymentId, old.paymentId, undefined],
          ]);
          expect(seen.duplicate[0].refundError).toMatch(/current/);
          expect(sandbox.getPayment(current.paymentId)?.state).toBe('paid');
          expect(seen.refunded).toEqual([]);
        } finally {
          await close();
        }
      });
    },
  );
}
