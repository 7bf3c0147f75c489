import type { VerifiedPayment } from '../api/index.js';
import { type PaymentsLogger, assertNever, describe } from '../common/index.js';
import {
  isTransactional,
  type InboxEntry,
  type PaymentsInbox,
  type TransactionalPaymentsStore,
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

/**
 * Where an attempt's handlers run and where its "done" lives:
 * - `plain`: no transaction; the store's done marker follows the handlers (effectively once);
 * - `store-transaction`: the store's own transaction (`PostgresPaymentsStore` with
 *   `transactional: true`) holds the handlers' writes and the done marker;
 * - `inbox`: the host's transaction holds the handlers' writes and the inbox row; the store's
 *   done marker follows the commit, and a later attempt that finds the row only finishes that.
 */
export type CommitPath = 'plain' | 'store-transaction' | 'inbox';

/** The commit path of a set-up, or why the set-up is refused. */
export type CommitPathDecision = { kind: 'path'; path: CommitPath } | { kind: 'refused'; reason: string };

/**
 * The one rule of which commit path a client takes. An inbox together with a transactional store
 * is refused: two sources of truth for "done" in two databases would each be half of it.
 * @param setup whether the store is transactional and whether an inbox is configured
 */
export function commitPathOf(setup: { transactionalStore: boolean; inbox: boolean }): CommitPathDecision {
  if (setup.inbox && setup.transactionalStore)
    return {
      kind: 'refused',
      reason:
        'cannot be used with a transactional store (PostgresPaymentsStore with transactional: true): choose one; with the inbox, the store keeps transactional: false',
    };
  if (setup.inbox) return { kind: 'path', path: 'inbox' };
  return { kind: 'path', path: setup.transactionalStore ? 'store-transaction' : 'plain' };
}

/**
 * The commit path of a store and an inbox ({@link commitPathOf}). Both are fixed once built, so the
 * runner decides it once, not per settle.
 * @param store the runner's store (transactional or not)
 * @param inbox the host's inbox, if configured
 */
export function commitPathFor(store: PaymentsStore, inbox: PaymentsInbox | undefined): CommitPathDecision {
  return commitPathOf({ transactionalStore: isTransactional(store), inbox: inbox !== undefined });
}

/** What one attempt found, for its outcome record. */
export interface AttemptRecord {
  /** What the service answered. */
  verification: VerifiedPayment;
  /** The outcome recorded. */
  outcome: PaymentOutcome;
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

/**
 * What `finishOutcome` writes for an attempt: the claim's end, the queue, the record. The path comes
 * apart from what the attempt found: a copy of that with the path added (`{ ...found, source }`)
 * takes V8 a slow path, on every settle.
 */
export function finishOf(
  ttls: { doneTtlMs: number; recordTtlMs: number; clock: Clock },
  key: string,
  owner: string,
  claim: 'done' | 'release',
  source: OutcomeSource,
  attempt: AttemptRecord,
): OutcomeFinish {
  const { verification, outcome, handlers, lastError, settledBy, refund, refundState, refundTries, refundError } =
    attempt;
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
  /**
   * Their effects are committed; `marked`: this attempt runs the afterCommit callbacks (it wrote the
   * done marker; with an inbox, it committed the host's transaction).
   */
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
  /** Who holds the claim: this attempt (it tells its inbox row from an earlier attempt's). */
  readonly owner: string;
  /** Renews the claim while the handlers run; `lost`: a renewal found the claim taken; `lapsed`: its lease ran out at some point. */
  renew(): { stop(): Promise<void>; readonly lost: boolean; readonly lapsed: boolean };
  /** Runs the handlers up to their deadline: rejects past it (withinDeadline, settlement.attempt.ts). */
  withinDeadline(work: () => Promise<void>): Promise<void>;
  /** The attempt's end as the store writes it. */
  finishOf(claim: 'done' | 'release', record: AttemptRecord): OutcomeFinish;
}

/** Where an attempt's handlers run and where its "done" is written (one per {@link CommitPath}). */
interface HandlerScope {
  /** The transaction handed to the handlers. */
  transaction?: PaymentsTransaction;
  /** The scope holds the store's one connection: the claim is renewed inside it, not beside it. */
  holdsDatabase: boolean;
  /** Before the handlers: `done` when an earlier attempt's effects are committed (the handlers are skipped). */
  open(): Promise<'open' | 'done'>;
  /**
   * After the handlers, inside the scope: `marked`, `unmarked` (a plain store could not mark it),
   * `lost` (rolls the scope back), or `after` (the store's done marker follows the scope's commit).
   */
  seal(finish: OutcomeFinish): Promise<'marked' | 'unmarked' | 'lost' | 'after'>;
}

/** The one set of inputs every commit path reads. */
interface CommitSetup {
  store: PaymentsStore;
  inbox?: PaymentsInbox;
  /** The set-up's commit path ({@link commitPathOf}), decided once for the runner's store and inbox. */
  path: CommitPathDecision;
  options: { leaseMs: number };
  logger: PaymentsLogger;
  /** The inbox row of this attempt. */
  entry: () => InboxEntry;
}

// Runs `work` in the scope of the set-up's commit path: the store's transaction (its end commits
// with it), the host's transaction with the inbox row, or none.
function inScope(setup: CommitSetup, work: (scope: HandlerScope) => Promise<void>): Promise<void> {
  const { store, inbox, options, logger, path: decision } = setup;
  if (decision.kind === 'refused') return Promise.reject(new Error(`inbox ${decision.reason}`));
  switch (decision.path) {
    case 'store-transaction':
      return (store as TransactionalPaymentsStore).runInTransaction((tx) =>
        work({
          transaction: tx.transaction,
          holdsDatabase: tx.holdsDatabase,
          open: async () => 'open',
          seal: async (finish) => ((await tx.finishOutcome(finish)) ? 'marked' : 'lost'),
        }),
      );
    case 'inbox':
      return inbox!.transaction((tx) =>
        work({
          transaction: tx.handle,
          holdsDatabase: false,
          open: async () => ((await tx.markDone(setup.entry())) === 'inserted' ? 'open' : 'done'),
          seal: async () => {
            await tx.beforeCommit();
            return 'after';
          },
        }),
      );
    case 'plain':
      return work({
        holdsDatabase: false,
        open: async () => 'open',
        seal: async (finish) => ((await finishAttempt(store, options, logger, finish)) ? 'marked' : 'unmarked'),
      });
    default:
      return assertNever(decision.path);
  }
}

/**
 * Runs an attempt's handlers while its claim is renewed, then writes its end: the one path of every
 * commit path ({@link commitPathOf}). With a transactional store, the handlers, the done marker and
 * the outcome record are one transaction; with an inbox, the handlers and the inbox row are one
 * transaction of the host's database (exactly-once effects either way): a claim lost meanwhile
 * rolls it all back instead of committing over its holder, and an inbox row already there means
 * the handlers ran: they are skipped and the store's bookkeeping is finished. With a plain store
 * the handlers' effects are theirs, and the done marker follows.
 * @param run the attempt, the context its event hands the handlers (the transaction goes there), the
 *   handlers, the record of a success, the event's name (for the inbox row) and the inbox, if any
 */
export async function commitHandlers(run: {
  store: PaymentsStore;
  inbox?: PaymentsInbox;
  /** The commit path of `store` and `inbox` ({@link commitPathOf}): fixed when they are, decided once. */
  path: CommitPathDecision;
  event: string;
  attempt: CommittingAttempt;
  context: HandlerContext;
  handle: () => Promise<void>;
  record: AttemptRecord;
  logger: PaymentsLogger;
  clock: Clock;
}): Promise<HandlersEnd> {
  const { attempt, context } = run;
  let end: 'marked' | 'unmarked' | 'lost' | 'after' | undefined;
  // A renewal found the claim taken (a process stalled past its lease): the attempt that took it
  // owns the outcome now, so a failure here is no failure to record over its record.
  let claimLost = false;
  let lapsed = false;
  const entry = (): InboxEntry => ({
    paymentId: attempt.paymentId,
    event: run.event,
    orderId: run.record.verification.developerTrackingId,
    handledAt: new Date(run.clock.now()),
    attempt: attempt.owner,
  });
  const setup = { store: run.store, inbox: run.inbox, path: run.path, options: attempt, logger: run.logger, entry };
  try {
    await inScope(setup, async (scope) => {
      // On PGlite the transaction holds the one connection: a renewal could only queue behind it,
      // and no other instance can take the claim meanwhile (the scope renews it inside).
      const renewal = scope.holdsDatabase ? undefined : attempt.renew();
      try {
        // An earlier attempt's effects are committed: only its bookkeeping is left to finish.
        if ((await scope.open()) === 'done') {
          end = 'after';
          return;
        }
        context.transaction = scope.transaction;
        try {
          // A handler that never returns must not keep the claim renewed (nor close() waiting) for ever.
          await attempt.withinDeadline(run.handle);
        } finally {
          context.transaction = undefined;
        }
      } finally {
        await renewal?.stop();
        claimLost = scope.transaction !== undefined && renewal?.lost === true;
        lapsed = renewal?.lapsed === true;
      }
      // Inside a transaction, a claim taken meanwhile rolls the handlers' writes back.
      if (claimLost) end = 'lost';
      else end = await scope.seal(attempt.finishOf('done', run.record));
      if (end === 'lost')
        throw new Error(`the claim on ${attempt.paymentId} was taken by another attempt while its handlers ran`);
    });
  } catch (error) {
    return end === 'lost' || claimLost ? { kind: 'lost' } : { kind: 'failed', error, lapsed };
  }
  if (end === 'after') {
    // The host's transaction committed the effects and the inbox row: the store's done marker,
    // queue removal and record follow. A failure here leaves the row as the one truth for "done".
    await finishAttempt(run.store, attempt, run.logger, attempt.finishOf('done', run.record));
    // No later attempt runs these handlers again (the row stops it), so the afterCommit callbacks
    // they registered are this attempt's to run, whatever the store's bookkeeping did.
    return { kind: 'committed', marked: true };
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
