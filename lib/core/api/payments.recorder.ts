import { type PaymentsLogger, describe } from '../common/index.js';
import type { PaymentBinding, PendingPayment } from '../store/index.js';
import { monotonicNow, within, type Clock, type SharedClock, type SharedMark } from '../time/index.js';

/** How the writes of a created payment are waited for and retried. */
export const RECORDER_WAITS = {
  /** How long generatePayment waits for the store before it answers the link anyway, ms. */
  answerWithinMs: 1_000,
  /** First wait before a failed write is tried again, ms (doubling). */
  firstRetryMs: 500,
  /** Longest wait between two tries, ms: short, so that the payment is recorded soon after the store is back. */
  maxRetryMs: 5_000,
} as const;

/**
 * The store writes of a payment the service has created (its token's binding, its place in the
 * reconciliation queue, its order's checkout). The service has the payment: the customer must get
 * its link whatever the store does. So the writes are waited for a moment, then go on in the
 * background, retried with backoff until they succeed or the payment's session (and grace) is
 * over; meanwhile the payment waits here, in this process, for its place in the re-check queue.
 * The webhook token is self-contained, so a payment whose binding is late is still confirmed.
 */
export class PaymentRecorder {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #wakers = new Set<() => void>();
  #closing = false;

  /**
   * @param logger where late and lost writes are reported
   * @param clock the instance's own clock: its waits, and its monotonic time for how long writes
   *   are tried (a step of the wall clock, before the store's time could be measured, must not end
   *   them early)
   */
  constructor(
    private readonly logger: PaymentsLogger,
    private readonly clock: Clock,
  ) {}

  /**
   * Runs `write` (retried in the background on failure) and resolves once it succeeded or after
   * {@link RECORDER_WAITS.answerWithinMs}, whichever comes first. Never rejects.
   * @param paymentId the payment, for the logs
   * @param write every store write of the payment, idempotent (run again whole on a failure);
   *   `late` once a first try failed: the store was away, and a path may have queued the payment
   *   meanwhile (see {@link lateEntry})
   * @param giveUpAfterMs how long from now a failing write is tried again
   */
  record(paymentId: string, write: (late: boolean) => Promise<void>, giveUpAfterMs: number): Promise<void> {
    const task = this.#keepTrying(paymentId, write, this.#monotonic() + giveUpAfterMs);
    this.#inFlight.add(task);
    // Answered once the writes are made or after answerWithinMs, whichever comes first.
    return within(task, this.clock, RECORDER_WAITS.answerWithinMs, () => undefined, {
      keepAlive: true,
      ended: () => this.#inFlight.delete(task),
    });
  }

  /** How many payments still wait for their store writes. */
  get waiting(): number {
    return this.#inFlight.size;
  }

  /** Stops waiting between tries: each write still waiting is tried once more, then reported. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const wake of this.#wakers) wake();
    await Promise.allSettled([...this.#inFlight]);
  }

  async #keepTrying(paymentId: string, write: (late: boolean) => Promise<void>, giveUpAt: number): Promise<void> {
    let delay: number = RECORDER_WAITS.firstRetryMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await write(attempt > 1);
        if (attempt > 1) this.logger.log(`payment ${paymentId} is now recorded in the store (attempt ${attempt})`);
        return;
      } catch (error) {
        const why = describe(error);
        if (this.#closing || this.#monotonic() + delay > giveUpAt) {
          this.logger.error(
            `payment ${paymentId} was created at the service but could not be recorded in the store (${why}). Its webhook still confirms it ` +
              `(the token carries what to check), and so does the customer's return (reconcilePayment); if neither comes, call ` +
              `reconcilePayment('${paymentId}') once the store answers again.`,
          );
          return;
        }
        if (attempt === 1) {
          this.logger.warn(
            `payment ${paymentId} was created at the service; the store did not take it yet (${why}): its link is answered, the write is retried in the background`,
          );
        }
        await this.#sleep(delay);
        delay = Math.min(delay * 2, RECORDER_WAITS.maxRetryMs);
      }
    }
  }

  #monotonic(): number {
    return monotonicNow(this.clock);
  }

  #sleep(ms: number): Promise<void> {
    if (this.#closing) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.clock.clearTimeout(timer);
        this.#wakers.delete(wake);
        resolve();
      };
      const timer = this.clock.setTimeout(wake, ms);
      this.#wakers.add(wake);
    });
  }
}

/**
 * The queue entry of a payment recorded late (the store was away at generation). Its times are
 * moved by what the shared clock learnt meanwhile (during the outage its offset to the store's
 * clock could not be measured). A webhook or a return that found it pending meanwhile may have
 * queued it in the pending lane: the caller merges with that entry, never replaces it.
 * @param binding what generatePayment recorded, on the clock as it was then
 * @param clock the shared clock, synced again now that the store answers
 * @param mark the shared clock's reading when the binding's times were read
 * @returns the entry and the shift of its times, in ms
 */
export async function lateEntry(
  binding: PaymentBinding,
  clock: SharedClock,
  mark: SharedMark,
): Promise<{ entry: PendingPayment; shift: number }> {
  await clock.sync();
  const shift = clock.shiftSince(mark);
  const moved = (iso: string) => new Date(Date.parse(iso) + shift).toISOString();
  const entry: PendingPayment = { ...binding, createdAt: moved(binding.createdAt), checks: 0 };
  if (binding.sessionEndsAt !== undefined) entry.sessionEndsAt = moved(binding.sessionEndsAt);
  return { entry, shift };
}
