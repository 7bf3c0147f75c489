import { randomUUID } from 'node:crypto';
import type { PaymentRefund } from '../api/index.js';
import { describe } from '../common/index.js';
import type { PaymentsStore } from '../store/index.js';
import { refundFailure } from './settlement.orders.js';

/**
 * How long a payment's refund is remembered, ms (30 days): past any retry of the platform's refund
 * (an admin's second click, a job retried after the platform failed to record the first).
 */
export const REFUND_NOTE_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** What a platform's refund asks of the plugin: its store and registration, and the service's refund. */
export interface RefundOnceDeps {
  /** The store shared by every instance (the platform's server and worker). */
  readonly store: PaymentsStore;
  /** The registration's name (merchant account), if any. */
  readonly registration: string | undefined;
  /** The service's `refund_payment` of one payment. */
  refund(paymentId: string): Promise<PaymentRefund>;
}

/**
 * A platform's refund of a payment, as sent at most once:
 * - `refunded`: the service refunded it; `earlier` when by an earlier call whose result the
 *   platform did not record (it failed after the call): no call was made now;
 * - `unknown`: an earlier call was sent and its answer was lost (or it is still running): never
 *   sent again; a person checks with the service.
 *
 * `unrecorded` says why the store did not record a refund just made (a retry then finds it `unknown`).
 */
export type RefundOnceResult =
  | { kind: 'refunded'; refund: PaymentRefund; earlier: boolean; unrecorded?: string }
  | { kind: 'unknown'; message: string };

// The store keys: the claim held from the call on (kept when the call may have reached the
// service), and the refund's details once the service answered. Prefixed: never a webhook
// token's (those are random) nor an outcome's key.
const claimKey = (registration: string | undefined, paymentId: string) =>
  `refund-once:${registration ?? ''}/${paymentId}`;
const detailsKey = (registration: string | undefined, paymentId: string) =>
  `refund-once-details:${registration ?? ''}/${paymentId}`;

/**
 * Refunds `paymentId` with the service at most once, by the plugin's own record in its store: the
 * platform (Vendure, Medusa) may fail to record a refund after the service made it (its own bug, a
 * locked database), and its retry must find the refund made, not send it again (the service's
 * documentation does not say that it refuses a second refund). A call the service refused, or that
 * cannot have reached it, is forgotten (a retry sends it); one whose answer was lost is `unknown`.
 * @throws the call's error when the service refused it or it cannot have reached the service, or
 *   the store's when the record cannot be read or written (then nothing was sent)
 */
export async function refundOnce(deps: RefundOnceDeps, paymentId: string): Promise<RefundOnceResult> {
  const { store, registration } = deps;
  const owner = randomUUID();
  const claim = await store.claim(claimKey(registration, paymentId), owner, REFUND_NOTE_TTL_MS);
  if (claim === 'done') {
    const noted = await store.findBinding(detailsKey(registration, paymentId));
    return {
      kind: 'refunded',
      earlier: true,
      refund: {
        refundId: noted?.developerTrackingId ?? '',
        paymentId,
        amount: noted?.amount ?? '',
        status: 'success',
        refundedAt: noted?.createdAt ?? '',
      },
    };
  }
  if (claim === 'busy')
    return {
      kind: 'unknown',
      message: `a refund of payment ${paymentId} was sent earlier and its answer was lost (or it is still running): not sent again; check with the service whether it was refunded`,
    };
  let refund: PaymentRefund;
  try {
    refund = await deps.refund(paymentId);
  } catch (error) {
    // Sent, answer lost: the claim stays (its lease is the note's life): never sent again.
    if (refundFailure(error) !== 'unknown')
      await store.release(claimKey(registration, paymentId), owner).catch(() => undefined);
    throw error;
  }
  // The details first: a retry that finds the claim done reads them. The refund is made: a store
  // that fails here is reported, never thrown (the claim stays: a retry finds it unknown).
  try {
    await store.saveBinding(
      detailsKey(registration, paymentId),
      { paymentId, amount: refund.amount, developerTrackingId: refund.refundId, createdAt: refund.refundedAt },
      REFUND_NOTE_TTL_MS,
    );
    await store.markDone(claimKey(registration, paymentId), owner, REFUND_NOTE_TTL_MS);
  } catch (error) {
    return { kind: 'refunded', refund, earlier: false, unrecorded: describe(error) };
  }
  return { kind: 'refunded', refund, earlier: false };
}
