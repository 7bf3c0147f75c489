import { randomUUID } from 'node:crypto';
import { PaymentsError } from '../api/payments.errors.js';
import type { VerifiedPayment } from '../api/payments.types.js';
import type { PaymentsLogger } from '../client/payments.logger.js';
import type { ClaimOutcome, HandlerResult, OutcomeFinish, OutcomeRecord, OutcomeSource, PaymentOutcome, PaymentsStore } from '../store/payments.store.js';
import { isTransactional, type TransactionalPaymentsStore } from '../store/store.transaction.js';
import { findBindingAndClaim, finishOutcome } from '../store/store.operations.js';
import { NO_TELEMETRY, type SettleTrace, type TelemetryHooks } from '../telemetry/telemetry.hooks.js';
import {
  bindTransaction,
  PaymentMismatchEvent,
  takeAfterCommit,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
} from './payment.events.js';
import { decide, type HandledOutcome, type OutcomeExpectation, type VerifyAnswer } from './settlement.decision.js';
import { assertNever, describe } from './settlement.describe.js';
import { renewWhileHandling } from './settlement.lease.js';
import { OUTCOME_EVENT_CLASSES, type OutcomeDispatcher } from './outcome.handlers.js';

/** What {@link SettlementRunner.settle} did. Every front end maps it exhaustively to its own answer. */
export type SettleResult =
  | { kind: 'handled'; outcome: HandledOutcome; verification: VerifiedPayment }
  | { kind: 'duplicate' }
  | { kind: 'busy' }
  | { kind: 'pending'; verification: VerifiedPayment }
  | { kind: 'mismatch'; verification: VerifiedPayment; problems: string[] }
  | { kind: 'foreign'; problems: string[]; verification?: VerifiedPayment }
  | { kind: 'handlers-failed'; outcome: HandledOutcome; verification: VerifiedPayment; error: string }
  | {
      kind: 'verify-failed';
      error: PaymentsError;
      /** How long the caller should wait before the next attempt (a webhook's Retry-After). */
      retryAfterSecs?: number;
      /** Set when the service rate-limited verify (429): how long every path should pause. */
      rateLimitedSecs?: number;
    }
  | { kind: 'rate-limited'; retryAfterSecs: number }
  | { kind: 'store-unavailable'; error: string };

/** A webhook token to settle by: its stored binding, looked up with the claim, says what to expect. */
export interface TokenLookup {
  /** The token's nonce, under which its binding is stored. */
  id: string;
  /** What to do when the store has no binding of the token (a restart with the memory store, an eviction). */
  unbound: {
    /** What the token itself was signed for. */
    expected: OutcomeExpectation;
    /** Run once the payment is claimed, before the verify call: seconds to wait when over a rate limit, else undefined. */
    gate(): Promise<number | undefined>;
    /** Run with the result once the claim is finished (re-binding the token, freeing its rate-limit slot). */
    settled(result: SettleResult): Promise<void>;
  };
}

/** One settlement to run. */
export interface SettleRequest {
  /** The payment. */
  paymentId: string;
  /** The path that asks. */
  source: OutcomeSource;
  /** What to expect of the payment, when known before the claim (return, reconciliation, unsigned webhook). */
  expected?: OutcomeExpectation;
  /** A signed webhook's token: its binding is read in the claim's store round trip. */
  token?: TokenLookup;
}

/** Settings of the runner. */
export interface SettlementRunnerOptions {
  /** How long one attempt may hold a payment's claim, in ms (renewed while handlers run). */
  leaseMs: number;
  /** How long a done outcome is remembered, in ms. */
  doneTtlMs: number;
  /** How long outcome records are kept, in ms. */
  recordTtlMs: number;
  /** The registration's name, put on every event. */
  registration?: string;
}

/** The claim key of a payment's outcome: one per payment, shared by every path and instance. */
export const outcomeKey = (paymentId: string): string => `outcome:${paymentId}`;

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
  /** Settles in progress, so that drain() can wait for them. */
  readonly #inFlight = new Set<Promise<SettleResult>>();

  /**
   * @param options leases and TTLs
   * @param store claims, bindings, the queue and the record
   * @param verify reads a payment from the service
   * @param logger where problems are reported
   * @param telemetry what observes each settle
   */
  constructor(
    private readonly options: SettlementRunnerOptions,
    private readonly store: PaymentsStore,
    private readonly verify: (paymentId: string) => Promise<VerifiedPayment>,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: TelemetryHooks = NO_TELEMETRY,
  ) {}

  /** Sets who runs the handlers (the Nest event bridge, the Express router). */
  setDispatcher(dispatcher: OutcomeDispatcher | undefined): void {
    this.#dispatcher = dispatcher;
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
   * Emits an event whose handlers' failures are only logged (a mismatch; capture, refund and
   * cancellation, which the service has already done). Never throws.
   */
  async emit(name: PaymentEventName, event: PaymentEvent): Promise<void> {
    try {
      await this.#dispatcher?.(name, event);
    } catch (error) {
      this.logger.error(`a ${name} handler failed: ${describe(error)}`);
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
    const key = outcomeKey(paymentId);
    const owner = randomUUID();
    let expected = request.expected;
    let claim: ClaimOutcome;
    let unbound = false;
    try {
      if (token) {
        const found = await findBindingAndClaim(this.store, token.id, paymentId, key, owner, this.options.leaseMs);
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
        await this.emit('payment.mismatch', new PaymentMismatchEvent(verification, source, this.options.registration, decision.problems));
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
    const dispatcher = this.#dispatcher;
    const Event = OUTCOME_EVENT_CLASSES[outcome];
    const event = new Event(outcome, verification, source, this.options.registration);
    const handle = async () => {
      if (!dispatcher) throw new Error('no outcome handlers are registered yet');
      await trace.handlers(name, () => dispatcher(name, event));
    };
    if (isTransactional(this.store)) return this.#runHandlersInTransaction(this.store, event, handle, name, key, owner);

    const renewal = renewWhileHandling(this.store, key, owner, this.options.leaseMs, paymentId, this.logger);
    try {
      await handle();
    } catch (error) {
      await renewal.stop();
      return this.#handlersFailed(event, name, key, owner, error);
    }
    await renewal.stop();
    const marked = await this.#finish(key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' });
    await this.#runAfterCommit(event, marked);
    return { kind: 'handled', outcome, verification };
  }

  // Exactly-once effects: the handlers, the done marker and the outcome record in one transaction
  // of the store's database. The claim is renewed on the store's other connections meanwhile; a
  // claim lost to another attempt rolls everything back instead of committing over its holder.
  async #runHandlersInTransaction(
    store: TransactionalPaymentsStore,
    event: PaymentOutcomeEvent,
    handle: () => Promise<void>,
    name: PaymentEventName,
    key: string,
    owner: string,
  ): Promise<SettleResult> {
    const { paymentId, verification, source } = event;
    const outcome = event.outcome as HandledOutcome;
    let lost = false;
    try {
      await store.runInTransaction(async (scope) => {
        // On PGlite the transaction holds the one connection: a renewal could only queue behind
        // it, and no other instance can take the claim meanwhile (the scope renews it inside).
        const renewal = scope.holdsDatabase ? undefined : renewWhileHandling(this.store, key, owner, this.options.leaseMs, paymentId, this.logger);
        bindTransaction(event, scope.transaction);
        try {
          await handle();
        } finally {
          bindTransaction(event, undefined);
          await renewal?.stop();
        }
        const marked = await scope.finishOutcome(this.#finishOf(key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' }));
        if (!marked) {
          lost = true;
          throw new Error(`the claim on ${paymentId} was taken by another attempt while its handlers ran`);
        }
      });
    } catch (error) {
      if (!lost) return this.#handlersFailed(event, name, key, owner, error);
      takeAfterCommit(event);
      // The other attempt runs the handlers and records the outcome: nothing of ours is left.
      this.logger.warn(
        `${source}: the claim on ${paymentId} was lost while its ${name} handlers ran (lease of ${this.options.leaseMs} ms); their writes were rolled back`,
      );
      return { kind: 'busy' };
    }
    await this.#runAfterCommit(event, true);
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
    return { kind: 'handlers-failed', outcome, verification, error: message };
  }

  // The event's afterCommit callbacks, in order, once its outcome is committed (`marked`: this
  // attempt wrote the done marker; otherwise the attempt that did runs its own). A failure is
  // logged: the outcome stays done, and the callback is not run again.
  async #runAfterCommit(event: PaymentOutcomeEvent, marked: boolean): Promise<void> {
    const callbacks = takeAfterCommit(event);
    if (!marked) return;
    for (const callback of callbacks) {
      try {
        await callback();
      } catch (error) {
        this.logger.error(`an afterCommit callback of ${event.paymentId} failed; the outcome stays done and the callback is not run again: ${describe(error)}`);
      }
    }
  }

  // Ends the attempt: the claim marked done (the payment also leaves the reconciliation queue) or
  // released, and the outcome recorded, in one store call. The handlers have run: a failure here
  // is logged, not retried (a later duplicate may then run them again; the record is for people).
  // Returns whether the claim was marked done (false on a failure).
  async #finish(key: string, owner: string, claim: 'done' | 'release', attempt: AttemptRecord): Promise<boolean> {
    const { verification, outcome, handlers } = attempt;
    const paymentId = verification.paymentId;
    try {
      const marked = await finishOutcome(this.store, this.#finishOf(key, owner, claim, attempt));
      if (claim === 'done' && !marked) this.logger.warn(`the claim on ${paymentId} was no longer held when its handlers ended (its lease expired)`);
      return marked;
    } catch (error) {
      this.logger.error(
        `could not ${claim === 'done' ? `mark ${paymentId} done` : `release ${key}`} and record its outcome (${outcome}, handlers ${handlers}): ${describe(error)}`,
      );
      return false;
    }
  }

  // What finishOutcome writes for an attempt.
  #finishOf(key: string, owner: string, claim: 'done' | 'release', attempt: AttemptRecord): OutcomeFinish {
    const { verification, outcome, source, handlers, lastError } = attempt;
    const record: Omit<OutcomeRecord, 'attempts'> = {
      paymentId: verification.paymentId,
      outcome,
      status: verification.status,
      source,
      handlers,
      amount: verification.amount,
      updatedAt: new Date().toISOString(),
    };
    if (verification.developerTrackingId !== undefined) record.developerTrackingId = verification.developerTrackingId;
    if (lastError !== undefined) record.lastError = lastError.slice(0, 500);
    return {
      eventKey: key,
      owner,
      claim,
      doneTtlMs: this.options.doneTtlMs,
      record,
      // A check that found the payment pending is no attempt at its handlers.
      attemptsAdded: outcome === 'pending' ? 0 : 1,
      recordTtlMs: this.options.recordTtlMs,
    };
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
