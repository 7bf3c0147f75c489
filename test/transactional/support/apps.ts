import type { PaymentConfirmedEvent } from '../../../lib/index.js';
import type { PaymentsStore } from '../../../lib/store/index.js';
import { createPaymentsClient, type PaymentsClient } from '../../../lib/express/index.js';
import type { PaymentsSandbox } from '../../../lib/testing/index.js';
import { postJson, quietLogger, startRouter, tokenOf, type RunningRouter } from '../../support/outcome-kit.js';
import type { Db } from './orders.js';

// An app instance on a store, against the sandbox, and a paid order whose webhook the test
// delivers itself: what the transactional tests share.

const SECRET = 'whsec_transactional_apps_0123456789abcdef0123';

/** What a handler under test does on each call. */
export type Handler = (event: PaymentConfirmedEvent) => Promise<void>;

/** An app instance: a client on a store and the Express webhook router on a loopback port. */
export interface Instance {
  client: PaymentsClient;
  router: RunningRouter;
  logs: string[];
  close(): Promise<void>;
}

/** Starts an instance on `store` whose confirmation handler is `handler`. */
export async function instance(
  sandbox: PaymentsSandbox,
  store: PaymentsStore,
  handler: Handler,
  leaseMs = 10_000,
): Promise<Instance> {
  const logs: string[] = [];
  const client = createPaymentsClient({
    ...sandbox.options(),
    maxRetries: 0,
    // Nothing listens there: the tests deliver the webhook themselves.
    webhook: { publicUrl: 'http://127.0.0.1:9/hook', secret: SECRET, leaseMs },
    reconciliation: { enabled: false },
    logger: quietLogger(logs),
    store,
  });
  const router = await startRouter({ client, onPaymentConfirmed: handler });
  return {
    client,
    router,
    logs,
    close: async () => {
      await router.close();
      await client.close();
    },
  };
}

let counter = 0;

/** Creates an order (in `db`) and its payment (through `client`), and pays it at the sandbox. */
export async function paidOrder(sandbox: PaymentsSandbox, db: Db, client: PaymentsClient, amount = '12500') {
  const orderId = `ord_${process.pid}_${Date.now().toString(36)}_${++counter}`;
  await db.query('INSERT INTO orders (id, amount) VALUES ($1, $2)', [orderId, amount]);
  const { paymentId } = await client.generatePayment({ amount, developerTrackingId: orderId });
  await sandbox.completePayment(paymentId, { requireDelivery: false });
  const token = tokenOf(sandbox.getPayment(paymentId)!.webhook!);
  const deliver = (to: Instance) => postJson(`${to.router.url}/${token}`, { payment_id: paymentId });
  return { orderId, paymentId, deliver };
}
