import { randomUUID } from 'node:crypto';
import { PaymentsError } from '../api/payments.errors.js';
import type { VerifiedPayment } from '../api/payments.types.js';
import type { PaymentsLogger } from '../client/payments.logger.js';
import type { ClaimOutcome, HandlerResult, OutcomeRecord, OutcomeSource, PaymentOutcome, PaymentsStore } from '../store/payments.store.js';
import { NO_TELEMETRY, type SettleTrace, type TelemetryHooks } from '../telemetry/telemetry.hooks.js';
import {
  PaymentMismatchEvent,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentEventName,
  type PaymentRefundedEvent,
} from './payment.events.js';
import { decide, type HandledOutcome, type OutcomeExpectation, type VerifyAnswer } from './settlement.decision.js';
import { assertNever, describe } from './settlement.describe.js';
import { VerifyBudget } from './settlement.budget.js';
import { renewWhileHandling } from './settlement.lease.js';
import { outcomeKey, type SettlementRunnerOptions, type SettleRequest, type SettleResult } from './settlement.request.js';
import { OUTCOME_EVENT_CLASSES, type OperationDispatcher, type OutcomeDispatcher } from './outcome.handlers.js';

/**
 * The one owner of a payment's claim, from claim to finish. Every path (webhook, return,
 * reconciliation) hands it a {@link SettleRequest}; it claims the payment, asks the service
 * (`verify_payment`), lets {@link decide} judge the answer, runs the handlers while renewing the
 * claim, and marks the payment done or releases it. One claim per payment makes the paths and the
 * instances agree: whichever comes first does the work, once; the others find it busy or done and
 * spend no call to the service.
 *
 * Store round trips of a webhook of a payment that settled: findBindingAndClaim, then verify, then
 * one finishOutcome for done marker, queue and record together: 2 round trips.
 */
export class SettlementRunner {
  #dispatcher?: OutcomeDispatcher;
  #operations?: OperationDispatcher;
  /** Settles in progress, so that drain() can wait for them. */
  readonly #inFlight = new Set<Promise<SettleResult>>();

  /**
   * @param options leases and TTLs
   * @param store claims, bindings, the queue and the record
   * @param verify reads a payment from the service
   * @param logger where problems are reported
   * @param telemetry what observes each settle
   * @param budget the verify budget webhooks and returns are held to (the sweep is not)
   */
  constructor(
    private readonly options: SettlementRunnerOptions,
    private readonly store: PaymentsStore,
    private readonly verify: (paymentId: string) => Promise<VerifiedPayment>,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: TelemetryHooks = NO_TELEMETRY,
    private readonly budget: VerifyBudget = new VerifyBudget(),
  ) {}

  /** Sets who runs the handlers (the Nest event bridge, the Express router). */
  setDispatcher(dispatcher: OutcomeDispatcher | undefined, operations?: OperationDispatcher): void {
    this.#dispatcher = dispatcher;
    this.#operations = operations;
  }

  /** Whether a dispatcher is set. */
  get hasDispatcher(): boolean {
    return this.#dispatcher !== undefined;
  }

  /** Runs one settlement; never throws: every result is a {@link SettleResult}. */
  settle(request: SettleRequest): Promise<SettleResult> {
    // The span's context is active in the verify call and the handlers.
    const settling = this.telemetry.settle(request.paymentId, request.source, (trace) => this.#run(request, trace));
    this.#inFlight.add(settling);
    const forget = () => void this.#inFlight.delete(settling);
    settling.then(forget, forget);
    return settling;
  }

  /** Resolves once no settlement is in flight, whichever path started it: close() waits for it. */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Emits an operation's event (capture, refund, cancellation: the service has already done it):
   * handler failures are logged, never thrown. Never throws.
   */
  async emitOperation(name: PaymentEventName, event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent): Promise<void> {
    try {
      await this.#operations?.(name, event);
    } catch (error) {
      this.logger.error(`a ${name} handler failed: ${describe(error)}`);
    }
  }

  // A mismatch's handlers are told, never trusted to settle anything: their failure is only logged.
  async #emitMismatch(event: PaymentMismatchEvent): Promise<void> {
    try {
      await this.#dispatcher?.('payment.mismatch', event);
    } catch (error) {
      this.logger.error(`a payment.mismatch handler failed: ${describe(error)}`);
    }
  }

  /**
   * Waits for the attempt that holds a payment's claim (another path, another instance) to record
   * its result, reading the record every `pollMs` for up to `waitMs`. Costs no verify call.
   * @returns `settled` and the record once it shows a result (an outcome other than pending,
   *   handlers not failed); else `settled: false` and the last record seen, if any
   */
  async awaitOutcome(paymentId: string, waitMs: number, pollMs: number): Promise<{ settled: boolean; record?: OutcomeRecord }> {
    let last: OutcomeRecord | undefined;
    for (let waited = 0; waited < waitMs; waited += pollMs) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      last = (await this.store.getOutcome(paymentId).catch(() => undefined)) ?? last;
      if (last && last.outcome !== 'pending' && last.handlers !== 'failed') return { settled: true, record: last };
    }
    return { settled: false, record: last };
  }

  async #run(request: SettleRequest, trace: SettleTrace): Promise<SettleResult> {
    const { paymentId, source, token } = request;
    if (source !== 'reconciliation') {
      const deferral = this.budget.admit(paymentId, source);
      if (deferral) return { kind: 'deferred', pending: deferral.pending, retryAfterSecs: deferral.retryAfterSecs, error: deferral.error };
    }
    const key = outcomeKey(paymentId);
    const owner = randomUUID();
    let expected = request.expected;
    let claim: ClaimOutcome;
    let unbound = false;
    try {
      if (token) {
        const found = await this.store.findBindingAndClaim(token.id, paymentId, key, owner, this.options.leaseMs);
        if (found.binding && found.binding.paymentId !== paymentId) return { kind: 'foreign', problems: ['webhook token was issued for another payment'] };
        if (found.binding && found.claim) {
          expected = { amount: found.binding.amount, developerTrackingId: found.binding.developerTrackingId, origin: 'binding' };
          claim = found.claim;
        } else {
          unbound = true;
          expected = token.unbound.expected;
          claim = await this.store.claim(key, owner, this.options.leaseMs);
        }
      } else {
        claim = await this.store.claim(key, owner, this.options.leaseMs);
      }
    } catch (error) {
      // The claim may still land after we gave up waiting: give it back so the next attempt does
      // not wait a whole lease (every store sends the release after the claim).
      void this.store.release(key, owner).catch(() => undefined);
      this.logger.error(`${source}: store unreachable while claiming ${paymentId}: ${describe(error)}`);
      return { kind: 'store-unavailable', error: describe(error) };
    }
    if (claim === 'done') return { kind: 'duplicate' };
    if (claim === 'busy') return { kind: 'busy' };
    if (!unbound || !token) return this.#settleClaimed(paymentId, source, expected, key, owner, trace);

    let waitSecs: number | undefined;
    try {
      waitSecs = await token.unbound.gate();
    } catch (error) {
      await this.#release(key, owner);
      this.logger.error(`${source}: store unreachable while rate-limiting a token: ${describe(error)}`);
      return { kind: 'store-unavailable', error: describe(error) };
    }
    if (waitSecs !== undefined) {
      await this.#release(key, owner);
      return { kind: 'rate-limited', retryAfterSecs: waitSecs };
    }
    const result = await this.#settleClaimed(paymentId, source, expected, key, owner, trace);
    await token.unbound.settled(result);
    return result;
  }

  // The claim is held by `owner`: verify, decide, and carry the decision out.
  async #settleClaimed(
    paymentId: string,
    source: OutcomeSource,
    expected: OutcomeExpectation | undefined,
    key: string,
    owner: string,
    trace: SettleTrace,
  ): Promise<SettleResult> {
    let answer: VerifyAnswer;
    try {
      answer = { ok: true, verification: await this.verify(paymentId) };
    } catch (error) {
      answer = { ok: false, error: error instanceof PaymentsError ? error : new PaymentsError(describe(error), 'API_ERROR') };
    }
    const decision = decide(paymentId, answer, expected);
    this.budget.note(paymentId, source, decision, answer.ok ? undefined : answer.error);
    switch (decision.kind) {
      case 'unverified': {
        await this.#release(key, owner);
        const error = (answer as { error: PaymentsError }).error;
        this.logger.warn(`${source}: could not verify ${paymentId}: ${error.message}`);
        return { kind: 'verify-failed', error, retryAfterSecs: decision.retryAfterSecs, rateLimitedSecs: decision.rateLimitedSecs };
      }
      case 'foreign':
        await this.#release(key, owner);
        return answer.ok
          ? { kind: 'foreign', problems: decision.problems, verification: answer.verification }
          : { kind: 'foreign', problems: decision.problems };
      case 'pending': {
        const verification = verified(answer);
        await this.#finish(key, owner, 'release', { verification, outcome: 'pending', source, handlers: 'none' });
        return { kind: 'pending', verification };
      }
      case 'mismatch': {
        const verification = verified(answer);
        const problems = decision.problems.join('; ');
        this.logger.error(`${source}: payment ${paymentId} is ${verification.status} at the service but NOT confirmed: ${problems}`);
        await this.#finish(key, owner, decision.finish, { verification, outcome: 'mismatch', source, handlers: 'none', lastError: problems });
        await this.#emitMismatch(new PaymentMismatchEvent(verification, source, this.options.registration, decision.problems));
        return { kind: 'mismatch', verification, problems: decision.problems };
      }
      case 'settle':
        return this.#runHandlers(paymentId, source, decision.outcome, decision.event, verified(answer), key, owner, trace);
      default:
        return assertNever(decision);
    }
  }

  async #runHandlers(
    paymentId: string,
    source: OutcomeSource,
    outcome: HandledOutcome,
    name: PaymentEventName,
    verification: VerifiedPayment,
    key: string,
    owner: string,
    trace: SettleTrace,
  ): Promise<SettleResult> {
    const renewal = renewWhileHandling(this.store, key, owner, this.options.leaseMs, paymentId, this.logger);
    try {
      const dispatcher = this.#dispatcher;
      if (!dispatcher) throw new Error('no outcome handlers are registered yet');
      const Event = OUTCOME_EVENT_CLASSES[outcome];
      await trace.handlers(name, () => dispatcher(name, new Event(outcome, verification, source, this.options.registration)));
    } catch (error) {
      const message = describe(error);
      this.logger.warn(`${source}: a ${name} handler failed for ${paymentId}; it will run again on the next webhook, return or reconciliation: ${message}`);
      await renewal.stop();
      await this.#finish(key, owner, 'release', { verification, outcome, source, handlers: 'failed', lastError: message });
      return { kind: 'handlers-failed', outcome, verification, error: message };
    }
    await renewal.stop();
    await this.#finish(key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' });
    return { kind: 'handled', outcome, verification };
  }

  // Ends the attempt: the claim marked done (the payment also leaves the reconciliation queue) or
  // released, and the outcome recorded, in one store call. The handlers have run: a failure here
  // is logged, not retried (a later duplicate may then run them again; the record is for people).
  async #finish(key: string, owner: string, claim: 'done' | 'release', attempt: AttemptRecord): Promise<void> {
    const { verification, outcome, source, handlers, lastError } = attempt;
    const paymentId = verification.paymentId;
    const record: Omit<OutcomeRecord, 'attempts'> = {
      paymentId,
      outcome,
      status: verification.status,
      source,
      handlers,
      amount: verification.amount,
      updatedAt: new Date().toISOString(),
    };
    if (verification.developerTrackingId !== undefined) record.developerTrackingId = verification.developerTrackingId;
    if (lastError !== undefined) record.lastError = lastError.slice(0, 500);
    try {
      const marked = await this.store.finishOutcome({
        eventKey: key,
        owner,
        claim,
        doneTtlMs: this.options.doneTtlMs,
        record,
        // A check that found the payment pending is no attempt at its handlers.
        attemptsAdded: outcome === 'pending' ? 0 : 1,
        recordTtlMs: this.options.recordTtlMs,
      });
      if (claim === 'done' && !marked) this.logger.warn(`the claim on ${paymentId} was no longer held when its handlers ended (its lease expired)`);
    } catch (error) {
      this.logger.error(
        `could not ${claim === 'done' ? `mark ${paymentId} done` : `release ${key}`} and record its outcome (${outcome}, handlers ${handlers}): ${describe(error)}`,
      );
    }
  }

  async #release(key: string, owner: string): Promise<void> {
    try {
      await this.store.release(key, owner);
    } catch (error) {
      // The lease expires on its own; the next attempt after it runs the outcome.
      this.logger.error(`could not release ${key}: ${describe(error)}`);
    }
  }
}

/** What one attempt found, for its outcome record. */
interface AttemptRecord {
  verification: VerifiedPayment;
  outcome: PaymentOutcome;
  source: OutcomeSource;
  handlers: HandlerResult;
  lastError?: string;
}

function verified(answer: VerifyAnswer): VerifiedPayment {
  if (!answer.ok) throw new TypeError('a decision on a failed verify carries no verification');
  return answer.verification;
}
