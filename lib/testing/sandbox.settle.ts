import type { SettleOutcome } from './sandbox.checkout.js';
import { SandboxWebhookError } from './sandbox.errors.js';
import type { SandboxState, Settlement } from './sandbox.state.js';
import { isWebhookStatus, verifyStatusOf } from './sandbox.status.js';
import type { SandboxSettlement, SandboxSettleOptions } from './sandbox.types.js';
import { deliverWebhook } from './sandbox.webhook.js';

/** How a settled payment's webhook is delivered: {@link deliverWebhook}'s options. */
type DeliveryOptions = Parameters<typeof deliverWebhook>[3];

/**
 * The one path from a pending payment to its outcome, for the checkout page and the test methods
 * alike: the state changes, then the webhook (when the payment has one and the status is one the
 * service sends) is delivered and its attempts recorded.
 */
export async function settlePayment(
  state: SandboxState,
  paymentId: string,
  outcome: Settlement,
  delivery: DeliveryOptions,
): Promise<SettleOutcome> {
  const payment = state.settle(paymentId, outcome);
  if ('error' in payment) return { ok: false, reason: payment.error };
  const status = verifyStatusOf(payment.state);
  if (payment.webhook === undefined || !isWebhookStatus(status)) {
    return { ok: true, settlement: { payment, status, delivered: false, attempts: 0 } };
  }
  const webhook = await deliverWebhook(payment.webhook, payment.paymentId, status, delivery);
  const settlement: SandboxSettlement = {
    payment,
    status,
    delivered: webhook.delivered,
    attempts: webhook.attempts,
    ...(webhook.status !== 0 && { lastStatus: webhook.status }),
    webhook,
  };
  return { ok: true, settlement };
}

/**
 * A test method's settlement, or the error it throws: no such payment, not pending, or (unless
 * `requireDelivery: false`) a webhook no attempt delivered.
 */
export function settlementOrThrow(
  result: SettleOutcome,
  paymentId: string,
  outcome: Settlement,
  options: SandboxSettleOptions,
): SandboxSettlement {
  if (result.ok) {
    const { settlement } = result;
    if (settlement.webhook && !settlement.delivered && options.requireDelivery !== false)
      throw new SandboxWebhookError(settlement);
    return settlement;
  }
  const verb = outcome === 'paid' ? 'complete' : outcome === 'failed' ? 'fail' : 'expire';
  throw new Error(
    result.reason === 'unknown'
      ? `PaymentsSandbox: cannot ${verb} payment ${paymentId}: no such payment`
      : `PaymentsSandbox: cannot ${verb} payment ${paymentId}: it is ${result.reason}, not pending`,
  );
}
