import type { PaymentRefund } from '../api/index.js';
import { assertNever } from '../common/index.js';
import type { PaymentsStore } from '../store/index.js';
import { SYSTEM_CLOCK, type Clock } from '../time/index.js';
import { REFUND_RECORD_TTL_MS, sendRefund } from './refund.sender.js';

/** What a platform's refund asks of the plugin: its store and registration, and the service's refund. */
export interface RefundOnceDeps {
  /** The store shared by every instance (the platform's server and worker). */
  readonly store: PaymentsStore;
  /** The registration's name (merchant account), if any. */
  readonly registration: string | undefined;
  /** The service's `refund_payment` of one payment. */
  refund(paymentId: string): Promise<PaymentRefund>;
  /** The record times' clock. Default: the system clock. */
  readonly clock?: Clock;
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

/**
 * Refunds `paymentId` with the service at most once, by the payment's refund record in the store
 * (the same record as the automatic refund of a duplicate: a payment refunded by either is never
 * refunded by the other): the platform (Vendure, Medusa) may fail to record a refund after the
 * service made it (its own bug, a locked database), and its retry must find the refund made, not
 * send it again (the service's documentation does not say that it refuses a second refund). A call
 * the service refused, or that cannot have reached it, may be sent again by a retry, up to
 * `MAX_REFUND_TRIES` calls in all; one whose answer was lost is `unknown` for good.
 * @throws the call's error when it failed; the store's when the record cannot be read or written
 *   before the call (then nothing was sent); an error saying so when the record allows no more
 *   calls (refused or not sent `MAX_REFUND_TRIES` times: a person refunds it at the service)
 */
export async function refundOnce(deps: RefundOnceDeps, paymentId: string): Promise<RefundOnceResult> {
  const sent = await sendRefund(
    {
      store: deps.store,
      registration: deps.registration,
      ttlMs: REFUND_RECORD_TTL_MS,
      clock: deps.clock ?? SYSTEM_CLOCK,
    },
    paymentId,
    () => deps.refund(paymentId),
  );
  if (sent.kind === 'sent') {
    if (sent.made === undefined) throw sent.error;
    return sent.unrecorded === undefined
      ? { kind: 'refunded', refund: sent.made, earlier: false }
      : { kind: 'refunded', refund: sent.made, earlier: false, unrecorded: sent.unrecorded };
  }
  const { record } = sent;
  switch (record.state) {
    case 'refunded':
      return {
        kind: 'refunded',
        earlier: true,
        refund: {
          refundId: record.refund?.refundId ?? '',
          paymentId,
          amount: record.refund?.amount ?? '',
          status: record.refund?.status ?? 'success',
          refundedAt: record.refund?.refundedAt ?? '',
        },
      };
    case 'sending':
    case 'unknown':
      return {
        kind: 'unknown',
        message: `a refund of payment ${paymentId} was sent earlier and its answer was lost (or it is still running): not sent again; check with the service whether it was refunded`,
      };
    case 'refused':
    case 'retry':
    case 'failed':
      throw new Error(
        `the refund of payment ${paymentId} was not sent again: ${record.tries} call(s) were sent and none refunded it${record.error === undefined ? '' : ` (the last: ${record.error})`}; refund it by hand at the service`,
      );
    default:
      return assertNever(record.state);
  }
}
