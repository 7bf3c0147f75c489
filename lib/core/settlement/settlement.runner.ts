import { PaymentsError, type PaymentVerifier, type VerifiedPayment } from '../api/index.js';
import { type PaymentsLogger, assertNever, describe } from '../common/index.js';
import type { OutcomeSource, PaymentsStore } from '../store/index.js';
import type { SettleSummary, TelemetryHooks } from '../telemetry/index.js';
import {
  OUTCOME_EVENT_CLASSES,
  OutcomeHandlers,
  PaymentMismatchEvent,
  PaymentEvents,
  type HandlerContext,
  type HandlerLookup,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentEventName,
  type PaymentRefundedEvent,
} from './payment.events.js';
import {
  decideAnswer,
  decideFailure,
  isNotFound,
  type AnsweredDecision,
  type FailedDecision,
  type HandledOutcome,
} from './settlement.decision.js';
import { verifyGate, VerifyBudget, type VerifyGate } from './settlement.gate.js';
import { queuedExpectation } from './settlement.rechecks.js';
import { Attempt, type AttemptDeps, type Claimed, type SettlementRunnerOptions } from './settlement.attempt.js';
import { commitHandlers, commitPathFor, runAfterCommit, type CommitPathDecision } from './settlement.commit.js';
import { orderScreenOf } from './settlement.orders.js';
import type { SettleRequest, SettleResult, Settlements } from './settlement.request.js';

/** A verified payment whose outcome's handlers run. */
interface Settling {
  verification: VerifiedPayment;
  outcome: HandledOutcome;
  name: PaymentEventName;
}

/**
 * The one owner of a payment's claim, from claim to finish. Every path (webhook, return,
 * reconciliation) hands it a {@link SettleRequest}; it claims the payment (one {@link Attempt} per
 * settle), asks the service (`verify_payment`), lets the decision (settlement.decision.ts) judge the
 * answer, runs the handlers while renewing the claim (settlement.commit.ts), and marks the payment
 * done or releases it. One claim per payment makes the paths and the instances agree: whichever
 * comes first does the work, once; the others find it busy or done and spend no service call.
 */
export class SettlementRunner implements Settlements {
  /** The handlers the front end registered: invoked from here, through nothing else. */
  readonly #handlers = new OutcomeHandlers();
  /** Settles in progress, so that drain() can wait for them. */
  readonly #inFlight = new Set<Promise<SettleResult>>();
  readonly #deps: AttemptDeps;
  /** Where the handlers' writes and the done marker commit: fixed by the store and the inbox. */
  readonly #commitPath: CommitPathDecision;

  /**
   * @param options leases and TTLs
   * @param store claims, bindings, the queue and the record
   * @param verifier reads a payment from the service (`verify_payment`, the api layer's call)
   * @param logger where problems are reported
   * @param budget the verify budget webhooks and returns are held to (reconciliation is not)
   */
  constructor(
    private readonly options: SettlementRunnerOptions,
    private readonly store: PaymentsStore,
    private readonly verifier: PaymentVerifier,
    private readonly logger: PaymentsLogger,
    private readonly budget: VerifyGate = new VerifyBudget(),
  ) {
    this.#deps = { store, options, logger };
    this.#commitPath = commitPathFor(store, options.inbox);
  }

  /** Sets the handlers' lookup (the Nest module's listeners, the Express router's callbacks...). */
  setHandlers(lookup: HandlerLookup | undefined): void {
    this.#handlers.set(lookup);
  }

  /** Whether a lookup is set. */
  get hasHandlers(): boolean {
    return this.#handlers.ready;
  }

  /** Runs one settlement; never throws: every result is a {@link SettleResult}. */
  settle(request: SettleRequest): Promise<SettleResult> {
    const settling = this.#run(new Attempt(request, this.#deps));
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
   * Runs `work` while this runner holds the payment's claim, then releases it: bookkeeping that must
   * not race a settle (reconciliation's record of an overdue payment). Nothing runs when the payment is
   * done or busy.
   * @returns `held` once `work` ran; `done` or `busy` as the claim found the payment
   * @throws what the store threw while claiming, or what `work` threw (the claim is released)
   */
  hold(paymentId: string, source: OutcomeSource, work: () => Promise<void>): Promise<'held' | 'done' | 'busy'> {
    return new Attempt({ paymentId, source }, this.#deps).hold(work);
  }

  /**
   * Emits an operation's event (capture, refund, cancellation: the service has already done it):
   * handler failures are logged, never thrown. Never throws.
   */
  emitOperation(
    name: PaymentEventName,
    event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
  ): Promise<void> {
    return this.#quietly(name, () => this.#handlers.tell(name, event));
  }

  // Handlers that are told, never trusted to settle anything (operations, a mismatch): a failure is only logged.
  async #quietly(name: PaymentEventName, dispatch: () => Promise<void>): Promise<void> {
    try {
      await dispatch();
    } catch (error) {
      this.logger.error(`a ${name} handler failed: ${describe(error)}`);
    }
  }

  async #run(attempt: Attempt): Promise<SettleResult> {
    const { paymentId, source } = attempt;
    const gate = verifyGate({ stage: 'claim', path: source, budget: () => this.budget.admit(paymentId, source) });
    switch (gate.kind) {
      case 'verify':
        break;
      case 'deferred': {
        const { deferral, recheckInMs } = gate;
        if (recheckInMs !== undefined) attempt.recheckSoon(undefined, recheckInMs);
        return {
          kind: 'deferred',
          pending: deferral.pending,
          retryAfterSecs: deferral.retryAfterSecs,
          error: deferral.error,
        };
      }
      default:
        return assertNever(gate);
    }
    // Every path dates what it writes on the shared time: a webhook to an instance that has not
    // measured it yet would date its records with its own clock (an hour ahead freezes the others' return pages).
    // Measured only when due: otherwise the shared time is known, and the settle does not wait a turn for it.
    const { clock } = this.options;
    if (clock.due && !(await clock.sync())) {
      this.logger.error(`${source}: the store's clock is out of reach; ${paymentId} is not claimed until it answers`);
      return { kind: 'store-unavailable', error: "the store's clock is out of reach" };
    }
    let claimed: Claimed;
    try {
      claimed = await attempt.claim();
    } catch (error) {
      this.logger.error(`${source}: store unreachable while claiming ${paymentId}: ${describe(error)}`);
      return { kind: 'store-unavailable', error: describe(error) };
    }
    if (claimed.kind === 'foreign')
      return { kind: 'foreign', problems: ['webhook token was issued for another payment'] };
    const { claim, unbound } = claimed;
    if (claim === 'done') return { kind: 'duplicate' };
    if (claim === 'busy') return { kind: 'busy' };
    attempt.expected = claimed.expected;
    if (!unbound) return this.#settleClaimed(attempt);

    const refused = await attempt.gate(this.options.unbound, unbound);
    if (refused) return refused;
    const result = await this.#settleClaimed(attempt);
    await this.options.unbound.settled(paymentId, unbound, result);
    return result;
  }

  // The claim is held: verify, decide, and carry the decision out.
  async #settleClaimed(attempt: Attempt): Promise<SettleResult> {
    let verification: VerifiedPayment;
    try {
      verification = await this.verifier.verify(attempt.paymentId);
    } catch (caught) {
      const error = caught instanceof PaymentsError ? caught : new PaymentsError(describe(caught), 'API_ERROR');
      const decision = decideFailure(error, attempt.expected);
      this.budget.note(attempt.paymentId, attempt.source, decision, error);
      return this.#unanswered(attempt, error, decision);
    }
    const decision = decideAnswer(attempt.paymentId, verification, attempt.expected);
    this.budget.note(attempt.paymentId, attempt.source, decision, undefined);
    return this.#answered(attempt, verification, decision);
  }

  // No usable answer: nothing to record; the claim goes back.
  async #unanswered(attempt: Attempt, error: PaymentsError, decision: FailedDecision): Promise<SettleResult> {
    await attempt.release();
    switch (decision.kind) {
      case 'foreign':
        return { kind: 'foreign', problems: decision.problems };
      case 'unverified':
        this.logger.warn(`${attempt.source}: could not verify ${attempt.paymentId}: ${error.message}`);
        // No answer (down, rate-limited, timed out): a service that loses its redeliveries must not
        // leave the payment to the session's end. A 404 is an answer: a stranger's id queues nothing.
        if (!isNotFound(error))
          attempt.recheckSoon(queuedExpectation(attempt.expected), (decision.rateLimitedSecs ?? 0) * 1000);
        return {
          kind: 'verify-failed',
          error,
          retryAfterSecs: decision.retryAfterSecs,
          rateLimitedSecs: decision.rateLimitedSecs,
        };
      default:
        return assertNever(decision);
    }
  }

  async #answered(attempt: Attempt, verification: VerifiedPayment, decision: AnsweredDecision): Promise<SettleResult> {
    const { paymentId, source } = attempt;
    switch (decision.kind) {
      case 'foreign':
        await attempt.release();
        return { kind: 'foreign', problems: decision.problems, verification };
      case 'pending':
        await attempt.finish('release', { verification, outcome: 'pending', handlers: 'none' });
        // The service's state may lag its own webhook: the plugin re-checks soon rather than at the session's end.
        attempt.recheckSoon(queuedExpectation(attempt.expected, verification), 0, attempt.request.pendingLane);
        return { kind: 'pending', verification };
      case 'mismatch': {
        const problems = decision.problems.join('; ');
        this.logger.error(
          `${source}: payment ${paymentId} is ${verification.status} at the service but NOT confirmed: ${problems}`,
        );
        await attempt.finish(decision.finish, {
          verification,
          outcome: 'mismatch',
          handlers: 'none',
          lastError: problems,
        });
        const mismatch = new PaymentMismatchEvent(verification, source, this.options.registration, decision.problems);
        await this.#quietly(PaymentEvents.MISMATCH, () => this.#handlers.notify(PaymentEvents.MISMATCH, mismatch));
        return { kind: 'mismatch', verification, problems: decision.problems };
      }
      case 'settle':
        attempt.request.onHandlers?.();
        return this.#runHandlers(attempt, { verification, outcome: decision.outcome, name: decision.event });
      default:
        return assertNever(decision);
    }
  }

  // The one handler path, whatever the store (settlement.commit.ts): handlers, then the done marker.
  async #runHandlers(attempt: Attempt, settling: Settling): Promise<SettleResult> {
    const { verification, outcome, name } = settling;
    const { orders } = this.options;
    // One order, one charge (settlement.duplicates.ts): a paid or held payment of an order another
    // settled is a duplicate.
    const mode = orderScreenOf(outcome);
    const screened = mode !== 'none' && (await orders?.screen(attempt, verification, this.#handlers, mode));
    // Paid for a cart the order no longer has: a mismatch for a person, never a confirmation.
    if (screened && screened.kind === 'superseded')
      return this.#answered(attempt, verification, { kind: 'mismatch', problems: screened.problems, finish: 'done' });
    if (screened) {
      // A duplicate's handler failed, or its refund is still to send: it runs again soon, as a failed confirmation does.
      if (screened.kind === 'order-duplicate' && (screened.error ?? screened.refundRetry) !== undefined)
        this.#recheckFailed(attempt, verification);
      return screened;
    }
    const context: HandlerContext = { afterCommit: [] };
    const Event = OUTCOME_EVENT_CLASSES[outcome];
    const event = new Event(
      outcome,
      verification,
      attempt.source,
      this.options.registration,
      new Date(this.options.clock.now()),
      context,
    );
    const handle = () =>
      attempt.observe.handlers(name, async () => {
        if (outcome === 'confirmed') await orders?.settleInTransaction(event);
        await this.#handlers.run(name, event);
      });
    const record = { verification, outcome, handlers: 'succeeded' } as const;
    const ended = await commitHandlers({
      store: this.store,
      inbox: this.options.inbox,
      path: this.#commitPath,
      event: name,
      attempt,
      context,
      handle,
      record,
      logger: this.logger,
      clock: this.options.clock,
    });
    switch (ended.kind) {
      case 'committed':
        await runAfterCommit(context, attempt.paymentId, ended.marked, this.logger);
        return { kind: 'handled', outcome, verification };
      case 'lost':
        this.logger.warn(
          `${attempt.source}: the claim on ${attempt.paymentId} was lost while its ${name} handlers ran; their writes were rolled back`,
        );
        return { kind: 'busy' };
      case 'failed':
        return this.#handlersFailed(attempt, settling, ended.error, ended.lapsed);
      default:
        return assertNever(ended);
    }
  }

  // A handler threw (or, transactional, the transaction failed and rolled back): the claim is
  // released and the failure recorded, so that the next webhook, return or reconciliation runs
  // the handlers again. Their afterCommit callbacks are dropped; the next run registers them again.
  // A claim that lapsed meanwhile is only given back: another attempt may have recorded the outcome
  // since (a duplicate, say), and this attempt's view of it is older.
  async #handlersFailed(attempt: Attempt, settling: Settling, error: unknown, lapsed: boolean): Promise<SettleResult> {
    const { paymentId, source } = attempt;
    const { verification, outcome, name } = settling;
    const message = describe(error);
    this.logger.warn(
      `${source}: a ${name} handler failed for ${paymentId}; it will run again on the next webhook, return or reconciliation: ${message}`,
    );
    if (lapsed) await attempt.release();
    else await attempt.finish('release', { verification, outcome, handlers: 'failed', lastError: message });
    this.#recheckFailed(attempt, verification);
    return { kind: 'handlers-failed', outcome, verification, error: message };
  }

  // Handlers that failed run again soon (reconciliation's own checks schedule their next one themselves).
  #recheckFailed(attempt: Attempt, { amount, developerTrackingId }: VerifiedPayment): void {
    attempt.recheckSoon({ amount, developerTrackingId, origin: 'binding' });
  }
}

/**
 * The settlements as telemetry sees them: each settle of the wrapped runner inside a span whose
 * context the verify call and the handlers run in, the handlers timed through the request's
 * observer, and the result summarised for the span and the metric. The runner knows nothing of it.
 */
export class TracedSettlements implements Settlements {
  /**
   * @param runner what settles
   * @param telemetry what observes each settle
   */
  constructor(
    private readonly runner: Settlements,
    private readonly telemetry: TelemetryHooks,
  ) {}

  /** @inheritdoc */
  settle(request: SettleRequest): Promise<SettleResult> {
    const { paymentId, source } = request;
    return this.telemetry.settle(
      paymentId,
      source,
      (trace) => this.runner.settle({ ...request, observe: trace }),
      settleSummary,
    );
  }

  /** @inheritdoc */
  hold(paymentId: string, source: OutcomeSource, work: () => Promise<void>): Promise<'held' | 'done' | 'busy'> {
    return this.runner.hold(paymentId, source, work);
  }
}

/**
 * What a settle result says to telemetry. Exhaustive: a new kind of result must say here whether it
 * is an error and which outcome it tells, or the compiler refuses it.
 */
export function settleSummary(result: SettleResult): SettleSummary {
  switch (result.kind) {
    case 'handled':
      return { result: result.kind, outcome: result.outcome, failed: false };
    case 'order-duplicate':
      return { result: result.kind, outcome: result.outcome, failed: false };
    case 'handlers-failed':
      return { result: result.kind, outcome: result.outcome, failed: true };
    case 'pending':
      return { result: result.kind, outcome: 'pending', failed: false };
    case 'mismatch':
      return { result: result.kind, outcome: 'mismatch', failed: true };
    case 'verify-failed':
    case 'store-unavailable':
      return { result: result.kind, failed: true };
    case 'duplicate':
    case 'busy':
    case 'foreign':
    case 'rate-limited':
    case 'deferred':
      return { result: result.kind, failed: false };
    default:
      return assertNever(result);
  }
}
