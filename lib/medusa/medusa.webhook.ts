import type { PaymentsClient } from '../core/client/index.js';
import type { ReconcileResult } from '../core/api/index.js';
import { SETTLEMENT_WAITS } from '../core/settlement/index.js';
import type { PaymentsLogger } from '../core/common/index.js';
import { webhookPaymentId } from './medusa.data.js';
import { dinarsOf } from './medusa.money.js';
import { medusaOutcomeOf } from './medusa.status.js';
import { replacedCartKey, replacedKey, replacedPaidMessage } from './medusa.replaced.js';
import type { MedusaWebhookPayload, MedusaWebhookResult } from './medusa.types.js';

/** What `NestjsPaymentsProvider.getWebhookActionAndData` answers for a delivery (the rules are documented there). */
export async function medusaWebhookResultOf(
  client: PaymentsClient,
  logger: PaymentsLogger,
  payload: MedusaWebhookPayload,
): Promise<MedusaWebhookResult> {
  const paymentId = webhookPaymentId(payload?.data);
  if (!paymentId) return { action: 'not_supported' };
  const known = (await client.store.findPending(paymentId)) ?? (await client.getOutcome(paymentId));
  if (!known) {
    logger.warn(`webhook for a payment this provider's store does not know (${paymentId.slice(0, 64)}): ignored`);
    return { action: 'not_supported' };
  }
  const result = await reconcileDelivery(client, paymentId);
  const record = (await client.getOutcome(paymentId)) ?? known;
  // Money taken (or held): a `mismatch` is a payment verified paid that never settles its session
  // (a superseded one: its cart changed after the link, and the core recorded it replaced).
  if (
    result.outcome === 'confirmed' ||
    result.outcome === 'authorized' ||
    result.outcome === 'duplicate' ||
    result.outcome === 'mismatch'
  ) {
    const replaced = await client.store.findBinding(replacedKey(paymentId));
    if (replaced) {
      // Its session was replaced or deleted: Medusa has nothing to complete with it. A duplicate
      // is logged by the outcome's handler already.
      if (result.outcome !== 'duplicate') {
        const cart = await client.store.findBinding(replacedCartKey(paymentId));
        logger.error(
          replacedPaidMessage(
            {
              paymentId,
              amount: replaced.amount,
              sessionId: replaced.developerTrackingId,
              cartId: cart?.developerTrackingId,
            },
            dinarsOf(record.amount ?? replaced.amount),
            'later',
          ),
        );
      }
      return { action: 'not_supported' };
    }
  }
  const sessionId = record.developerTrackingId ?? known.developerTrackingId;
  if (!sessionId) return { action: 'not_supported' };
  const amount = record.amount ?? known.amount;
  return {
    action: medusaOutcomeOf(result.outcome).action,
    data: { session_id: sessionId, amount: amount ? dinarsOf(amount) : '0' },
  };
}

/**
 * A delivery is the service saying the payment changed: a pending status recorded moments before
 * (the core does not verify one payment twice within its verify interval, and answers from that
 * record) must not hide it, since Medusa drops a `pending` action for good. So the delivery waits
 * for that interval to end, then is settled: one verify, for a payment this store knows.
 */
async function reconcileDelivery(client: PaymentsClient, paymentId: string): Promise<ReconcileResult> {
  const before = await client.getOutcome(paymentId);
  const age = before?.outcome === 'pending' ? Date.now() - Date.parse(before.updatedAt) : Number.NaN;
  if (age >= 0 && age < SETTLEMENT_WAITS.verifyIntervalMs) {
    await new Promise((resolve) => setTimeout(resolve, SETTLEMENT_WAITS.verifyIntervalMs - age + 50));
  }
  return client.reconcilePayment(paymentId, { source: 'webhook' });
}
