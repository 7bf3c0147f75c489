import type { Clock, ClockTimer } from './clock.port.js';

/** How long a measured offset to the store's clock is trusted before it is measured again. */
export const SHARED_CLOCK_RESYNC_MS = 60_000;

/**
 * The time every instance sharing a store agrees on: this instance's clock corrected by its
 * offset to the store's clock (`store.now()`, the Redis or PostgreSQL server's time). Due times in
 * the reconciliation queue and the ages of outcome records are written by one instance and read
 * by another; with each instance's own clock, one whose clock is an hour ahead would make the
 * others wait that hour (or check an hour early). A store without a clock leaves the offset at 0.
 *
 * The offset is measured at most every {@link SHARED_CLOCK_RESYNC_MS} by {@link sync}, which the
 * paths call before they read the shared time; between syncs `now()` costs nothing.
 */
export class SharedClock implements Clock {
  #offset = 0;
  #syncedAt = Number.NEGATIVE_INFINITY;
  #syncing?: Promise<void>;

  /**
   * @param local this instance's clock (its timers are used as they are: durations do not skew)
   * @param storeNow reads the store's clock, epoch ms; absent when the store has none
   */
  constructor(
    readonly local: Clock,
    private readonly storeNow?: () => Promise<number>,
  ) {}

  /** @inheritdoc */
  now(): number {
    return this.local.now() + this.#offset;
  }

  /** @inheritdoc */
  setTimeout(fn: () => void, ms: number, keepAlive?: boolean): ClockTimer {
    return this.local.setTimeout(fn, ms, keepAlive);
  }

  /** @inheritdoc */
  clearTimeout(timer: ClockTimer | undefined): void {
    this.local.clearTimeout(timer);
  }

  /** The last measured offset to the store's clock, ms (store minus local). */
  get offsetMs(): number {
    return this.#offset;
  }

  /**
   * Measures the offset again when it is older than {@link SHARED_CLOCK_RESYNC_MS}. Never throws:
   * a store that does not answer keeps the last offset (the paths report the store's failure on
   * their own calls).
   */
  sync(): Promise<void> {
    if (!this.storeNow || this.local.now() - this.#syncedAt < SHARED_CLOCK_RESYNC_MS) return Promise.resolve();
    this.#syncing ??= this.#measure(this.storeNow).finally(() => (this.#syncing = undefined));
    return this.#syncing;
  }

  async #measure(storeNow: () => Promise<number>): Promise<void> {
    const sent = this.local.now();
    try {
      const remote = await storeNow();
      const received = this.local.now();
      if (!Number.isFinite(remote)) return;
      // The store read its clock somewhere during the round trip: its middle is the best guess.
      this.#offset = Math.round(remote - (sent + received) / 2);
      this.#syncedAt = received;
    } catch {
      // Kept as it was; retried on the next sync.
    }
  }
}
