import {
  normalizeMillimes,
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsRateLimitedError,
  type PaymentsError,
  type VerifiedPayment,
} from '../api/index.js';
import { assertNever } from '../common/index.js';
import type { PaymentOutcome } from '../store/index.js';
import { PaymentEvents, type PaymentEventName } from './payment.events.js';
import { SETTLEMENT_WAITS } from './settlement.waits.js';

/**
 * The rule that makes a payment paid, and every other verdict on a verify answer: one pure
 * function, {@link decide}, table-tested in test/settlement/decision.spec.ts. The runner carries
 * out what it says; nothing else interprets a verify answer.
 */

/** The outcomes that end a payment's verification (everything but `pending`). */
export type FinalOutcome = Exclude<PaymentOutcome, 'pending'>;

/** The outcomes whose handlers run: each has its event. */
export type HandledOutcome = Exclude<FinalOutcome, 'mismatch' | 'duplicate'>;

/**
 * The one status mapping: the service's verified status -> what it means for the shop.
 * Only `SUCCESS` is paid (docs/service-facts.md §1). Unknown statuses are `pending`: checked again
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

/** The event each handled outcome emits. */
export const OUTCOME_EVENT_NAMES: Readonly<Record<HandledOutcome, PaymentEventName>> = {
  confirmed: PaymentEvents.CONFIRMED,
  failed: PaymentEvents.FAILED,
  expired: PaymentEvents.EXPIRED,
  authorized: PaymentEvents.AUTHORIZED,
};

/**
 * Where an expectation comes from. `binding`: the plugin's own record of what it sent.
 * `token`: a webhook token without a stored binding (a restart with the memory store, an
 * eviction). `caller`: values passed to `reconcilePayment` that no record backs.
 */
export type ExpectationOrigin = 'binding' | 'token' | 'caller';

/** What the caller expects of a payment; differences are a mismatch, never a confirmation. */
export interface OutcomeExpectation {
  /** Amount in millimes. */
  amount?: string;
  /** Exact tracking id. */
  developerTrackingId?: string;
  /** Tests a verified tracking id (used where only a hash of it is known, as in a webhook token). */
  trackingMatches?: (trackingId: string | undefined) => boolean;
  /**
   * Where the expectation comes from. For the two unbacked origins (`token`, `caller`) a
   * difference usually means another payment was named (a replayed token, an edited return
   * URL): `foreign`, nothing recorded, nothing emitted, unless the tracking id pins the payment
   * down; a genuine mismatch then is recorded and emitted but never marks the payment done.
   */
  origin: ExpectationOrigin;
  /**
   * With origin `token`: the token was signed with a tracking id. When the verified tracking id
   * matches it, the payment is the one the token was issued for, and a different amount is a
   * genuine mismatch rather than a replay. Without a tracking id every payment of the merchant's
   * without one would match, so nothing is concluded.
   */
  identifiesPayment?: boolean;
  /**
   * The currency the payment was asked in: an ISO 4217 code (`TND`) or its numeric form (`788`).
   * Default `TND`, the one currency the service takes. Compared with the verify answer's
   * `details.currency` whenever the service sends one.
   */
  currency?: string;
}

/** What the service answered to `verify_payment`. */
export type VerifyAnswer = { ok: true; verification: VerifiedPayment } | { ok: false; error: PaymentsError };

/**
 * The verdict on one verify answer, and what the runner does with it:
 * - `settle`: run the handlers of `event`; mark the payment done when they succeed, release it when one throws;
 * - `pending`: not settled yet: release, record it as pending (checked again later);
 * - `mismatch`: the service's payment differs from what was expected: never confirmed; record and
 *   emit `payment.mismatch`, then mark done (`finish: 'done'`) or, when nothing the plugin
 *   recorded backs the expectation or the answer names another payment, release;
 * - `foreign`: the delivery or caller named another payment than the one it was issued for:
 *   release, record nothing, emit nothing;
 * - `unverified`: no usable answer: release and try later (`retryAfterSecs` for a webhook's
 *   Retry-After; `rateLimitedSecs` when the service rate-limited verify and every path should pause).
 */
export type Decision = AnsweredDecision | FailedDecision;

/** The verdicts on an answer of the service (see {@link Decision}). */
export type AnsweredDecision =
  | { kind: 'settle'; outcome: HandledOutcome; event: PaymentEventName }
  | { kind: 'pending' }
  | { kind: 'mismatch'; problems: string[]; finish: 'done' | 'release' }
  | { kind: 'foreign'; problems: string[] };

/** The verdicts on a verify call that got no answer (see {@link Decision}). */
export type FailedDecision =
  { kind: 'foreign'; problems: string[] } | { kind: 'unverified'; retryAfterSecs?: number; rateLimitedSecs?: number };

/**
 * Decides what a verify answer means for the payment asked about. Pure: no I/O, no clock.
 * @param asked the payment id the verify call was made for
 * @param answer the service's answer, or the error the call ended with
 * @param expected what the plugin (or the caller) expects of the payment, when anything is known
 */
export function decide(asked: string, answer: VerifyAnswer, expected?: OutcomeExpectation): Decision {
  return answer.ok ? decideAnswer(asked, answer.verification, expected) : decideFailure(answer.error, expected);
}

/** {@link decide} for an answer of the service: the runner has the verification at hand in each verdict. */
export function decideAnswer(
  asked: string,
  verification: VerifiedPayment,
  expected?: OutcomeExpectation,
): AnsweredDecision {
  const problems = expected ? differences(verification, expected) : [];
  // Compared with or without an expectation: a payment made in another currency is never paid for a TND order.
  const currency = currencyProblem(verification, expected?.currency);
  if (currency !== undefined) problems.push(currency);
  const otherPayment = verification.answeredPaymentId !== undefined && verification.answeredPaymentId !== asked;
  if (otherPayment) problems.unshift(`the answer names payment ${JSON.stringify(verification.answeredPaymentId)}`);

  // Checked before the status: a replay naming another payment must record nothing, not even that
  // payment as pending.
  if (
    problems.length > 0 &&
    !otherPayment &&
    expected &&
    unbacked(expected) &&
    !genuinelyMismatched(verification, expected)
  ) {
    return { kind: 'foreign', problems };
  }
  const outcome = outcomeOf(verification.status);
  if (outcome === 'pending' && !otherPayment) return { kind: 'pending' };
  if (problems.length > 0) {
    // Released rather than done when nothing the plugin recorded backs the expectation: a token of
    // the same order's earlier payment, replayed for a later one of another amount, looks just like
    // this, and a done marker would swallow the later payment's own confirmation. Likewise when the
    // answer is about another payment: it says nothing about this one.
    const finish = otherPayment || (expected !== undefined && unbacked(expected)) ? 'release' : 'done';
    return { kind: 'mismatch', problems, finish };
  }
  // `duplicate` is the order screen's verdict, never a status's: listed for the compiler.
  if (outcome === 'pending' || outcome === 'mismatch' || outcome === 'duplicate') return { kind: 'pending' };
  return { kind: 'settle', outcome, event: OUTCOME_EVENT_NAMES[outcome] };
}

/**
 * What a payment already settled (its claim done) is, told from a fresh answer of the service
 * when its record cannot be read (pure): the answer is judged as {@link decideAnswer} judges any,
 * so that a payment settled as a mismatch is never told paid by its status alone.
 * @param asked the payment id the verify call was made for
 * @param verification the service's answer
 * @param expected what the plugin (or the caller) expects of the payment, when anything is known
 */
export function doneOutcomeOf(
  asked: string,
  verification: VerifiedPayment,
  expected?: OutcomeExpectation,
): PaymentOutcome {
  const decision = decideAnswer(asked, verification, expected);
  switch (decision.kind) {
    case 'settle':
      return decision.outcome;
    case 'pending':
      return 'pending';
    case 'mismatch':
    case 'foreign':
      return 'mismatch';
    default:
      return assertNever(decision);
  }
}

/** {@link decide} for a verify call that got no usable answer: the runner has the error at hand in each verdict. */
export function decideFailure(error: PaymentsError, expected?: OutcomeExpectation): FailedDecision {
  // A signed token naming a payment the service does not know: a replay with a made-up id. Foreign
  // (401), not unverified (503), which would invite whoever sends it to deliver again.
  if (expected?.origin === 'token' && isNotFound(error))
    return { kind: 'foreign', problems: ['the service does not know this payment'] };
  if (error instanceof PaymentsRateLimitedError)
    return { kind: 'unverified', retryAfterSecs: error.waitSecs, rateLimitedSecs: error.waitSecs };
  if (error instanceof PaymentsConnectionError)
    return { kind: 'unverified', retryAfterSecs: SETTLEMENT_WAITS.unavailableRetrySecs };
  return { kind: 'unverified' };
}

function differences(verification: VerifiedPayment, expected: OutcomeExpectation): string[] {
  const problems: string[] = [];
  if (expected.amount !== undefined && normalizeMillimes(verification.amount) !== normalizeMillimes(expected.amount)) {
    problems.push(`amount ${verification.amount} instead of ${expected.amount}`);
  }
  if (expected.developerTrackingId !== undefined && verification.developerTrackingId !== expected.developerTrackingId) {
    problems.push(
      `tracking id ${JSON.stringify(verification.developerTrackingId ?? null)} instead of ${JSON.stringify(expected.developerTrackingId)}`,
    );
  }
  if (expected.trackingMatches && !expected.trackingMatches(verification.developerTrackingId)) {
    problems.push('tracking id differs from the one the webhook token was issued for');
  }
  return problems;
}

/** The currency a payment is expected in when nothing says otherwise. */
export const DEFAULT_CURRENCY = 'TND';

// ISO 4217 numeric codes the service may send for the alphabetic ones (its docs show "788").
const NUMERIC_CURRENCIES: Readonly<Record<string, string>> = { '788': 'TND' };

/** A currency as compared: alphabetic, upper case; a numeric code of a known currency as its letters. */
function canonicalCurrency(code: string): string {
  const trimmed = code.trim().toUpperCase();
  return Object.hasOwn(NUMERIC_CURRENCIES, trimmed) ? NUMERIC_CURRENCIES[trimmed] : trimmed;
}

// The verify answer's `details.currency` against the expected currency: absent is nothing to
// compare; a string or number that names another currency, or anything unreadable, is a problem.
function currencyProblem(verification: VerifiedPayment, expected: string = DEFAULT_CURRENCY): string | undefined {
  const details = verification.details;
  if (details === undefined || !Object.hasOwn(details, 'currency')) return undefined;
  const sent = details.currency;
  if (sent === undefined || sent === null) return undefined;
  const readable = typeof sent === 'string' || (typeof sent === 'number' && Number.isInteger(sent));
  if (readable && String(sent).trim() !== '' && canonicalCurrency(String(sent)) === canonicalCurrency(expected))
    return undefined;
  const shown = readable ? JSON.stringify(sent) : 'unreadable';
  return `currency ${shown} instead of ${canonicalCurrency(expected)}`;
}

// An expectation the plugin did not record itself: a token without its binding, or values a caller
// passed to reconcilePayment for a payment the store no longer knows. A customer can edit the
// payment_id of a return URL, and a host can pass a wrong amount: neither may mark a payment done.
function unbacked(expected: OutcomeExpectation): boolean {
  return expected.origin === 'token' || expected.origin === 'caller';
}

// An unbacked expectation whose tracking id pins the payment down, and still differs (the amount).
function genuinelyMismatched(verification: VerifiedPayment, expected: OutcomeExpectation): boolean {
  if (expected.origin === 'caller')
    return (
      expected.developerTrackingId !== undefined && verification.developerTrackingId === expected.developerTrackingId
    );
  return expected.identifiesPayment === true && (expected.trackingMatches?.(verification.developerTrackingId) ?? false);
}

/** Whether a verify failed because the service does not know the payment (404 or `NOT_FOUND`). */
export function isNotFound(error: PaymentsError): boolean {
  return error.code === 'NOT_FOUND' || (error instanceof PaymentsApiError && error.httpStatus === 404);
}
