/**
 * The one source of time of the engine. Every age, due time, lease renewal and wait of the core
 * reads it, so that a test (or the engine's simulation) can move time, and an instance's skew is
 * one value to correct rather than many `Date.now()` calls to find.
 */
export interface Clock {
  /** The current time, epoch ms. */
  now(): number;
  /**
   * Calls `fn` once after `ms`. By default the timer does not keep the process alive: the
   * engine's housekeeping (sweeps, wakes, lease renewals) must not hold open a process that has
   * nothing else to do.
   * @param keepAlive true for a wait some caller is awaiting (a retry's back-off, a poll): the
   *   process stays up until it ends, or a script awaiting a call would exit mid-call. Default false.
   */
  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): ClockTimer;
  /** Cancels a timer of {@link Clock.setTimeout}; nothing happens for one that already ran or `undefined`. */
  clearTimeout(timer: ClockTimer | undefined): void;
  /**
   * Optional: a monotonic reading in ms (`performance.now()` for the system's clock), which an
   * operator's step of the wall clock (NTP, a VM restored from a snapshot) does not move. With it
   * the shared clock notices a step of `now()` in either direction at once and measures its offset
   * to the store's clock again; without it, only a step back (or one past a minute) is noticed.
   */
  elapsed?(): number;
}

/** A timer of a {@link Clock}: opaque, only handed back to {@link Clock.clearTimeout}. */
export interface ClockTimer {
  /** Brands the type; never read. */
  readonly __clockTimer?: never;
}

/** The process's own clock: `Date.now()` and Node timers, unref'd unless kept alive. */
export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number, keepAlive = false): ClockTimer => {
    const timer = setTimeout(fn, ms);
    if (!keepAlive) timer.unref();
    return timer as unknown as ClockTimer;
  },
  clearTimeout: (timer: ClockTimer | undefined): void => {
    if (timer !== undefined) clearTimeout(timer as unknown as NodeJS.Timeout);
  },
  elapsed: () => performance.now(),
});

/**
 * The clock's monotonic reading when it has one, else its wall time: for durations (a lease, a
 * budget's window, a give-up time) that a step of the wall clock must not stretch or cut.
 */
export function monotonicNow(clock: Clock): number {
  return clock.elapsed?.() ?? clock.now();
}

/** Resolves after `ms` of `clock`'s time; the process stays up meanwhile (someone awaits it). */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms, true));
}

/**
 * Calls `fn` every `ms` of `clock`'s time until the returned function is called. Each call is
 * scheduled after the previous one was started (not awaited): a slow `fn` does not pile up
 * timers.
 * @returns stops the repetition
 */
export function every(clock: Clock, ms: number, fn: () => void): () => void {
  let timer: ClockTimer | undefined;
  let stopped = false;
  const arm = (): void => {
    timer = clock.setTimeout(() => {
      if (stopped) return;
      arm();
      fn();
    }, ms);
  };
  arm();
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}
