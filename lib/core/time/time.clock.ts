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
   * engine's housekeeping (reconciliation, wakes, lease renewals) must not hold open a process that has
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
 * `promise`'s outcome when it comes within `ms` of `clock`'s time, else `timedOut()`'s (its value,
 * or its throw as the rejection): one promise settled by whichever comes first. These waits are on
 * every payment's path, where a race with a timer's promise and a `finally` cost three more
 * promises and their turns.
 * @param options.keepAlive whether the timer keeps the process up meanwhile (default false)
 * @param options.ended hears how `promise` ended, and whether the timer had come first (it is
 *   abandoned then, not cancelled: JavaScript cannot)
 */
export function within<T>(
  promise: Promise<T>,
  clock: Clock,
  ms: number,
  timedOut: () => T,
  options: { keepAlive?: boolean; ended?: (failed: boolean, error: unknown, late: boolean) => void } = {},
): Promise<T> {
  const { keepAlive = false, ended } = options;
  return new Promise<T>((resolve, reject) => {
    let late = false;
    const timer = clock.setTimeout(
      () => {
        late = true;
        try {
          resolve(timedOut());
        } catch (error) {
          // `timedOut`'s own throw is the rejection, as it threw it.
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          reject(error);
        }
      },
      ms,
      keepAlive,
    );
    promise.then(
      (value) => {
        ended?.(false, undefined, late);
        if (late) return;
        clock.clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        ended?.(true, error, late);
        if (late) return;
        clock.clearTimeout(timer);
        // The promise's own rejection, passed on as it came.
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(error);
      },
    );
  });
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

/** How long a measured offset to the store's clock is trusted before it is measured again. */
export const SHARED_CLOCK_RESYNC_MS = 60_000;

/**
 * How far the instance's wall clock may move from its monotonic time between two readings before
 * it counts as stepped. A slewing NTP moves it by at most 0.5 ms a second, far below this.
 */
export const CLOCK_STEP_TOLERANCE_MS = 1_000;

/** Round trips tried by one measurement when the instance's clock steps during them. */
const MEASURE_ATTEMPTS = 3;

/** One reading of the instance's clock: its wall time and, when the clock has one, its monotonic time. */
export interface ClockReading {
  /** `Clock.now()`, epoch ms. */
  wall: number;
  /** `Clock.elapsed()`, ms; absent when the clock has no monotonic time. */
  elapsed?: number;
}

/**
 * Whether the offset to the store's clock must be measured again (pure). It must when none was
 * measured, when it is {@link SHARED_CLOCK_RESYNC_MS} old, and when the instance's wall clock was
 * stepped since: back (it reads earlier than it did before: a due time would not come for the
 * step's length) or, when the clock has monotonic time, either way by more than
 * {@link CLOCK_STEP_TOLERANCE_MS} against it.
 * @param measuredAt the reading when the offset was measured; `undefined`: never
 * @param latestWall the furthest wall time this clock read since the measurement (a step back
 *   shows against it, however many readings came after the step)
 * @param current the reading now
 */
export function mustMeasure(measuredAt: ClockReading | undefined, latestWall: number, current: ClockReading): boolean {
  // The latest wall time read is never before the measurement's: a step back past it shows here too.
  if (measuredAt === undefined || current.wall < latestWall) return true;
  const wallAge = current.wall - measuredAt.wall;
  if (measuredAt.elapsed === undefined || current.elapsed === undefined) return wallAge >= SHARED_CLOCK_RESYNC_MS;
  const age = current.elapsed - measuredAt.elapsed;
  return age >= SHARED_CLOCK_RESYNC_MS || Math.abs(wallAge - age) > CLOCK_STEP_TOLERANCE_MS;
}

/** The offsets a round trip to the store allows: it read its clock between sending and receiving. */
export interface OffsetBounds {
  /** The store's time less the local time the answer arrived, ms. */
  low: number;
  /** The store's time less the local time the question was sent, ms. */
  high: number;
}

/**
 * The offset a measurement gives (pure). The store read its clock somewhere inside the round trip,
 * so the offset lies within `bounds`, as far off its middle as half the round trip: a process frozen
 * for 18 s after the store answered would put the middle 9 s off. The earlier measurement's
 * prediction is kept when the bounds allow it, and otherwise moved to the nearer bound (the least
 * correction the measurement proves); the middle is used only when there is no prediction.
 * @param bounds what the round trip allows
 * @param predicted the offset the earlier measurement predicts now; `undefined`: none
 */
export function offsetFrom(bounds: OffsetBounds, predicted: number | undefined): number {
  if (predicted === undefined) return (bounds.low + bounds.high) / 2;
  return Math.min(Math.max(predicted, bounds.low), bounds.high);
}

/** A reading of the shared time, to correct later what was stamped with it ({@link SharedClock.shiftSince}). */
export interface SharedMark {
  /** The shared time read, epoch ms. */
  at: number;
  /** The instance's monotonic time then, when its clock has one. */
  elapsed?: number;
  /** The offset to the store's clock then. */
  offset: number;
}

/**
 * The time every instance sharing a store agrees on: this instance's clock corrected by its
 * offset to the store's clock (`store.now()`, the Redis or PostgreSQL server's time). Due times in
 * the reconciliation queue and the ages of outcome records are written by one instance and read
 * by another; with each instance's own clock, one whose clock is an hour ahead would make the
 * others wait that hour (or check an hour early). A store without a clock leaves the offset at 0.
 *
 * The offset is measured every {@link SHARED_CLOCK_RESYNC_MS} by {@link sync}, which the paths
 * call before they read the shared time, and at the first sync after the instance's clock was
 * stepped ({@link mustMeasure}); between syncs `now()` costs nothing.
 */
export class SharedClock implements Clock {
  #offset = 0;
  #measuredAt?: ClockReading;
  #latestWall = Number.NEGATIVE_INFINITY;
  #syncing?: Promise<void>;

  /**
   * @param local this instance's clock (its timers are used as they are: durations do not skew)
   * @param storeNow reads the store's clock, epoch ms; absent when the store has none
   */
  constructor(
    readonly local: Clock,
    private readonly storeNow?: () => Promise<number>,
  ) {
    if (local.elapsed) this.elapsed = () => local.elapsed?.() ?? local.now();
  }

  /**
   * The instance's own monotonic time, when its clock has one: durations counted on the shared
   * clock (a claim's lease) are not moved by a new measurement of the offset, which jumps with the
   * store's clock (a failover to a replica whose clock is behind).
   */
  readonly elapsed?: () => number;

  /**
   * The shared time. Once measured on a clock with monotonic time, it is the measurement's store
   * time plus the monotonic time since: a step of the instance's wall clock does not move it, also
   * while the store is out of reach and the offset cannot be measured again.
   */
  now(): number {
    const wall = this.#wall();
    const measured = this.#measuredAt;
    const elapsed = measured?.elapsed === undefined ? undefined : this.local.elapsed?.();
    if (measured?.elapsed !== undefined && elapsed !== undefined)
      return measured.wall + this.#offset + (elapsed - measured.elapsed);
    return wall + this.#offset;
  }

  /** @inheritdoc */
  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): ClockTimer {
    return this.local.setTimeout(fn, ms, keepAlive);
  }

  /** @inheritdoc */
  clearTimeout(timer: ClockTimer | undefined): void {
    this.local.clearTimeout(timer);
  }

  /** Reads the shared time, with what {@link shiftSince} needs to correct it later. */
  mark(): SharedMark {
    const at = this.now();
    const elapsed = this.local.elapsed?.();
    return elapsed === undefined ? { at, offset: this.#offset } : { at, elapsed, offset: this.#offset };
  }

  /**
   * How far a time stamped at `mark` is off the shared time as this clock knows it now (add it to
   * correct the stamp): what it learnt since (a first measurement after a store outage, a step of
   * the instance's clock). With monotonic time, the shared time now less the monotonic time since;
   * without, the change of the offset.
   */
  shiftSince(mark: SharedMark): number {
    const elapsed = mark.elapsed === undefined ? undefined : this.local.elapsed?.();
    if (mark.elapsed !== undefined && elapsed !== undefined) return this.now() - (elapsed - mark.elapsed) - mark.at;
    return this.#offset - mark.offset;
  }

  /** The last measured offset to the store's clock, ms (store minus local). */
  get offsetMs(): number {
    return this.#offset;
  }

  /**
   * Whether the shared time is known: the store has no clock, or its offset was measured (at
   * least once: a store out of reach since keeps the last offset, and monotonic time carries it).
   * An instance that never reached the store's clock (started while the store was down) reads its
   * own, which may be an hour off: what it would write with it (due times, record dates) would be.
   */
  get known(): boolean {
    return this.storeNow === undefined || this.#measuredAt !== undefined;
  }

  /**
   * Whether {@link sync} would measure the offset now (it is older than
   * {@link SHARED_CLOCK_RESYNC_MS}, never measured, or the instance's clock stepped): when not,
   * sync answers at once, and a path need not put a time limit on it.
   */
  get due(): boolean {
    return this.storeNow !== undefined && mustMeasure(this.#measuredAt, this.#latestWall, this.#reading());
  }

  /**
   * Measures the offset again when it is older than {@link SHARED_CLOCK_RESYNC_MS}. Never throws:
   * a store that does not answer keeps the last offset (the paths report the store's failure on
   * their own calls).
   * @returns {@link known} once done: false when the store's clock was never reached, so a path
   *   must not write times with it (even if the store answers its next call: it may just be back)
   */
  async sync(): Promise<boolean> {
    if (this.storeNow && mustMeasure(this.#measuredAt, this.#latestWall, this.#reading())) {
      this.#syncing ??= this.#measure(this.storeNow).finally(() => (this.#syncing = undefined));
      await this.#syncing;
    }
    return this.known;
  }

  /** The local wall time; the furthest one read since the measurement is kept (a step back shows against it). */
  #wall(): number {
    const wall = this.local.now();
    if (wall > this.#latestWall) this.#latestWall = wall;
    return wall;
  }

  #reading(): ClockReading {
    const reading: ClockReading = { wall: this.#wall() };
    const elapsed = this.local.elapsed?.();
    if (elapsed !== undefined) reading.elapsed = elapsed;
    return reading;
  }

  /**
   * The offset the last measurement predicts at `reading`: with monotonic time, the shared time it
   * gives then less the wall time read; without, the offset as it was. `undefined`: never measured.
   */
  #predictedOffset(reading: ClockReading): number | undefined {
    const measured = this.#measuredAt;
    if (measured === undefined) return undefined;
    if (measured.elapsed === undefined || reading.elapsed === undefined) return this.#offset;
    return measured.wall + this.#offset + (reading.elapsed - measured.elapsed) - reading.wall;
  }

  async #measure(storeNow: () => Promise<number>): Promise<void> {
    // A step during the round trip spoils its middle: measured again at once (a caller that joined
    // this measurement must not read the time with the offset of before the step).
    for (let attempt = 0; attempt < MEASURE_ATTEMPTS; attempt++) {
      const sent = this.#reading();
      let remote: number;
      try {
        remote = await storeNow();
      } catch {
        return; // Kept as it was; retried on the next sync.
      }
      const received = this.#reading();
      if (!Number.isFinite(remote)) return;
      if (mustMeasure(sent, sent.wall, received)) continue;
      this.#offset = Math.round(
        offsetFrom({ low: remote - received.wall, high: remote - sent.wall }, this.#predictedOffset(received)),
      );
      this.#measuredAt = received;
      this.#latestWall = received.wall;
      return;
    }
  }
}
