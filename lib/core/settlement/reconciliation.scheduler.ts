import { describe } from './settlement.describe.js';
import type { SettlementRunner } from './settlement.runner.js';
import { SETTLEMENT_WAITS } from './settlement.waits.js';
import type { PaymentsReconciliationOptions } from '../client/payments.options.js';
import type { PaymentsLogger } from '../client/payments.logger.js';
import type { PaymentsStore } from '../store/payments.store.js';
import { NO_TELEMETRY, type TelemetryHooks } from '../telemetry/telemetry.hooks.js';

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
 * Re-checks the payments whose outcome no webhook or return has brought: every `intervalSecs` it
 * takes the due ones from the store's queue (the store gives each to one instance) and settles
 * them like any other path. A payment is first due a little after its session ended; one that
 * stays unsettled is checked again with growing waits, then given up (logged as an error) after
 * `maxChecks`. When the service answers verify with 429, the pass stops, puts the payments it
 * took back (without counting a check), and no pass takes any until its `Retry-After` passed.
 */
export class ReconciliationScheduler {
  private timer?: NodeJS.Timeout;
  private running?: Promise<ReconciliationRun>;
  /** Epoch ms before which passes take nothing: the service rate-limited verify. */
  private pausedUntil = 0;

  /**
   * @param options resolved reconciliation options
   * @param leaseMs how long a taken entry stays hidden from other instances
   * @param store the queue
   * @param outcomes settles each payment
   * @param logger where problems are reported
   * @param telemetry a span per pass (off by default)
   */
  constructor(
    private readonly options: Required<PaymentsReconciliationOptions>,
    private readonly leaseMs: number,
    private readonly store: PaymentsStore,
    private readonly outcomes: SettlementRunner,
    private readonly logger: PaymentsLogger,
    private readonly telemetry: TelemetryHooks = NO_TELEMETRY,
  ) {}

  /** Starts the periodic runs (when enabled). The timer does not keep the process alive. */
  start(): void {
    if (!this.options.enabled || this.timer) return;
    this.timer = setInterval(() => void this.runOnce().catch(() => undefined), this.options.intervalSecs * 1000);
    this.timer.unref();
  }

  /** Runs one pass now (also what the timer calls); a pass already running is joined, not doubled. */
  runOnce(now = Date.now()): Promise<ReconciliationRun> {
    this.running ??= this.telemetry.reconciliation((due) => this.pass(now, due)).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  private async pass(now: number, noteDue: (count: number) => void = () => undefined): Promise<ReconciliationRun> {
    const run: ReconciliationRun = { checked: 0, settled: 0 };
    if (now < this.pausedUntil) return { ...run, rateLimitedUntil: this.pausedUntil };
    let due;
    try {
      due = await this.store.takeDuePending(now, this.options.batchSize, this.leaseMs);
    } catch (error) {
      this.logger.error(`reconciliation: store unreachable: ${describe(error)}`);
      return run;
    }
    noteDue(due.length);
    // One at a time: each is a call to the service, whose docs warn against bursts of verifies.
    for (const [index, entry] of due.entries()) {
      const result = await this.outcomes.settle({
        paymentId: entry.paymentId,
        source: 'reconciliation',
        expected: { amount: entry.amount, developerTrackingId: entry.developerTrackingId, origin: 'binding' },
      });
      const waitSecs = result.kind === 'verify-failed' ? result.rateLimitedSecs : undefined;
      if (waitSecs !== undefined) {
        // Every further verify would be refused too (and may count against the merchant): stop,
        // and give back what this pass took, due when the service said, no check counted.
        this.pausedUntil = now + waitSecs * 1000;
        const rest = due.slice(index);
        this.logger.warn(`reconciliation: the service rate-limits verify; pausing ${waitSecs} s, ${rest.length} payment(s) put back`);
        for (const back of rest) {
          try {
            await this.store.schedulePending(back, this.pausedUntil);
          } catch (error) {
            // The taken lease brings it back on its own.
            this.logger.error(`reconciliation: store unreachable while putting back ${back.paymentId}: ${describe(error)}`);
          }
        }
        return { ...run, rateLimitedUntil: this.pausedUntil };
      }
      if (result.kind !== 'busy' && result.kind !== 'duplicate' && result.kind !== 'store-unavailable') run.checked++;
      try {
        if (result.kind === 'handled' || result.kind === 'mismatch' || result.kind === 'duplicate') {
          run.settled++;
          await this.store.removePending(entry.paymentId);
        } else if (result.kind === 'busy') {
          // Another path holds it; the taken lease brings it back if that path does not finish.
        } else if (entry.checks + 1 >= this.options.maxChecks) {
          await this.store.removePending(entry.paymentId);
          this.logger.error(`reconciliation: gave up on ${entry.paymentId} after ${entry.checks + 1} checks (last: ${result.kind}); reconcile it by hand`);
        } else {
          const wait = Math.min(SETTLEMENT_WAITS.reconcileMaxBackoffMs, this.options.intervalSecs * 1000 * 2 ** entry.checks);
          await this.store.schedulePending({ ...entry, checks: entry.checks + 1 }, now + wait);
        }
      } catch (error) {
        this.logger.error(`reconciliation: store unreachable while updating ${entry.paymentId}: ${describe(error)}`);
      }
    }
    return run;
  }
}
