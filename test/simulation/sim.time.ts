import type { Clock, ClockTimer } from '../../lib/core/time/time.clock.js';

/**
 * Virtual time for the engine's simulation: one queue of events ordered by time (then by the
 * order they were scheduled), run one at a time; after each, every promise the event set going
 * is let run to its next wait (a macrotask turn drains the microtask queue), so an `await` on
 * virtual I/O resumes exactly when the simulation says it answers. Deterministic for a seed.
 */
export class VirtualTime {
  now: number;
  #heap: SimEvent[] = [];
  #seq = 0;
  /** Events run so far (a history's size). */
  ran = 0;
  /** Real I/O in flight (a Redis or PostgreSQL store): virtual time stands still until it answers. */
  #inflight = 0;

  /** @param start the epoch ms virtual time starts at */
  constructor(start: number) {
    this.now = start;
  }

  /** Runs `fn` at virtual time `at` (not before now). */
  at(at: number, fn: () => void): SimEvent {
    const event: SimEvent = { at: Math.max(at, this.now), seq: this.#seq++, fn, cancelled: false };
    push(this.#heap, event);
    return event;
  }

  /** Runs `fn` `ms` from now. */
  after(ms: number, fn: () => void): SimEvent {
    return this.at(this.now + Math.max(0, ms), fn);
  }

  /** Runs every event due up to `until`, in order, then sets the time to `until`. */
  /**
   * Work done outside virtual time (a real server's answer): no event runs until it settles, so a
   * history over a real store runs the same events in the same order as over the memory store.
   */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inflight++;
    const done = () => void this.#inflight--;
    work.then(done, done);
    return work;
  }

  async #quiet(): Promise<void> {
    await turn();
    while (this.#inflight > 0) await new Promise((resolve) => setTimeout(resolve, 0));
  }

  async runUntil(until: number): Promise<void> {
    await this.#quiet();
    while (this.#heap.length > 0 && this.#heap[0].at <= until) {
      const event = pop(this.#heap);
      if (event.cancelled) continue;
      this.now = event.at;
      this.ran++;
      event.fn();
      await this.#quiet();
    }
    this.now = Math.max(this.now, until);
  }
}

/** One scheduled event. */
export interface SimEvent {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Lets every promise run to its next wait: Node drains the microtask queue before a macrotask. */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * An instance's clock: virtual time shifted by its skew; its timers die with the instance (a
 * crashed process runs nothing more). Like a host's own clock it has no monotonic time, so an
 * operator's step of it (`stepMs`: NTP, a VM restored from a snapshot) shows only in its readings.
 */
export class InstanceClock implements Clock {
  /** The sum of the steps the instance's wall clock took (its timers run on unaffected). */
  stepMs = 0;

  constructor(
    private readonly time: VirtualTime,
    readonly skewMs: number,
    private readonly alive: () => boolean,
    /** Until when the instance is stalled (a GC pause, its VM paused): its timers wait for it. */
    private readonly frozenUntil: () => number = () => 0,
  ) {}

  now(): number {
    return this.time.now + this.skewMs + this.stepMs;
  }

  /** Monotonic time, as every real machine has (`performance.now()`): steps do not move it. */
  elapsed(): number {
    return this.time.now;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    // A stalled process runs its due timers when it resumes; clearTimeout reaches the timer either way.
    const handle: { event: SimEvent } = { event: undefined as unknown as SimEvent };
    const fire = () => {
      const until = this.frozenUntil();
      if (until > this.time.now) handle.event = this.time.at(until, fire);
      else if (this.alive()) fn();
    };
    handle.event = this.time.after(ms, fire);
    return handle as unknown as ClockTimer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer !== undefined) (timer as unknown as { event: SimEvent }).event.cancelled = true;
  }
}

/** A seeded pseudo-random source (mulberry32): the whole history follows from its seed. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A number in [lo, hi). */
  between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return Math.floor(this.between(lo, hi + 1));
  }

  /** One of the items. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function push(heap: SimEvent[], event: SimEvent): void {
  heap.push(event);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i], heap[parent])) break;
    [heap[i], heap[parent]] = [heap[parent], heap[i]];
    i = parent;
  }
}

function pop(heap: SimEvent[]): SimEvent {
  const top = heap[0];
  const last = heap.pop() as SimEvent;
  if (heap.length > 0) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l], heap[m])) m = l;
      if (r < heap.length && before(heap[r], heap[m])) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  }
  return top;
}
