import type { PaymentsStore } from '../store/index.js';
import type { Clock } from '../time/index.js';
import { bounded } from './payments.checkout.js';
import type { PaymentRefund } from './payments.types.js';

/**
 * After `refundPayment` of a payment the plugin recorded as a duplicate (a second charge of an
 * order another payment settled), e.g. from an admin's refund button: its outcome record notes the
 * refund, so that the `outcomes` CLI, the admin and a later automatic refund all see it refunded.
 * A store that is slow or down costs nothing here (the refund has happened; the record is for people).
 * @returns the payment that settled the order, when the refunded one was a duplicate
 */
export async function noteDuplicateRefund(
  store: PaymentsStore,
  refund: PaymentRefund,
  recordTtlMs: number,
  clock: Clock,
): Promise<string | undefined> {
  const record = await bounded(store.getOutcome(refund.paymentId), clock).catch(() => undefined);
  if (record?.outcome !== 'duplicate') return undefined;
  if (record.refund === undefined) {
    const { refundId, amount, status, refundedAt } = refund;
    // A refund by hand settles an automatic one that was refused, failed or whose answer was lost.
    const { refundError: _settled, ...rest } = record;
    const noted = {
      ...rest,
      refund: { refundId, amount, status, refundedAt },
      refundState: 'refunded' as const,
      updatedAt: new Date(clock.now()).toISOString(),
    };
    await bounded(store.saveOutcome(noted, recordTtlMs), clock).catch(() => undefined);
  }
  return record.settledBy;
}
