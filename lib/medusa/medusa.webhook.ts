import type { PaymentsClient } from '../core/client/index.js';
import { PaymentsApiError, type ReconcileResult } from '../core/api/index.js';
import { SETTLEMENT_WAITS } from '../core/settlement/index.js';
import type { PaymentsLogger } from '../core/common/index.js';
import { webhookPaymentId } from './medusa.data.js';
import { dinarsOf } from './medusa.money.js';
import { medusaOutcomeOf } from './medusa.status.js';
import {
  REPLACED_TTL_MS,
  replacedCartKey,
  replacedHoldMessage,
  replacedKey,
  replacedPaidMessage,
  replacedReleasedKey,
  type ReplacedPayment,
} from './medusa.replaced.js';
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
      // Its session was replaced or deleted: Medusa has nothing to complete with it.
      const cart = await client.store.findBinding(replacedCartKey(paymentId));
      const payment: ReplacedPayment = {
        paymentId,
        amount: replaced.amount,
        sessionId: replaced.developerTrackingId,
        cartId: cart?.developerTrackingId,
      };
      const dinars = dinarsOf(record.amount ?? replaced.amount);
      // A hold placed after its session went (nothing was held to release then) is released now.
      if (result.status === 'PREAUTH_SUCCESS') await releaseReplacedHold(client, logger, payment, dinars);
      // A duplicate charge is logged by the outcome's handler already.
      else if (result.outcome !== 'duplicate') logger.error(replacedPaidMessage(payment, dinars, 'later'));
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

/**
 * Releases the hold of a replaced session's payment, once: the release is noted in the store, so
 * a redelivery asks the service nothing. Never throws (Medusa would only log it): a failure is
 * logged as an error naming the payment, its cart and session, and the next delivery tries again.
 */
async function releaseReplacedHold(
  client: PaymentsClient,
  logger: PaymentsLogger,
  payment: ReplacedPayment,
  dinars: string,
): Promise<void> {
  const key = replacedReleasedKey(payment.paymentId);
  if (await client.store.findBinding(key)) return;
  try {
    await client.cancelPayment(payment.paymentId);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    // Refused: released meanwhile (a concurrent delivery) unless the service still holds it.
    const verified =
      error instanceof PaymentsApiError
        ? await client.verifyPayment(payment.paymentId).catch(() => undefined)
        : undefined;
    if (verified === undefined || verified.status === 'PREAUTH_SUCCESS')
      logger.error(replacedHoldMessage(payment, dinars, why));
    return;
  }
  const noted = { paymentId: payment.paymentId, amount: payment.amount, createdAt: new Date().toISOString() };
  await client.store.saveBinding(key, noted, REPLACED_TTL_MS).catch((error: unknown) => {
    logger.warn(
      `payment ${payment.paymentId}: its release could not be noted in the store (${(error as Error).message}); a redelivery asks the service again`,
    );
  });
  logger.warn(replacedHoldMessage(payment, dinars));
}
