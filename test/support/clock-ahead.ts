import { SYSTEM_CLOCK, type Clock, type ClockTimer } from '../../lib/core/time/index.js';

/**
 * The system clock, moved on by the test: given as the engine's `clock` option, it makes time pass
 * for one client (wall and monotonic time alike, not a step of the wall clock) without touching
 * `Date.now` for anything else. Its timers are the system's.
 */
export class AheadClock implements Clock {
  #by: () => number = () => 0;

  /** From now on, the clock reads `ms` (or what `ms()` answers at each reading) ahead. */
  ahead(ms: number | (() => number)): void {
    this.#by = typeof ms === 'number' ? () => ms : ms;
  }

  now(): number {
    return SYSTEM_CLOCK.now() + this.#by();
  }

  elapsed(): number {
    return performance.now() + this.#by();
  }

  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): ClockTimer {
    return SYSTEM_CLOCK.setTimeout(fn, ms, keepAlive);
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    SYSTEM_CLOCK.clearTimeout(timer);
  }
}
