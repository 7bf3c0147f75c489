import type { VerifiedPayment } from '../api/index.js';
import { type PaymentsLogger, describe } from '../common/index.js';
import {
  isTransactional,
  type DuplicateRefund,
  type DuplicateRefundState,
  type HandlerResult,
  type OutcomeFinish,
  type OutcomeRecord,
  type OutcomeSource,
  type PaymentOutcome,
  type PaymentsStore,
  type PaymentsTransaction,
} from '../store/index.js';
import type { HandlerContext } from './payment.events.js';
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
  /** A duplicate's: the payment that settled its order. */
  settledBy?: string;
  /** A duplicate's: the refund made of it. */
  refund?: DuplicateRefund;
  /** A duplicate's: where its automatic refund stands. */
  refundState?: DuplicateRefundState;
  /** A duplicate's: refund calls sent so far. */
  refundTries?: number;
  /** A duplicate's: why its refund was not made (yet). */
  refundError?: string;
}

/** What `finishOutcome` writes for an attempt: the claim's end, the queue, the record. */
export function finishOf(
  ttls: { doneTtlMs: number; recordTtlMs: number; clock: Clock },
  key: string,
  owner: string,
  claim: 'done' | 'release',
  attempt: AttemptRecord,
): OutcomeFinish {
  const {
    verification,
    outcome,
    source,
    handlers,
    lastError,
    settledBy,
    refund,
    refundState,
    refundTries,
    refundError,
  } = attempt;
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
  if (settledBy !== undefined) record.settledBy = settledBy;
  if (refund !== undefined) record.refund = refund;
  if (refundState !== undefined) record.refundState = refundState;
  if (refundTries !== undefined) record.refundTries = refundTries;
  if (refundError !== undefined) record.refundError = refundError.slice(0, 500);
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
  options: { leaseMs: number },
  logger: PaymentsLogger,
  finish: OutcomeFinish,
): Promise<boolean> {
  const { eventKey: key, owner, claim, record } = finish;
  try {
    const marked = await store.finishOutcome(finish);
    if (claim !== 'done' || marked) return marked;
    // The lease ran out while the handlers ran (renewals fail while the store is away). When no
    // other attempt took the claim meanwhile, nothing ran concurrently: take it back and mark it
    // done, or the next delivery would run the handlers a second time.
    if (
      (await store.claim(key, owner, options.leaseMs)) === 'claimed' &&
      (await store.markDone(key, owner, finish.doneTtlMs))
    )
      return true;
    logger.warn(
      `the claim on ${record.paymentId} was taken by another attempt when its handlers ended (its lease expired)`,
    );
    return false;
  } catch (error) {
    const what = claim === 'done' ? `mark ${record.paymentId} done` : `release ${key}`;
    logger.error(
      `could not ${what} and record its outcome (${record.outcome}, handlers ${record.handlers}): ${describe(error)}`,
    );
    return false;
  }
}

/** How an attempt's handlers ended. */
export type HandlersEnd =
  /** Their effects are committed; `marked`: this attempt wrote the done marker (it runs the afterCommit callbacks). */
  | { kind: 'committed'; marked: boolean }
  /** Rolled back: another attempt took the claim meanwhile and runs the handlers (transactional stores). */
  | { kind: 'lost' }
  /**
   * A handler threw, or the transaction failed and rolled back. `lapsed`: the claim's lease ran out
   * meanwhile (the process was frozen past it), so another attempt may have written the payment's
   * outcome since: this failure is no record to write over it.
   */
  | { kind: 'failed'; error: unknown; lapsed: boolean };

/** What the commit needs of the attempt (settlement.attempt.ts) whose handlers it runs. */
export interface CommittingAttempt {
  /** The payment. */
  readonly paymentId: string;
  /** The claim's lease, in ms. */
  readonly leaseMs: number;
  /** Renews the claim while the handlers run; `lost`: a renewal found the claim taken; `lapsed`: its lease ran out at some point. */
  renew(): { stop(): Promise<void>; readonly lost: boolean; readonly lapsed: boolean };
  /** Runs the handlers up to their deadline: rejects past it (settlement.deadline.ts). */
  withinDeadline(work: () => Promise<void>): Promise<void>;
  /** The attempt's end as the store writes it. */
  finishOf(claim: 'done' | 'release', record: Omit<AttemptRecord, 'source'>): OutcomeFinish;
}

/** Where an attempt's handlers run: a transaction of the store's database, or none. */
interface HandlerScope {
  /** The transaction handed to the handlers. */
  transaction?: PaymentsTransaction;
  /** The scope holds the store's one connection: the claim is renewed inside it, not beside it. */
  holdsDatabase: boolean;
  /** Writes the attempt's end: `marked`, `unmarked` (a plain store could not mark it), or `lost` (rolls the scope back). */
  end(finish: OutcomeFinish): Promise<'marked' | 'unmarked' | 'lost'>;
}

// Runs `work` in a transaction of a transactional store (its end commits with it), else as it is.
function inScope(
  store: PaymentsStore,
  options: { leaseMs: number },
  logger: PaymentsLogger,
  work: (scope: HandlerScope) => Promise<void>,
): Promise<void> {
  if (isTransactional(store)) {
    return store.runInTransaction((tx) =>
      work({
        transaction: tx.transaction,
        holdsDatabase: tx.holdsDatabase,
        end: async (finish) => ((await tx.finishOutcome(finish)) ? 'marked' : 'lost'),
      }),
    );
  }
  return work({
    holdsDatabase: false,
    end: async (finish) => ((await finishAttempt(store, options, logger, finish)) ? 'marked' : 'unmarked'),
  });
}

/**
 * Runs an attempt's handlers while its claim is renewed, then writes its end: the one path of both
 * modes. With a transactional store, the handlers, the done marker and the outcome record are one
 * transaction (exactly-once effects): a claim lost meanwhile rolls it all back instead of committing
 * over its holder. With any other store the handlers' effects are theirs, and the done marker follows.
 * @param run the attempt, the context its event hands the handlers (the transaction goes there), the
 *   handlers, and the record of a success
 */
export async function commitHandlers(run: {
  store: PaymentsStore;
  attempt: CommittingAttempt;
  context: HandlerContext;
  handle: () => Promise<void>;
  record: Omit<AttemptRecord, 'source'>;
  logger: PaymentsLogger;
}): Promise<HandlersEnd> {
  const { attempt, context } = run;
  let end: 'marked' | 'unmarked' | 'lost' | undefined;
  // A renewal found the claim taken (a process stalled past its lease): the attempt that took it
  // owns the outcome now, so a failure here is no failure to record over its record.
  let claimLost = false;
  let lapsed = false;
  try {
    await inScope(run.store, attempt, run.logger, async (scope) => {
      // On PGlite the transaction holds the one connection: a renewal could only queue behind it,
      // and no other instance can take the claim meanwhile (the scope renews it inside).
      const renewal = scope.holdsDatabase ? undefined : attempt.renew();
      context.transaction = scope.transaction;
      try {
        // A handler that never returns must not keep the claim renewed (nor close() waiting) for ever.
        await attempt.withinDeadline(run.handle);
      } finally {
        context.transaction = undefined;
        await renewal?.stop();
        claimLost = scope.transaction !== undefined && renewal?.lost === true;
        lapsed = renewal?.lapsed === true;
      }
      end = await scope.end(attempt.finishOf('done', run.record));
      if (end === 'lost')
        throw new Error(`the claim on ${attempt.paymentId} was taken by another attempt while its handlers ran`);
    });
  } catch (error) {
    return end === 'lost' || claimLost ? { kind: 'lost' } : { kind: 'failed', error, lapsed };
  }
  return { kind: 'committed', marked: end === 'marked' };
}

/**
 * The event's afterCommit callbacks, in order, once its outcome is committed (`marked`: this
 * attempt wrote the done marker; otherwise the attempt that did runs its own). A failure is logged:
 * the outcome stays done, and the callback is not run again.
 */
export async function runAfterCommit(
  context: HandlerContext,
  paymentId: string,
  marked: boolean,
  logger: PaymentsLogger,
): Promise<void> {
  const callbacks = context.afterCommit.splice(0);
  if (!marked) return;
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (error) {
      logger.error(
        `an afterCommit callback of ${paymentId} failed; the outcome stays done and the callback is not run again: ${describe(error)}`,
      );
    }
  }
}
