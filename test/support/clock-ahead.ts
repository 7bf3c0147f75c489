import { SYSTEM_CLOCK, type Clock, type ClockTimer } from '../../lib/core/time/index.js';

/**
 * The system clock, moved on by the test: given as the engine's `clock` option, it makes time pass
 * for one client (wall and monotonic time alike, not a step of the wall clock) without touching
 * `Date.now` for anything else. Its timers are the system's.
 */
export class AheadClock implements Clock {
  #now: () => number = () => SYSTEM_CLOCK.now();
  #elapsed: () => number = () => performance.now();

  /**
   * From now on the clock stands still at the current time plus `ms` (or plus what `ms()` answers
   * at each reading): only the test moves it, however long the machine takes meanwhile.
   */
  ahead(ms: number | (() => number)): void {
    const by = typeof ms === 'number' ? () => ms : ms;
    const wall = SYSTEM_CLOCK.now();
    const monotonic = performance.now();
    this.#now = () => wall + by();
    this.#elapsed = () => monotonic + by();
  }

  /** Back to the system's time. */
  real(): void {
    this.#now = () => SYSTEM_CLOCK.now();
    this.#elapsed = () => performance.now();
  }

  now(): number {
    return this.#now();
  }

  elapsed(): number {
    return this.#elapsed();
  }

  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): ClockTimer {
    return SYSTEM_CLOCK.setTimeout(fn, ms, keepAlive);
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    SYSTEM_CLOCK.clearTimeout(timer);
  }
}
