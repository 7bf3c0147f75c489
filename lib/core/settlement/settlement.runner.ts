import { randomUUID } from 'node:crypto';
import { PaymentsError, type VerifiedPayment } from '../api/index.js';
import { type PaymentsLogger, assertNever, describe } from '../common/index.js';
import { type ClaimOutcome, type OutcomeSource, type PaymentsStore, isTransactional } from '../store/index.js';
import { NO_TELEMETRY, type SettleTrace, type TelemetryHooks } from '../telemetry/index.js';
import {
  PaymentMismatchEvent,
  takeAfterCommit,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
  type PaymentRefundedEvent,
} from './payment.events.js';
import { decide, isNotFound, type HandledOutcome, type OutcomeExpectation, type VerifyAnswer } from './settlement.decision.js';
import { VerifyBudget } from './settlement.budget.js';
import { finishAttempt, finishOf, handleInTransaction, runAfterCommit, type AttemptRecord } from './settlement.commit.js';
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
  emitOperation(name: PaymentEventName, event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent): Promise<void> {
    return this.#quietly(name, () => this.#operations?.(name, event));
  }

  // Handlers that are told, never trusted to settle anything (operations, a mismatch): a failure is only logged.
  async #quietly(name: PaymentEventName, dispatch: () => Promise<void> | undefined): Promise<void> {
    try {
      await dispatch();
    } catch (error) {
      this.logger.error(`a ${name} handler failed: ${describe(error)}`);
    }
  }

  async #run(request: SettleRequest, trace: SettleTrace): Promise<SettleResult> {
    const { paymentId, source, token } = request;
    if (source !== 'reconciliation') {
      const deferral = this.budget.admit(paymentId, source);
      if (deferral) {
        // Not asked now (the service failing or rate-limiting): a queued payment is re-checked when
        // the pause ends, not at the session's end. A stranger's id (no entry) queues nothing.
        if (!deferral.pending) this.options.recheckSoon?.(paymentId, undefined, deferral.retryAfterSecs * 1000);
        return { kind: 'deferred', pending: deferral.pending, retryAfterSecs: deferral.retryAfterSecs, error: deferral.error };
      }
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
    if (!unbound || !token) return this.#settleClaimed(paymentId, source, expected, key, owner, trace, request.onHandlers);

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
    const result = await this.#settleClaimed(paymentId, source, expected, key, owner, trace, request.onHandlers);
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
    onHandlers?: () => void,
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
        // No answer (down, rate-limited, timed out): a service that loses its redeliveries must not
        // leave the payment to the session's end. A 404 is an answer: a stranger's id queues nothing.
        if (source !== 'reconciliation' && !isNotFound(error)) this.options.recheckSoon?.(paymentId, expected, (decision.rateLimitedSecs ?? 0) * 1000);
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
        // The service's state may lag its own webhook: the plugin re-checks soon rather than at
        // the session's end (the sweep's own checks schedule their next one themselves).
        if (source !== 'reconciliation') this.options.recheckSoon?.(paymentId, expected);
        return { kind: 'pending', verification };
      }
      case 'mismatch': {
        const verification = verified(answer);
        const problems = decision.problems.join('; ');
        this.logger.error(`${source}: payment ${paymentId} is ${verification.status} at the service but NOT confirmed: ${problems}`);
        await this.#finish(key, owner, decision.finish, { verification, outcome: 'mismatch', source, handlers: 'none', lastError: problems });
        const mismatch = new PaymentMismatchEvent(verification, source, this.options.registration, decision.problems);
        await this.#quietly('payment.mismatch', () => this.#dispatcher?.('payment.mismatch', mismatch));
        return { kind: 'mismatch', verification, problems: decision.problems };
      }
      case 'settle':
        onHandlers?.();
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
    // One order, one charge (settlement.duplicates.ts): a paid payment of an order another settled is a duplicate.
    const screened = outcome === 'confirmed' && (await this.options.orders?.screen({ verification, source, key, owner, dispatch: this.#dispatcher, trace }));
    if (screened) {
      // A duplicate's handler (or refund) failed: it runs again soon, as a failed confirmation does.
      if (screened.kind === 'order-duplicate' && screened.error !== undefined) this.#recheckFailed(verification, source);
      return screened;
    }
    const dispatcher = this.#dispatcher;
    const Event = OUTCOME_EVENT_CLASSES[outcome];
    const event = new Event(outcome, verification, source, this.options.registration, new Date(this.options.clock.now()));
    const handle = async () => {
      if (!dispatcher) throw new Error('no outcome handlers are registered yet');
      await trace.handlers(name, () => dispatcher(name, event));
    };
    if (isTransactional(this.store)) {
      // Exactly-once effects (settlement.commit.ts): the handlers, the done marker and the outcome
      // record in one transaction; a claim lost meanwhile rolls it all back and answers busy.
      const finish = finishOf(this.options, key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' });
      const ended = await handleInTransaction({
        store: this.store,
        event,
        handle,
        key,
        owner,
        finish,
        leaseMs: this.options.leaseMs,
        logger: this.logger,
        clock: this.options.clock,
      });
      if (ended === 'committed') await runAfterCommit(event, true, this.logger);
      if (ended === 'lost') this.logger.warn(`${source}: the claim on ${paymentId} was lost while its ${name} handlers ran; their writes were rolled back`);
      if (typeof ended === 'object') return this.#handlersFailed(event, name, key, owner, ended.failed);
      return ended === 'committed' ? { kind: 'handled', outcome, verification } : { kind: 'busy' };
    }

    const renewal = renewWhileHandling(this.store, key, owner, this.options.leaseMs, paymentId, this.logger, this.options.clock);
    try {
      await handle();
    } catch (error) {
      await renewal.stop();
      return this.#handlersFailed(event, name, key, owner, error);
    }
    await renewal.stop();
    const marked = await this.#finish(key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' });
    await runAfterCommit(event, marked, this.logger);
    return { kind: 'handled', outcome, verification };
  }

  // A handler threw (or, transactional, the transaction failed and rolled back): the claim is
  // released and the failure recorded, so that the next webhook, return or reconciliation runs
  // the handlers again. Their afterCommit callbacks are dropped; the next run registers them again.
  async #handlersFailed(event: PaymentOutcomeEvent, name: PaymentEventName, key: string, owner: string, error: unknown): Promise<SettleResult> {
    const { paymentId, verification, source } = event;
    const outcome = event.outcome as HandledOutcome;
    takeAfterCommit(event);
    const message = describe(error);
    this.logger.warn(`${source}: a ${name} handler failed for ${paymentId}; it will run again on the next webhook, return or reconciliation: ${message}`);
    await this.#finish(key, owner, 'release', { verification, outcome, source, handlers: 'failed', lastError: message });
    this.#recheckFailed(verification, source);
    return { kind: 'handlers-failed', outcome, verification, error: message };
  }

  // A webhook's or a return's handlers failed: re-checked soon (the sweep's own checks schedule theirs).
  #recheckFailed({ paymentId, amount, developerTrackingId }: VerifiedPayment, source: OutcomeSource): void {
    if (source !== 'reconciliation') this.options.recheckSoon?.(paymentId, { amount, developerTrackingId, origin: 'binding' });
  }

  // Ends the attempt (settlement.commit.ts, finishAttempt). Returns whether the claim was marked done.
  #finish(key: string, owner: string, claim: 'done' | 'release', attempt: AttemptRecord): Promise<boolean> {
    return finishAttempt(this.store, this.options, this.logger, { key, owner, claim, attempt });
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

function verified(answer: VerifyAnswer): VerifiedPayment {
  if (!answer.ok) throw new TypeError('a decision on a failed verify carries no verification');
  return answer.verification;
}
