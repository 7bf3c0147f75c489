import {
  millimes,
  normalizeMillimes,
  PaymentsError,
  PaymentsStoreUnavailableError,
  PaymentsValidationError,
  type PaymentsFieldError,
  type ReconcileOptions,
  type ReconcileResult,
  type PaymentVerifier,
} from '../api/index.js';
import { type PaymentsLogger, assertNever } from '../common/index.js';
import type { OutcomeRecord, PendingPayment, PaymentsStore } from '../store/index.js';
import { sleep, type SharedClock } from '../time/index.js';
import { StrangerBudget, verifyGate, type ReturnAsk } from './settlement.gate.js';
import { UnpaidAllowance } from './settlement.evidence.js';
import type { PathEvidence } from './settlement.evidence.js';
import { doneOutcomeOf, type OutcomeExpectation } from './settlement.decision.js';
import type { Settlements } from './settlement.request.js';
import { SETTLEMENT_WAITS } from './settlement.waits.js';

/**
 * `reconcilePayment`: the return check (a customer back on `success_link`), and any host that asks
 * for one payment's outcome. It works out what to expect, hands the payment to the settlement
 * runner, and maps the runner's result to a {@link ReconcileResult} (exhaustively).
 */
export class PaymentReconciler {
  /**
   * @param store the record and the queue (what was generated)
   * @param runner settles the payment
   * @param verifier reads a payment from the service (only for a done payment without a record)
   * @param logger where surprises are reported
   * @param clock the time shared with the other instances (the age of a pending record)
   * @param orders the order screen, when orders are kept: a confirmation that lost its order to
   *   another payment inside its transaction is settled again at once, as the duplicate it is
   * @param lookAgain asks the pending lane to look for a payment nothing is known of yet (a few store
   *   reads, no verify): a return that comes before a slow store took `generatePayment`'s write
   * @param graceSecs `reconciliation.graceSecs` (default 60): how long past its session's end a
   *   payment's allowance of returns lasts (settlement.evidence.ts)
   */
  constructor(
    private readonly store: PaymentsStore,
    private readonly runner: Settlements,
    private readonly verifier: PaymentVerifier,
    private readonly logger: PaymentsLogger,
    private readonly clock: SharedClock,
    private readonly orders?: { takeLostRace(paymentId: string): boolean },
    private readonly lookAgain?: (paymentId: string) => void,
    graceSecs = 60,
  ) {
    this.#strangers = new StrangerBudget(clock.local, store.rateLimits);
    this.#unpaid = new UnpaidAllowance(store.rateLimits, graceSecs);
  }

  readonly #strangers: StrangerBudget;
  readonly #unpaid: UnpaidAllowance;

  /** See `PaymentsOperations.reconcilePayment`; `paymentId` is already validated. */
  async reconcile(paymentId: string, options: ReconcileOptions = {}): Promise<ReconcileResult> {
    const source = options.source ?? 'return';
    let ask: ReturnAsk = { stage: 'return', path: source, notFound: this.#strangers.notFound(paymentId) };
    let expected: OutcomeExpectation | undefined;
    let pendingLane: PathEvidence | undefined;
    // The verify gate decides (settlement.gate.ts); what it asks for is read or spent here.
    for (let asking = true; asking;) {
      const gate = verifyGate(ask);
      switch (gate.kind) {
        case 'ask':
          ask = await this.#answer(gate.what, ask, paymentId);
          // Checked on every answer, a done payment's included: an edited return URL never reads "paid".
          if (gate.what === 'records' && ask.known)
            expected = this.#expectationFor(
              paymentId,
              options,
              ask.known.entry ?? undefined,
              ask.known.record ?? undefined,
            );
          break;
        case 'not-found':
          throw gate.error;
        case 'pending':
          if (gate.lookAgain) this.lookAgain?.(paymentId);
          return { paymentId, status: gate.status, outcome: 'pending', handled: false };
        case 'verify':
          pendingLane = gate.pendingLane;
          asking = false;
          break;
        default:
          return assertNever(gate);
      }
    }
    const request = { paymentId, source, expected, pendingLane };
    let result = await this.runner.settle(request);
    // A customer back from a second payment of a paid order is told so, not that handlers failed.
    if (result.kind === 'handlers-failed' && this.orders?.takeLostRace(paymentId))
      result = await this.runner.settle(request);
    this.#strangers.note(paymentId, result);
    if ((result.kind === 'handled' || result.kind === 'handlers-failed') && expected?.amount === undefined) {
      // Nothing said what amount was asked for (no `expected`, and the memory store lost its
      // record in a restart, or reconciliation gave up on it): whoever reads the logs must know.
      this.logger.warn(
        `reconcilePayment: payment ${paymentId} was settled without comparing its amount (${result.verification.amount} verified): nothing recorded it; pass expected.amount`,
      );
    }
    switch (result.kind) {
      case 'handled':
        return { paymentId, status: result.verification.status, outcome: result.outcome, handled: true };
      case 'pending':
        return { paymentId, status: result.verification.status, outcome: 'pending', handled: false };
      case 'mismatch':
        return { paymentId, status: result.verification.status, outcome: 'mismatch', handled: false };
      case 'handlers-failed':
        return {
          paymentId,
          status: result.verification.status,
          outcome: result.outcome,
          handled: false,
          error: result.error,
        };
      case 'order-duplicate': {
        // The order is paid by another payment: tell the return page so, never "paid" twice.
        const settledBy = result.settledBy.paymentId;
        const status = result.verification.status;
        return result.error === undefined
          ? { paymentId, status, outcome: 'duplicate', handled: true, settledBy }
          : { paymentId, status, outcome: 'duplicate', handled: false, settledBy, error: result.error };
      }
      case 'duplicate':
        return this.#doneOutcome(paymentId, expected);
      case 'busy':
        return this.#awaitOther(paymentId, expected);
      case 'verify-failed':
        throw result.error;
      case 'store-unavailable':
        throw new PaymentsStoreUnavailableError(paymentId, result.error, 'reconcilePayment');
      case 'foreign':
        // The caller's expectation names another payment (an edited return URL, a wrong id):
        // not this payment's outcome, so nothing was recorded or emitted and nothing ran.
        this.logger.warn(
          `reconcilePayment: payment ${paymentId} is not the one expected (${result.problems.join('; ')}); nothing recorded`,
        );
        return { paymentId, status: result.verification?.status ?? '', outcome: 'mismatch', handled: false };
      case 'rate-limited':
        // Only a webhook token without a binding is gated; a return never is.
        return { paymentId, status: '', outcome: 'pending', handled: false };
      case 'deferred':
        // Verified moments ago without settling it (from this instance's memory), or the service
        // is failing or rate-limiting: no call now. A failure is reported as it was.
        if (!result.pending)
          throw (
            result.error ??
            new PaymentsError(`reconcilePayment: verify deferred for ${result.retryAfterSecs} s`, 'API_ERROR')
          );
        return {
          paymentId,
          status: (await this.store.getOutcome(paymentId).catch(() => undefined))?.status ?? '',
          outcome: 'pending',
          handled: false,
        };
      default:
        return assertNever(result);
    }
  }

  // What the verify gate asked for: the store's record and queue entry (`null`: the store did not
  // answer), the strangers' budget (an id nothing is known of), or a slot of the unpaid allowance.
  async #answer(what: 'records' | 'strangers' | 'allowance', ask: ReturnAsk, paymentId: string): Promise<ReturnAsk> {
    switch (what) {
      case 'records': {
        await this.clock.sync();
        // `null`: the store did not answer (then nothing is known, and the runner reports the store).
        const record = await this.store.getOutcome(paymentId).catch(() => null);
        const queued = await this.store.findPending(paymentId).catch(() => null);
        return { ...ask, known: { record, entry: queued, now: this.clock.now() } };
      }
      case 'strangers':
        return { ...ask, strangers: await this.#strangers.admit(paymentId) };
      case 'allowance':
        return {
          ...ask,
          allowance: await this.#unpaid.take(paymentId, ask.known?.entry ?? undefined, this.clock.now()),
        };
      default:
        return assertNever(what);
    }
  }

  /**
   * What the verified answer must match: the caller's `expected` merged field by field with what
   * the plugin recorded at generation (the pending entry), so that passing only a tracking id
   * still has the amount checked. A caller's value that contradicts the record means the caller
   * names another payment than it thinks (a return URL's `payment_id` is the customer's to edit):
   * refused before any claim or verify call, so that payment's own outcome stays untouched.
   */
  #expectationFor(
    paymentId: string,
    options: ReconcileOptions,
    queued: PendingPayment | undefined,
    record: OutcomeRecord | undefined,
  ): OutcomeExpectation | undefined {
    const given = options.expected ?? {};
    const problem = given.amount === undefined || given.amount === null ? undefined : millimes(given.amount);
    if (problem)
      throw new PaymentsValidationError([{ field: 'expected.amount', messages: [problem] }], 'reconcilePayment input');
    const givenAmount =
      given.amount === undefined || given.amount === null ? undefined : normalizeMillimes(given.amount);
    const givenTracking = given.developerTrackingId ?? undefined;
    // What the payment was generated with: its queue entry while open; once handled, its record
    // (whose verified amount and tracking id matched what was expected; a mismatch's did not).
    const handled = record && record.outcome !== 'pending' && record.outcome !== 'mismatch' ? record : undefined;
    const pending = queued ?? (handled && { amount: handled.amount, developerTrackingId: handled.developerTrackingId });

    refuseConflicts(paymentId, pending, givenAmount, givenTracking);

    const amount = givenAmount ?? pending?.amount;
    const developerTrackingId = givenTracking ?? pending?.developerTrackingId;
    if (amount === undefined && developerTrackingId === undefined) return undefined;
    // Values the caller passed are backed when they agree with the record (checked above).
    return { amount, developerTrackingId, origin: pending ? 'binding' : 'caller' };
  }

  /**
   * Waits for the attempt that holds a payment's claim (another path, another instance) to record
   * its result, reading the record every `pollMs` for up to `waitMs`. Costs no verify call.
   * @returns `settled` and the record once it shows a result (an outcome other than pending,
   *   handlers not failed); else `settled: false` and the last record seen, if any
   */
  async #awaitOutcome(
    paymentId: string,
    waitMs: number,
    pollMs: number,
  ): Promise<{ settled: boolean; record?: OutcomeRecord }> {
    let last: OutcomeRecord | undefined;
    for (let waited = 0; waited < waitMs; waited += pollMs) {
      await sleep(this.clock, pollMs);
      last = (await this.store.getOutcome(paymentId).catch(() => undefined)) ?? last;
      if (last && last.outcome !== 'pending' && last.handlers !== 'failed') return { settled: true, record: last };
    }
    return { settled: false, record: last };
  }

  // Done earlier by another path: the record says what it was, without a call to the service.
  async #doneOutcome(paymentId: string, expected: OutcomeExpectation | undefined): Promise<ReconcileResult> {
    const record = await this.store.getOutcome(paymentId).catch(() => undefined);
    if (record) return answerOf(record, expected);
    // The record unread (the store away): a payment settled as a mismatch must not read "paid".
    const verified = await this.verifier.verify(paymentId);
    return {
      paymentId,
      status: verified.status,
      outcome: doneOutcomeOf(paymentId, verified, expected),
      handled: false,
    };
  }

  // Another path (usually the webhook) is handling it right now: a customer back on the return
  // page is worth a short wait for its result rather than a "still processing".
  async #awaitOther(paymentId: string, expected: OutcomeExpectation | undefined): Promise<ReconcileResult> {
    const { settled, record } = await this.#awaitOutcome(
      paymentId,
      SETTLEMENT_WAITS.returnWaitMs,
      SETTLEMENT_WAITS.returnPollMs,
    );
    if (settled && record) return answerOf(record, expected);
    // Still in another path's hands: not settled yet, with the last status the service sent (an
    // earlier attempt's record), or '' when none is known; never a status the service did not send.
    return { paymentId, status: record?.status ?? '', outcome: 'pending', handled: false };
  }
}

// A settled payment's result as its record tells it (a duplicate names the payment that settled its order).
/**
 * Refuses an expectation that contradicts what the payment was generated with (`generated`: its
 * queue entry, or the record of its outcome): the caller names another payment than it thinks.
 * @throws PaymentsValidationError naming each field that differs
 */
function refuseConflicts(
  paymentId: string,
  generated: { amount?: string; developerTrackingId?: string } | undefined,
  amount: string | undefined,
  developerTrackingId: string | undefined,
): void {
  const conflicts: PaymentsFieldError[] = [];
  if (generated?.amount !== undefined && amount !== undefined && amount !== generated.amount) {
    conflicts.push({
      field: 'expected.amount',
      messages: [`differs from the amount payment ${paymentId} was generated with`],
    });
  }
  if (generated && developerTrackingId !== undefined && developerTrackingId !== generated.developerTrackingId) {
    conflicts.push({
      field: 'expected.developerTrackingId',
      messages: [`differs from the tracking id payment ${paymentId} was generated with`],
    });
  }
  if (conflicts.length > 0) throw new PaymentsValidationError(conflicts, 'reconcilePayment input');
}

/**
 * The answer a record gives a return that expects `expected`. The expectation was checked against
 * what the store held when the return began; the payment may have been handled since (its queue
 * entry gone, its record no longer pending), so a handled record is checked again: an edited
 * return URL never reads another order's outcome.
 */
function answerOf(record: OutcomeRecord, expected: OutcomeExpectation | undefined): ReconcileResult {
  if (record.outcome !== 'pending' && record.outcome !== 'mismatch')
    refuseConflicts(record.paymentId, record, expected?.amount, expected?.developerTrackingId);
  return fromRecord(record);
}

function fromRecord(record: OutcomeRecord): ReconcileResult {
  const result: ReconcileResult = {
    paymentId: record.paymentId,
    status: record.status,
    outcome: record.outcome,
    handled: false,
  };
  if (record.outcome === 'duplicate' && record.settledBy !== undefined) result.settledBy = record.settledBy;
  return result;
}
