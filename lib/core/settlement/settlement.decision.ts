import {
  PaymentAuthorizedEvent,
  PaymentConfirmedEvent,
  PaymentEvents,
  PaymentExpiredEvent,
  PaymentFailedEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
} from './payment.events.js';
import type { OutcomeSource, PaymentOutcome } from '../store/payments.store.js';
import type { VerifiedPayment } from '../api/payments.types.js';

/** The outcomes that end a payment's verification (everything but `pending`). */
export type FinalOutcome = Exclude<PaymentOutcome, 'pending'>;

/**
 * The one status mapping: the service's verified status -> what it means for the shop.
 * Only `SUCCESS` is paid (public-api-facts §1). Unknown statuses are `pending`: checked again
 * later, never taken for paid or for failed.
 */
const STATUS_OUTCOMES: Readonly<Record<string, PaymentOutcome>> = {
  SUCCESS: 'confirmed',
  FAILURE: 'failed',
  SYSTEM_FAILURE: 'failed',
  EXPIRED: 'expired',
  PREAUTH_SUCCESS: 'authorized',
  PENDING: 'pending',
};

/** What a verified status means; unknown statuses (any case) are `pending`. */
export function outcomeOf(status: string): PaymentOutcome {
  return Object.hasOwn(STATUS_OUTCOMES, status) ? STATUS_OUTCOMES[status] : 'pending';
}

type OutcomeEventClass = new (
  outcome: PaymentOutcome,
  verification: VerifiedPayment,
  source: OutcomeSource,
  registration: string | undefined,
) => PaymentOutcomeEvent;

/** Each outcome that runs handlers: its event name and payload class. */
export const OUTCOME_EVENTS: Readonly<Record<Exclude<FinalOutcome, 'mismatch'>, { name: PaymentEventName; event: OutcomeEventClass }>> = {
  confirmed: { name: PaymentEvents.CONFIRMED, event: PaymentConfirmedEvent },
  failed: { name: PaymentEvents.FAILED, event: PaymentFailedEvent },
  expired: { name: PaymentEvents.EXPIRED, event: PaymentExpiredEvent },
  authorized: { name: PaymentEvents.AUTHORIZED, event: PaymentAuthorizedEvent },
};
