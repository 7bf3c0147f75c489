import type { Clock, ClockTimer } from '../time/index.js';

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
