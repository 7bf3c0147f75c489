import { randomUUID } from 'node:crypto';
import { PaymentMismatchEvent, type PaymentEventName, type PaymentOutcomeEvent } from './payment.events.js';
import { OUTCOME_EVENTS, outcomeOf } from './settlement.decision.js';
import { normalizeMillimes } from '../api/money.util.js';
import { PaymentsApiError, PaymentsConnectionError, PaymentsError } from '../api/payments.errors.js';
import type { PaymentsLogger } from '../client/payments.logger.js';
import type { BindingClaim, ClaimOutcome, HandlerResult, OutcomeRecord, OutcomeSource, PaymentOutcome, PaymentsStore } from '../store/payments.store.js';
import { findBindingAndClaim, finishOutcome } from '../store/store.operations.js';
import { PaymentsTelemetry, type SettleTrace } from '../telemetry/payments.telemetry.js';
import type { VerifiedPayment } from '../api/payments.types.js';

/**
 * Runs the handlers of one outcome. It must run every handler, even when one fails, and reject
 * (with an AggregateError, say) only once all have settled: releasing the claim while one still
 * runs would let the next attempt run it a second time concurrently.
 */
export type OutcomeDispatcher = (name: PaymentEventName, event: PaymentOutcomeEvent) => Promise<void>;

/** What the caller expects of a payment; differences are a mismatch, never a confirmation. */
export interface OutcomeExpectation {
  /** Amount in millimes. */
  amount?: string;
  /** Exact tracking id. */
  developerTrackingId?: string;
  /** Tests a verified tracking id (used where only a hash of it is known, as in a webhook token). */
  trackingMatches?: (trackingId: string | undefined) => boolean;
  /**
   * Where the expectation comes from. `binding`: the plugin's own record of what it sent.
   * `token`: a webhook token without a stored binding (a restart with the memory store, an
   * eviction). `caller`: values passed to `reconcilePayment` that no record backs. For the two
   * unbacked origins a difference usually means another payment was named (a replayed token, an
   * edited return URL): `foreign`, nothing recorded, nothing emitted, unless the tracking id pins
   * the payment down (see `identifiesPayment`); a genuine mismatch then is recorded and emitted but
   * never marks the payment done.
   */
  origin: 'binding' | 'token' | 'caller';
  /**
   * With origin `token`: the token was signed with a tracking id. When the verified tracking id
   * matches it, the payment is the one the token was issued for, and a different amount is a
   * genuine mismatch (logged, recorded, `payment.mismatch`) rather than a replay. Without a
   * tracking id every payment of the merchant's without one would match, so nothing is concluded.
   */
  identifiesPayment?: boolean;
}

/** What {@link OutcomeProcessor.settle} did. */
export type SettleResult =
  | { kind: 'handled'; outcome: PaymentOutcome; verification: VerifiedPayment }
  | { kind: 'duplicate' }
  | { kind: 'busy' }
  | { kind: 'pending'; verification: VerifiedPayment }
  | { kind: 'mismatch'; verification: VerifiedPayment; problems: string[] }
  | { kind: 'foreign'; problems: string[]; verification?: VerifiedPayment }
  | { kind: 'handlers-failed'; outcome: PaymentOutcome; verification: VerifiedPayment; error: string }
  | {
      kind: 'verify-failed';
      error: PaymentsError;
      /** How long the caller should wait before the next attempt (a webhook's Retry-After). */
      retryAfterSecs?: number;
      /** Set when the service rate-limited verify (429): how long every path should pause. */
      rateLimitedSecs?: number;
    }
  | { kind: 'store-unavailable'; error: string };

/** The claim of a payment's outcome the caller of {@link OutcomeProcessor.settle} already asked for. */
export interface HeldClaim {
  /** The owner the claim was asked for with. */
  owner: string;
  /** What the store answered: `claimed` (then held by `owner`), `done` or `busy`. */
  outcome: ClaimOutcome;
}

/** What one attempt found, for its outcome record. */
interface AttemptRecord {
  verification: VerifiedPayment;
  outcome: PaymentOutcome;
  source: OutcomeSource;
  handlers: HandlerResult;
  lastError?: string;
}

/** Settings of the processor. */
export interface OutcomeProcessorOptions {
  /** How long one attempt may hold a payment's claim, in ms. */
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
 * The heart of "what makes a payment paid": every path (webhook, return, reconciliation) ends in
 * {@link settle}, which claims the payment, asks the service (`verify_payment`), maps the status,
 * checks it against what was sent, runs the handlers and marks the payment done. One claim per
 * payment makes the paths and the instances agree: whichever comes first does the work, once;
 * the others find it busy or done and spend no call to the service.
 */
export class OutcomeProcessor {
  #dispatcher?: OutcomeDispatcher;
  /** Settles in progress, so that close() can wait for them. */
  readonly #inFlight = new Set<Promise<SettleResult>>();

  /**
   * @param options leases and TTLs
   * @param store claims, the queue and the record
   * @param verify reads a payment from the service
   * @param logger where problems are reported
   * @param telemetry spans and metrics of each settle (off by default)
   */
  constructor(
    private readonly options: OutcomeProcessorOptions,
    private readonly store: PaymentsStore,
    private readonly verify: (paymentId: string) => Promise<VerifiedPayment>,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: PaymentsTelemetry = PaymentsTelemetry.off,
  ) {}

  /** Sets who runs the handlers (the Nest event bridge, the Express router). */
  setDispatcher(dispatcher: OutcomeDispatcher | undefined): void {
    this.#dispatcher = dispatcher;
  }

  /** Whether a dispatcher is set. */
  get hasDispatcher(): boolean {
    return this.#dispatcher !== undefined;
  }

  /**
   * Verifies a payment and runs its outcome's handlers, at most once to success across paths
   * and instances. Never throws: every result is a {@link SettleResult}.
   * @param held the claim of the payment, when the caller already asked for it (the webhook's
   *   binding lookup and claim are one store round trip); a claim held is released or marked done here
   */
  settle(paymentId: string, source: OutcomeSource, expected?: OutcomeExpectation, held?: HeldClaim): Promise<SettleResult> {
    // The span's context is active in the verify call and the handlers (payments.telemetry.ts).
    const settling = this.telemetry.settle(paymentId, source, (trace) => this.run(paymentId, source, expected, trace, held));
    this.#inFlight.add(settling);
    const forget = () => void this.#inFlight.delete(settling);
    settling.then(forget, forget);
    return settling;
  }

  /**
   * Resolves once no settle is in flight, whichever path started it (webhook, return,
   * reconciliation): close() waits for it, so handlers finish and are marked done before the
   * transport and the store close.
   */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * A webhook's binding lookup and, when the binding names the payment, the claim of its outcome,
   * in one store round trip (`findBindingAndClaim`). What the claim found is for the caller to
   * pass to {@link settle} (or, if it will not settle, to {@link abandon}).
   * @param tokenId the token's nonce
   * @param paymentId the payment the delivery names
   * @throws what the store throws (the claim, had it landed after all, is given back)
   */
  async lookupAndClaim(tokenId: string, paymentId: string): Promise<BindingClaim & { held?: HeldClaim }> {
    const key = outcomeKey(paymentId);
    const owner = randomUUID();
    try {
      const found = await findBindingAndClaim(this.store, tokenId, paymentId, key, owner, this.options.leaseMs);
      return found.claim === undefined ? found : { ...found, held: { owner, outcome: found.claim } };
    } catch (error) {
      // As after a claim that failed in settle(): it may still land; every store orders this after it.
      void this.store.release(key, owner).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Waits for the attempt that holds a payment's claim (another path, another instance) to record
   * its result, reading the record every `pollMs` for up to `waitMs`. Costs no verify call.
   * @returns `settled` and the record once it shows a result (an outcome other than pending,
   *   handlers not failed); else `settled: false` and the last record seen, if any (an earlier
   *   attempt's: its status is the last one the service sent)
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

  /**
   * Claims a payment's outcome for a settle the caller runs after a check of its own (the
   * webhook's rate limit of tokens without a binding), to pass to {@link settle} or
   * {@link abandon}.
   * @throws what the store throws (the claim, had it landed after all, is given back)
   */
  async claimOutcome(paymentId: string): Promise<HeldClaim> {
    const key = outcomeKey(paymentId);
    const owner = randomUUID();
    try {
      return { owner, outcome: await this.store.claim(key, owner, this.options.leaseMs) };
    } catch (error) {
      void this.store.release(key, owner).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Gives back a claim taken for a settle that will not run (the delivery was turned away after
   * its claim, e.g. while shutting down), so that the next attempt need not wait for its lease.
   */
  async abandon(paymentId: string, held: HeldClaim): Promise<void> {
    if (held.outcome === 'claimed') await this.release(outcomeKey(paymentId), held.owner);
  }

  // Store round trips of a settle, in the usual case (a webhook of a payment that settled):
  // claim (or none, when the caller's binding lookup took it), then verify_payment, then one
  // finishOutcome for done marker, queue and record together. It used to be claim, markDone,
  // removePending, getOutcome and saveOutcome: 5 round trips, now 2 (1 after a webhook's lookup);
  // a store without the combined operations still makes the separate calls (store.operations.ts).
  private async run(
    paymentId: string,
    source: OutcomeSource,
    expected: OutcomeExpectation | undefined,
    trace: SettleTrace,
    held: HeldClaim | undefined,
  ): Promise<SettleResult> {
    const key = outcomeKey(paymentId);
    const owner = held?.owner ?? randomUUID();
    let claim = held?.outcome;
    if (claim === undefined) {
      try {
        claim = await this.store.claim(key, owner, this.options.leaseMs);
      } catch (error) {
        // The claim may still land after we gave up waiting: give it back so the next attempt
        // does not wait a whole lease (every store sends the release after the claim).
        void this.store.release(key, owner).catch(() => undefined);
        this.logger.error(`${source}: store unreachable while claiming ${paymentId}: ${describe(error)}`);
        return { kind: 'store-unavailable', error: describe(error) };
      }
    }
    if (claim === 'done') return { kind: 'duplicate' };
    if (claim === 'busy') return { kind: 'busy' };

    let verification: VerifiedPayment;
    try {
      verification = await this.verify(paymentId);
    } catch (error) {
      await this.release(key, owner);
      const failure = error instanceof PaymentsError ? error : new PaymentsError(describe(error), 'API_ERROR');
      if (expected?.origin === 'token' && isNotFound(failure)) {
        // A signed token naming a payment the service does not know: a replay with a made-up id.
        // 401, not 503, which would invite the service (or whoever sends it) to deliver again.
        return { kind: 'foreign', problems: ['the service does not know this payment'] };
      }
      this.logger.warn(`${source}: could not verify ${paymentId}: ${failure.message}`);
      const rateLimitedSecs = rateLimitOf(failure);
      const retryAfterSecs = rateLimitedSecs ?? (failure instanceof PaymentsConnectionError ? CONNECTION_RETRY_SECS : undefined);
      return { kind: 'verify-failed', error: failure, retryAfterSecs, rateLimitedSecs };
    }

    const problems = expected ? differences(verification, expected) : [];
    // Checked before the status: a replay naming another payment must record nothing, not even
    // that payment as pending.
    if (problems.length > 0 && expected && unbacked(expected) && !genuinelyMismatched(verification, expected)) {
      await this.release(key, owner);
      return { kind: 'foreign', problems, verification };
    }

    const outcome = outcomeOf(verification.status);
    if (outcome === 'pending') {
      await this.conclude(key, owner, 'release', { verification, outcome, source, handlers: 'none' });
      return { kind: 'pending', verification };
    }

    if (problems.length > 0) {
      this.logger.error(`${source}: payment ${paymentId} is ${verification.status} at the service but NOT confirmed: ${problems.join('; ')}`);
      // Known only from a token (no binding): the claim is released rather than marked done. A
      // token of the same order's earlier payment, replayed for a later one of another amount,
      // looks just like this, and a done marker would then swallow the later payment's own
      // confirmation. Repeats cost one verify per token per interval (webhook.processor.ts).
      const claim = expected && unbacked(expected) ? 'release' : 'done';
      await this.conclude(key, owner, claim, { verification, outcome: 'mismatch', source, handlers: 'none', lastError: problems.join('; ') });
      await this.dispatchQuietly('payment.mismatch', new PaymentMismatchEvent(verification, source, this.options.registration, problems));
      return { kind: 'mismatch', verification, problems };
    }

    const { name, event } = OUTCOME_EVENTS[outcome as keyof typeof OUTCOME_EVENTS];
    const renewal = this.renewWhileHandling(key, owner, paymentId);
    try {
      const dispatcher = this.#dispatcher;
      if (!dispatcher) throw new Error('no outcome handlers are registered yet');
      await trace.handlers(name, () => dispatcher(name, new event(outcome, verification, source, this.options.registration)));
    } catch (error) {
      const message = describe(error);
      this.logger.warn(`${source}: a ${name} handler failed for ${paymentId}; it will run again on the next webhook, return or reconciliation: ${message}`);
      await renewal.stop();
      await this.conclude(key, owner, 'release', { verification, outcome, source, handlers: 'failed', lastError: message });
      return { kind: 'handlers-failed', outcome, verification, error: message };
    }
    await renewal.stop();
    await this.conclude(key, owner, 'done', { verification, outcome, source, handlers: 'succeeded' });
    return { kind: 'handled', outcome, verification };
  }

  // Handlers may outlast the lease (a slow email, a slow database): the claim would then expire and
  // a redelivery run them a second time, concurrently. So the claim is renewed while they run: a
  // same-owner claim is a renewal in every store, every third of the lease. A renewal that finds
  // the claim gone to someone else can only be reported: the handlers are already running.
  private renewWhileHandling(key: string, owner: string, paymentId: string): { stop(): Promise<void> } {
    const leaseMs = this.options.leaseMs;
    let renewing: Promise<void> | undefined;
    let lost = false;
    const renew = async () => {
      try {
        const claim = await this.store.claim(key, owner, leaseMs);
        if (claim !== 'claimed' && !lost) {
          lost = true;
          this.logger.error(
            `the claim on ${paymentId} was lost while its handlers ran (${claim}: its lease of ${leaseMs} ms expired before a renewal); another delivery may run them concurrently`,
          );
        }
      } catch (error) {
        // Tried again at the next tick; the lease still runs meanwhile.
        this.logger.warn(`could not renew the claim on ${paymentId} while its handlers run: ${describe(error)}`);
      }
    };
    const timer = setInterval(
      () => {
        if (lost || renewing) return;
        renewing = renew().finally(() => (renewing = undefined));
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    // A running handler keeps the process alive, not its renewals.
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        // A renewal still in flight must land before the claim is marked done or released.
        await renewing;
      },
    };
  }

  // Ends the attempt: the claim marked done (the payment also leaves the reconciliation queue) or
  // released, and the outcome recorded, in one store call. The handlers have run: a failure here
  // is logged, not retried (a later duplicate may then run them again; the record is for people).
  private async conclude(key: string, owner: string, claim: 'done' | 'release', attempt: AttemptRecord): Promise<void> {
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
      const marked = await finishOutcome(this.store, {
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

  private async release(key: string, owner: string): Promise<void> {
    try {
      await this.store.release(key, owner);
    } catch (error) {
      // The lease expires on its own; the next attempt after it runs the outcome.
      this.logger.error(`could not release ${key}: ${describe(error)}`);
    }
  }

  private async dispatchQuietly(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    try {
      await this.#dispatcher?.(name, event);
    } catch (error) {
      this.logger.error(`a ${name} handler failed: ${describe(error)}`);
    }
  }
}

function differences(verification: VerifiedPayment, expected: OutcomeExpectation): string[] {
  const problems: string[] = [];
  if (expected.amount !== undefined && normalizeMillimes(verification.amount) !== normalizeMillimes(expected.amount)) {
    problems.push(`amount ${verification.amount} instead of ${expected.amount}`);
  }
  if (expected.developerTrackingId !== undefined && verification.developerTrackingId !== expected.developerTrackingId) {
    problems.push(`tracking id ${JSON.stringify(verification.developerTrackingId ?? null)} instead of ${JSON.stringify(expected.developerTrackingId)}`);
  }
  if (expected.trackingMatches && !expected.trackingMatches(verification.developerTrackingId)) {
    problems.push('tracking id differs from the one the webhook token was issued for');
  }
  return problems;
}

// An expectation the plugin did not record itself: a token without its binding, or values a caller
// passed to reconcilePayment for a payment the store no longer knows. A customer can edit the
// payment_id of a return URL, and a host can pass a wrong amount: neither may mark a payment done.
function unbacked(expected: OutcomeExpectation): boolean {
  return expected.origin === 'token' || expected.origin === 'caller';
}

// An unbacked expectation whose tracking id pins the payment down, and still differs (the amount).
function genuinelyMismatched(verification: VerifiedPayment, expected: OutcomeExpectation): boolean {
  if (expected.origin === 'caller') return expected.developerTrackingId !== undefined && verification.developerTrackingId === expected.developerTrackingId;
  return expected.identifiesPayment === true && (expected.trackingMatches?.(verification.developerTrackingId) ?? false);
}

function isNotFound(error: PaymentsError): boolean {
  return error.code === 'NOT_FOUND' || (error instanceof PaymentsApiError && error.httpStatus === 404);
}

/** How long to pause after a 429 that did not say how long. */
const DEFAULT_RATE_LIMIT_SECS = 30;
/** Retry-After of a webhook whose verify found the service unreachable. */
const CONNECTION_RETRY_SECS = 5;

// The status decides: a 429 whose body carried the service's own code is still a rate limit.
function rateLimitOf(error: PaymentsError): number | undefined {
  if (error.code !== 'RATE_LIMITED' && !(error instanceof PaymentsApiError && error.httpStatus === 429)) return undefined;
  return (error instanceof PaymentsApiError ? error.retryAfterSecs : undefined) ?? DEFAULT_RATE_LIMIT_SECS;
}

/** A short, secret-free description of a thrown value. */
export function describe(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(describe).join('; ');
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
