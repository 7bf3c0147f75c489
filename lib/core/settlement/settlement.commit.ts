import type { VerifiedPayment } from '../api/index.js';
import { type PaymentsLogger, describe } from '../common/index.js';
import type { HandlerResult, OutcomeFinish, OutcomeRecord, OutcomeSource, PaymentOutcome, PaymentsStore, TransactionalPaymentsStore } from '../store/index.js';
import { bindTransaction, takeAfterCommit, type PaymentOutcomeEvent } from './payment.events.js';
import { renewWhileHandling } from './settlement.lease.js';
import type { Clock } from '../time/index.js';

/** What one attempt found, for its outcome record. */
export interface AttemptRecord {
  /** What the service answered. */
  verification: VerifiedPayment;
  /** The outcome recorded. */
  outcome: PaymentOutcome;
  /** The path of the attempt. */
  source: OutcomeSource;
  /** How its handlers did. */
  handlers: HandlerResult;
  /** The latest error, when any. */
  lastError?: string;
}

/** What `finishOutcome` writes for an attempt: the claim's end, the queue, the record. */
export function finishOf(
  ttls: { doneTtlMs: number; recordTtlMs: number; clock: Clock },
  key: string,
  owner: string,
  claim: 'done' | 'release',
  attempt: AttemptRecord,
): OutcomeFinish {
  const { verification, outcome, source, handlers, lastError } = attempt;
  const record: Omit<OutcomeRecord, 'attempts'> = {
    paymentId: verification.paymentId,
    outcome,
    status: verification.status,
    source,
    handlers,
    amount: verification.amount,
    updatedAt: new Date(ttls.clock.now()).toISOString(),
  };
  if (verification.developerTrackingId !== undefined) record.developerTrackingId = verification.developerTrackingId;
  if (lastError !== undefined) record.lastError = lastError.slice(0, 500);
  return {
    eventKey: key,
    owner,
    claim,
    doneTtlMs: ttls.doneTtlMs,
    record,
    // A check that found the payment pending is no attempt at its handlers.
    attemptsAdded: outcome === 'pending' ? 0 : 1,
    recordTtlMs: ttls.recordTtlMs,
  };
}

/**
 * Ends an attempt: the claim marked done (the payment also leaves the reconciliation queue) or
 * released, and the outcome recorded, in one store call. The handlers have run: a failure here is
 * logged, not retried (a later duplicate may then run them again; the record is for people).
 * @returns whether the claim was marked done (false on a failure)
 */
export async function finishAttempt(
  store: Pick<PaymentsStore, 'finishOutcome' | 'claim' | 'markDone'>,
  options: { doneTtlMs: number; recordTtlMs: number; leaseMs: number; clock: Clock },
  logger: PaymentsLogger,
  end: { key: string; owner: string; claim: 'done' | 'release'; attempt: AttemptRecord },
): Promise<boolean> {
  const { key, owner, claim, attempt } = end;
  const paymentId = attempt.verification.paymentId;
  try {
    const marked = await store.finishOutcome(finishOf(options, key, owner, claim, attempt));
    if (claim !== 'done' || marked) return marked;
    // The lease ran out while the handlers ran (renewals fail while the store is away). When no
    // other attempt took the claim meanwhile, nothing ran concurrently: take it back and mark it
    // done, or the next delivery would run the handlers a second time.
    if ((await store.claim(key, owner, options.leaseMs)) === 'claimed' && (await store.markDone(key, owner, options.doneTtlMs))) return true;
    logger.warn(`the claim on ${paymentId} was taken by another attempt when its handlers ended (its lease expired)`);
    return false;
  } catch (error) {
    const what = claim === 'done' ? `mark ${paymentId} done` : `release ${key}`;
    logger.error(`could not ${what} and record its outcome (${attempt.outcome}, handlers ${attempt.handlers}): ${describe(error)}`);
    return false;
  }
}

/**
 * Exactly-once effects: the handlers, the done marker and the outcome record in one transaction of
 * the store's database. The claim is renewed on the store's other connections meanwhile; a claim
 * lost to another attempt rolls everything back instead of committing over its holder.
 * @returns `committed`; `lost` (rolled back: the other attempt runs the handlers); or the failure
 *   that rolled it back (a handler's throw, a failed commit)
 */
export async function handleInTransaction(run: {
  store: TransactionalPaymentsStore & Pick<PaymentsStore, 'claim'>;
  event: PaymentOutcomeEvent;
  handle: () => Promise<void>;
  key: string;
  owner: string;
  finish: OutcomeFinish;
  leaseMs: number;
  logger: PaymentsLogger;
  clock: Clock;
}): Promise<'committed' | 'lost' | { failed: unknown }> {
  const { store, event, key, owner, leaseMs, logger } = run;
  let lost = false;
  try {
    await store.runInTransaction(async (scope) => {
      // On PGlite the transaction holds the one connection: a renewal could only queue behind it,
      // and no other instance can take the claim meanwhile (the scope renews it inside).
      const renewal = scope.holdsDatabase ? undefined : renewWhileHandling(store, key, owner, leaseMs, event.paymentId, logger, run.clock);
      bindTransaction(event, scope.transaction);
      try {
        await run.handle();
      } finally {
        bindTransaction(event, undefined);
        await renewal?.stop();
      }
      if (!(await scope.finishOutcome(run.finish))) {
        lost = true;
        throw new Error(`the claim on ${event.paymentId} was taken by another attempt while its handlers ran`);
      }
    });
  } catch (error) {
    if (!lost) return { failed: error };
    takeAfterCommit(event);
    return 'lost';
  }
  return 'committed';
}

/**
 * The event's afterCommit callbacks, in order, once its outcome is committed (`marked`: this
 * attempt wrote the done marker; otherwise the attempt that did runs its own). A failure is logged:
 * the outcome stays done, and the callback is not run again.
 */
export async function runAfterCommit(event: PaymentOutcomeEvent, marked: boolean, logger: PaymentsLogger): Promise<void> {
  const callbacks = takeAfterCommit(event);
  if (!marked) return;
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (error) {
      logger.error(`an afterCommit callback of ${event.paymentId} failed; the outcome stays done and the callback is not run again: ${describe(error)}`);
    }
  }
}
