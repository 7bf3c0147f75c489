import { describe, type PaymentsLogger } from '../common/index.js';
import type { Settlements, SettleResult } from './settlement.request.js';
import type { PaymentsReconciliationOptions } from './reconciliation.options.js';
import type { OutcomeRecord, PaymentsStore, PendingPayment } from '../store/index.js';
import type { TelemetryHooks } from '../telemetry/index.js';
import { type Clock, type ClockTimer, every, type SharedClock } from '../time/index.js';
import { leaveLane, nextRecheck, type PendingRechecks } from './settlement.rechecks.js';
import { laneOf, UnpaidAllowance } from './settlement.evidence.js';
import { ABANDONED_MARK, nextCheckAt, OVERDUE_MARK, pastFastLane } from './reconciliation.lanes.js';

/** What reconciliation's bookkeeping of an unsettled payment needs. */
export interface ReconciliationRecords {
  /** The queue and the record. */
  store: PaymentsStore;
  /** Whose claim the record is written under. */
  runner: Settlements;
  /** How long the record of an overdue payment is kept. */
  recordTtlMs: number;
  /** The shared clock. */
  clock: Clock;
  /** Reconciliation's options (its lanes, its horizon). */
  options: Required<PaymentsReconciliationOptions>;
  /** Where a payment given up on is reported. */
  logger: PaymentsLogger;
}

/** What a check that left a payment unsettled means for its queue entry. */
export type Unsettled = { kind: 'unknown'; last: string } | { kind: 'known'; last: string };

/**
 * Writes the record of a payment whose outcome is overdue (`overdue:` / `abandoned:` notes), under
 * the payment's claim, which the runner holds for it: every settle writes its record while it holds
 * the claim, so a confirmation that lands meanwhile is never overwritten by this "unknown" (claim
 * `done`: it was settled, and leaves the queue; `busy`: its settle writes).
 */
export async function markOverdueRecord(
  records: Pick<ReconciliationRecords, 'store' | 'runner' | 'recordTtlMs' | 'clock'>,
  entry: PendingPayment,
  note: string,
): Promise<void> {
  const { store, recordTtlMs, clock } = records;
  const held = await records.runner.hold(entry.paymentId, 'reconciliation', async () => {
    const previous = await store.getOutcome(entry.paymentId);
    // A known outcome (handlers that failed, a mismatch) keeps its own record.
    if (previous && previous.outcome !== 'pending') return;
    const record: OutcomeRecord = {
      paymentId: entry.paymentId,
      outcome: 'pending',
      // Not a status of the service's: none was read (verify failed every time), or the last one read.
      status: previous?.status ?? 'UNKNOWN',
      source: 'reconciliation',
      handlers: 'none',
      attempts: previous?.attempts ?? 0,
      amount: previous?.amount ?? entry.amount,
      lastError: note.slice(0, 500),
      updatedAt: new Date(clock.now()).toISOString(),
    };
    const trackingId = previous?.developerTrackingId ?? entry.developerTrackingId;
    if (trackingId !== undefined) record.developerTrackingId = trackingId;
    await store.saveOutcome(record, recordTtlMs);
  });
  if (held === 'done') await store.removePending(entry.paymentId);
}

/**
 * The next check of a payment a check left unsettled: its queue entry out of the pending lane, due
 * on the session's lanes, or given up on past the horizon; past the fast lane, its record says it is
 * overdue (`overdue:` / `abandoned:` notes, {@link markOverdueRecord}).
 */
export async function rescheduleUnsettled(
  records: ReconciliationRecords,
  taken: PendingPayment,
  now: number,
  why: Unsettled,
): Promise<void> {
  const { store, options, logger } = records;
  // Any other result leaves the pending lane: the session's lanes take it from here.
  const { rechecks: _lane, ...entry } = taken;
  const checks = entry.checks + 1;
  const next = nextCheckAt(entry, now, options);
  if (next === undefined) {
    await store.removePending(entry.paymentId);
    logger.error(
      `reconciliation: gave up on ${entry.paymentId} after ${checks} checks over ${options.horizonDays} day(s) (last: ${why.last}); reconcile it by hand`,
    );
    if (why.kind === 'unknown')
      await markOverdueRecord(
        records,
        entry,
        `${ABANDONED_MARK} outcome unknown after ${checks} checks; reconcile it by hand (last: ${why.last})`,
      );
    return;
  }
  await store.schedulePending({ ...entry, checks }, next);
  if (why.kind === 'unknown' && pastFastLane(entry, options)) {
    if (checks === options.maxChecks) {
      logger.warn(
        `reconciliation: ${entry.paymentId} still unknown after ${checks} checks; checked hourly, then daily, for ${options.horizonDays} day(s)`,
      );
    }
    await markOverdueRecord(
      records,
      entry,
      `${OVERDUE_MARK} outcome unknown after ${checks} checks; slow lane, next check at ${new Date(next).toISOString()} (last: ${why.last})`,
    );
  }
}

/** How far ahead of its clock a timed pass (a tick, or a wake for the pending lane) takes due entries. */
export const WAKE_LEAD_MS = 1_000;

/**
 * Reconciliation's one-shot wake-ups for pending-lane checks. Each due time keeps its own timer (a
 * later check of one payment must not hide behind an earlier one of another), except one within
 * {@link WAKE_LEAD_MS} after a planned one, which that pass takes anyway.
 */
export class SweepWakes {
  readonly #timers = new Map<number, ClockTimer>();

  /**
   * @param clock reconciliation's clock
   * @param run starts a pass that takes what is due {@link WAKE_LEAD_MS} ahead
   */
  constructor(
    private readonly clock: Clock,
    private readonly run: () => void,
  ) {}

  /** Plans a pass in `inMs`. */
  in(inMs: number): void {
    const at = this.clock.now() + inMs;
    for (const planned of this.#timers.keys()) if (planned <= at && at - planned < WAKE_LEAD_MS) return;
    const timer = this.clock.setTimeout(() => {
      this.#timers.delete(at);
      this.run();
    }, inMs);
    this.#timers.set(at, timer);
  }

  /** Cancels every planned pass. */
  clear(): void {
    for (const timer of this.#timers.values()) this.clock.clearTimeout(timer);
    this.#timers.clear();
  }
}

/** What one reconciliation run did. */
export interface ReconciliationRun {
  /** Payments verified in this run. */
  checked: number;
  /** Of those, how many reached a final outcome (handled, already done, or a mismatch). */
  settled: number;
  /**
   * When the service rate-limited verify (HTTP 429): the epoch time in ms before which no pass
   * takes payments (this one stopped there; the payments it had taken are due again then).
   */
  rateLimitedUntil?: number;
}

/**
 * Re-checks the payments whose outcome no webhook or return has brought: every `intervalSecs`, and
 * when a pending-lane check is due (settlement.rechecks.ts), it takes the due ones from the store's
 * queue (each to one instance) and settles them like any other path. A payment is first due a
 * little after its session ended; one still unsettled is checked in the fast lane (waits doubling,
 * `maxChecks` checks), then the slow lane (hourly, then daily: `reconciliation.lanes.ts`) until
 * `horizonDays` after its generation, then given up (logged as an error). Past the fast lane its
 * record says so (`lastError` `overdue:`, then `abandoned:`), which the health indicator counts.
 * On a 429 the pass stops, puts back what it took (no check counted), and no pass takes any until
 * its `Retry-After` passed.
 */
export class ReconciliationScheduler {
  private stopTimer?: () => void;
  /** One-shot passes for the pending-lane checks this instance scheduled. */
  private readonly wakes: SweepWakes;
  /** What the bookkeeping of an unsettled payment's entry and record needs. */
  readonly #records: ReconciliationRecords;
  private running?: Promise<void>;
  private complete?: Promise<ReconciliationRun>;
  /** Epoch ms before which passes take nothing: the service rate-limited verify. */
  private pausedUntil = 0;

  /**
   * @param options resolved reconciliation options
   * @param leaseMs how long a taken entry stays hidden from other instances
   * @param store the queue
   * @param outcomes settles each payment
   * @param logger where problems are reported
   * @param telemetry a span per pass (off by default)
   * @param recordTtlMs how long the record of an overdue payment is kept (`outcomeRecordTtlSecs`)
   * @param clock the time shared with the other instances (due times, record times)
   * @param rechecks the pending lane (a pass's PENDING in the lane schedules the lane's next check)
   */
  constructor(
    private readonly options: Required<PaymentsReconciliationOptions>,
    private readonly leaseMs: number,
    private readonly store: PaymentsStore,
    private readonly outcomes: Settlements,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: TelemetryHooks,
    private readonly recordTtlMs: number,
    private readonly clock: SharedClock,
    private readonly rechecks: PendingRechecks,
  ) {
    // A pass already running may have taken its entries before the check became due: run after it.
    const wake = () =>
      void (this.running ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => this.#start(undefined, WAKE_LEAD_MS))
        .catch(() => undefined);
    this.wakes = new SweepWakes(clock, wake);
    this.#records = { store, runner: outcomes, recordTtlMs, clock, options, logger };
    this.#unpaid = new UnpaidAllowance(store.rateLimits, options.graceSecs);
  }

  /** The allowance the short lane's checks spend (settlement.evidence.ts). */
  readonly #unpaid: UnpaidAllowance;

  /** Starts the periodic runs (when enabled). The timer does not keep the process alive. */
  start(): void {
    if (!this.options.enabled || this.stopTimer) return;
    this.stopTimer = every(
      this.clock,
      this.options.intervalSecs * 1000,
      () => void this.#start(undefined, WAKE_LEAD_MS).catch(() => undefined),
    );
  }

  /** Runs a pass in `inMs` (a pending-lane check is due then). Only while started. */
  wakeIn(inMs: number): void {
    if (this.stopTimer) this.wakes.in(inMs);
  }

  /** Runs one pass now (also what the timers call); a pass already running is joined, not doubled. */
  runOnce(now?: number): Promise<ReconciliationRun> {
    return this.#start(now, 0);
  }

  // `running` is the pass's verify phase, which a new pass waits for; the promise returned also
  // waits for the handlers the pass started, so its counts are complete.
  #start(now: number | undefined, leadMs: number): Promise<ReconciliationRun> {
    if (this.running && this.complete) return this.complete;
    let verified!: () => void;
    const running = new Promise<void>((resolve) => (verified = resolve));
    this.running = running;
    // The pass's span covers its handlers too, so that its counts are complete.
    this.complete = this.telemetry.reconciliation(async (due) => {
      const handling: Array<Promise<void>> = [];
      // Once every payment is verified, the next pass may start (a lane check due meanwhile).
      const verifiedAll = () => {
        verified();
        if (this.running === running) this.running = undefined;
      };
      try {
        const run = await this.pass(now, due, leadMs, handling);
        verifiedAll();
        await Promise.all(handling);
        return run;
      } finally {
        verifiedAll();
      }
    });
    return this.complete;
  }

  /** Stops the timers and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopTimer?.();
    this.stopTimer = undefined;
    this.wakes.clear();
    await this.complete?.catch(() => undefined);
  }

  private async pass(
    at: number | undefined,
    noteDue: (count: number) => void,
    leadMs: number,
    handling: Array<Promise<void>>,
  ): Promise<ReconciliationRun> {
    // Due times it writes back would be on this instance's own clock, maybe an hour off: the
    // store's clock out of reach since this instance started means the store is, or just was, down.
    if (!(await this.clock.sync())) {
      this.logger.error("reconciliation: the store's clock is out of reach; the pass takes nothing until it answers");
      return { checked: 0, settled: 0 };
    }
    // A timed pass takes what is due a little ahead: the entry's due time was written on a clock
    // whose offset to this one is only known to within a round trip, or by a pass that read its
    // time after its sync's round trip, one interval before this tick, which reads it without one.
    // The next checks it writes count from its clock (or a missed tick would be missed again).
    const now = at ?? this.clock.now();
    const until = now + leadMs;
    const run: ReconciliationRun = { checked: 0, settled: 0 };
    if (until < this.pausedUntil) return { ...run, rateLimitedUntil: this.pausedUntil };
    let due;
    try {
      due = await this.store.takeDuePending(until, this.options.batchSize, this.leaseMs);
    } catch (error) {
      this.logger.error(`reconciliation: store unreachable: ${describe(error)}`);
      return run;
    }
    noteDue(due.length);
    // One verify at a time (the docs warn against bursts), not one handler at a time: once a
    // payment's handlers start, the next is verified (a slow handler holds back no other).
    for (const [index, entry] of due.entries()) {
      // A short-lane check spends the payment's allowance, shared with its returns; none left: it
      // goes back to its session's schedule unchecked.
      if (laneOf(entry.rechecks) === 'short' && !(await this.#unpaid.take(entry.paymentId, entry, now))) {
        await this.rechecks.schedule(entry, leaveLane(entry, now, this.options.graceSecs)).catch((error: unknown) => {
          this.logger.error(`reconciliation: store unreachable while updating ${entry.paymentId}: ${describe(error)}`);
        });
        continue;
      }
      let handlersStarted!: () => void;
      const started = new Promise<'handlers'>((resolve) => (handlersStarted = () => resolve('handlers')));
      const settling = this.outcomes.settle({
        paymentId: entry.paymentId,
        source: 'reconciliation',
        expected: { amount: entry.amount, developerTrackingId: entry.developerTrackingId, origin: 'binding' },
        onHandlers: handlersStarted,
      });
      if ((await Promise.race([settling, started])) === 'handlers') {
        handling.push(settling.then((result) => this.#applyQuietly(entry, result, now, run)));
        continue;
      }
      const result = await settling;
      const waitSecs = result.kind === 'verify-failed' ? result.rateLimitedSecs : undefined;
      if (waitSecs !== undefined) {
        // Every further verify would be refused too (and may count against the merchant): stop,
        // and give back what this pass took, due when the service said, no check counted.
        this.pausedUntil = until + waitSecs * 1000;
        const rest = due.slice(index);
        this.logger.warn(
          `reconciliation: the service rate-limits verify; pausing ${waitSecs} s, ${rest.length} payment(s) put back`,
        );
        for (const back of rest) {
          try {
            // One in the pending lane wakes this reconciliation when the pause ends (not at its next tick).
            if (back.rechecks !== undefined)
              await this.rechecks.schedule(back, { dueAt: this.pausedUntil, rechecks: back.rechecks });
            else await this.store.schedulePending(back, this.pausedUntil);
          } catch (error) {
            // The taken lease brings it back on its own.
            this.logger.error(
              `reconciliation: store unreachable while putting back ${back.paymentId}: ${describe(error)}`,
            );
          }
        }
        // The same object, so that the counts of the handlers still running land in it.
        run.rateLimitedUntil = this.pausedUntil;
        return run;
      }
      await this.#applyQuietly(entry, result, now, run);
    }
    return run;
  }

  async #applyQuietly(entry: PendingPayment, result: SettleResult, now: number, run: ReconciliationRun): Promise<void> {
    try {
      await this.apply(entry, result, now, run);
    } catch (error) {
      this.logger.error(`reconciliation: store unreachable while updating ${entry.paymentId}: ${describe(error)}`);
    }
  }

  // What one settle result does to the queue entry. Exhaustive: a new kind of result must say
  // here whether it ends the payment's reconciliation, or the compiler refuses it.
  private async apply(entry: PendingPayment, result: SettleResult, now: number, run: ReconciliationRun): Promise<void> {
    switch (result.kind) {
      case 'handled':
      case 'mismatch':
      case 'order-duplicate':
        // The outcome is known and recorded: nothing left to check (a second charge of a paid order: once handled).
        run.checked++;
        if (result.kind === 'order-duplicate' && (result.error ?? result.refundRetry) !== undefined)
          return rescheduleUnsettled(this.#records, entry, now, {
            kind: 'known',
            last: result.error ?? result.refundRetry ?? '',
          });
        run.settled++;
        return this.store.removePending(entry.paymentId);
      case 'duplicate':
        // Another path settled it; no call to the service was spent.
        run.settled++;
        return this.store.removePending(entry.paymentId);
      case 'busy':
        // Another path holds it; in the pending lane, its next check within seconds (none counted).
        if (entry.rechecks !== undefined) return this.#laneNext(entry, now);
        return;
      case 'store-unavailable':
      case 'rate-limited':
        // Another path holds it, or the store did not answer the claim: no check was made, and the
        // taken lease brings the entry back (the store may not take a write now anyway).
        return;
      case 'pending':
        run.checked++;
        // In the pending lane: its next check within seconds, no check of the session's lanes counted.
        if (entry.rechecks !== undefined) return this.#laneNext(entry, now);
        return rescheduleUnsettled(this.#records, entry, now, {
          kind: 'unknown',
          last: `the service answers ${result.verification.status}`,
        });
      case 'verify-failed':
        run.checked++;
        // A failed check in the pending lane keeps it there: the lane backs off and ends with the session.
        // In the short lane it is evidence of a failing service, not of an unpaid customer: the fast
        // lane, as a path's failed verify earns (settlement.evidence.ts).
        if (laneOf(entry.rechecks) === 'short') return this.#laneNext({ ...entry, rechecks: 0 }, now);
        if (entry.rechecks !== undefined) return this.#laneNext(entry, now);
        return rescheduleUnsettled(this.#records, entry, now, {
          kind: 'unknown',
          last: `verify failed: ${result.error.message}`,
        });
      case 'deferred':
        // Reconciliation is not held to the verify budget; should it ever be, nothing was checked.
        return rescheduleUnsettled(this.#records, entry, now, {
          kind: 'unknown',
          last: `verify deferred for ${result.retryAfterSecs} s`,
        });
      case 'foreign':
        // Not expected with the plugin's own binding; whatever it is, the outcome is not known.
        run.checked++;
        return rescheduleUnsettled(this.#records, entry, now, {
          kind: 'unknown',
          last: `the service's answer names another payment (${result.problems.join('; ')})`,
        });
      case 'handlers-failed':
        // The outcome is known and recorded with its failure; only the handlers are run again
        // (soon while in the pending lane, then on the session's lanes).
        run.checked++;
        // The outcome is known: the short lane's allowance is for unpaid customers, so the fast lane.
        if (laneOf(entry.rechecks) === 'short') return this.#laneNext({ ...entry, rechecks: 0 }, now);
        if (entry.rechecks !== undefined) return this.#laneNext(entry, now);
        return rescheduleUnsettled(this.#records, entry, now, {
          kind: 'known',
          last: `handlers failed: ${result.error}`,
        });
      default:
        return unreachable(result);
    }
  }

  // The pending lane's next check (a path found it pending, or its handlers failed, moments ago).
  #laneNext(entry: PendingPayment, now: number): Promise<void> {
    return this.rechecks.schedule(entry, nextRecheck(entry, now, this.options.graceSecs));
  }
}

function unreachable(result: never): never {
  throw new Error(`reconciliation: unexpected settle result ${JSON.stringify((result as { kind?: unknown }).kind)}`);
}
