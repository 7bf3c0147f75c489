/**
 * The one source of time of the engine. Every age, due time, lease renewal and wait of the core
 * reads it, so that a test (or the engine's simulation) can move time, and an instance's skew is
 * one value to correct rather than many `Date.now()` calls to find.
 */
export interface Clock {
  /** The current time, epoch ms. */
  now(): number;
  /**
   * Calls `fn` once after `ms`. The timer never keeps the process alive (the engine's timers are
   * housekeeping: a process with nothing else to do may exit).
   */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  /** Cancels a timer of {@link Clock.setTimeout}; nothing happens for one that already ran or `undefined`. */
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** A timer of a {@link Clock}: opaque, only handed back to {@link Clock.clearTimeout}. */
export interface ClockTimer {
  /** Brands the type; never read. */
  readonly __clockTimer?: never;
}

/** The process's own clock: `Date.now()` and unref'd Node timers. */
export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number): ClockTimer => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return timer as unknown as ClockTimer;
  },
  clearTimeout: (timer: ClockTimer | undefined): void => {
    if (timer !== undefined) clearTimeout(timer as unknown as NodeJS.Timeout);
  },
});

/** Resolves after `ms` of `clock`'s time. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
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
