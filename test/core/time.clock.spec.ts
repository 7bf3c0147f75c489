import { describe, expect, it } from '@jest/globals';
import {
  CLOCK_STEP_TOLERANCE_MS,
  SHARED_CLOCK_RESYNC_MS,
  SharedClock,
  monotonicNow,
  mustMeasure,
  offsetFrom,
  type Clock,
  type ClockReading,
  type ClockTimer,
  type OffsetBounds,
} from '../../lib/core/time/time.clock.js';

/** An instance's clock that an operator (NTP, a VM restore) can step; its timers are not used here. */
class SteppingClock implements Clock {
  constructor(public wall: number) {}
  now(): number {
    return this.wall;
  }
  setTimeout(): ClockTimer {
    return {};
  }
  clearTimeout(): void {}
}

const STORE_START = 1_800_000_000_000;

/** A shared clock over a store whose clock runs true; the local one starts `skewMs` off it. */
function setup(skewMs: number) {
  let storeTime = STORE_START;
  const local = new SteppingClock(STORE_START + skewMs);
  let measured = 0;
  const shared = new SharedClock(local, async () => {
    measured++;
    return storeTime;
  });
  /** Real time passes: both clocks move on. */
  const pass = (ms: number) => {
    storeTime += ms;
    local.wall += ms;
  };
  return { local, shared, pass, measures: () => measured, storeTime: () => storeTime };
}

/** The same with monotonic time, which a step leaves alone. */
class MonotonicSteppingClock extends SteppingClock {
  monotonic = 0;
  elapsed(): number {
    return this.monotonic;
  }
}

const R = SHARED_CLOCK_RESYNC_MS;
const T = CLOCK_STEP_TOLERANCE_MS;
const at = (wall: number, elapsed?: number): ClockReading => (elapsed === undefined ? { wall } : { wall, elapsed });

describe('mustMeasure: when the offset to the store is measured again', () => {
  it.each<[string, ClockReading | undefined, number, ClockReading, boolean]>([
    ['never measured', undefined, 0, at(5), true],
    ['measured 10 s ago, clock steady', at(0), 10_000, at(10_000), false],
    ['measured a minute ago', at(0), R - 1, at(R), true],
    ['stepped back 5 s since the last reading (younger than the offset)', at(0), 10_000, at(5_000), true],
    ['stepped back past the measurement', at(100_000), 100_000, at(40_000), true],
    ['stepped forward 5 s, no monotonic time: only its age counts', at(0), 10_000, at(15_000), false],
    ['stepped forward 5 s against monotonic time', at(0, 0), 10_000, at(15_000, 10_000), true],
    ['stepped back 5 s against monotonic time', at(0, 0), 0, at(5_000, 10_000), true],
    ['drifted within the tolerance', at(0, 0), 0, at(10_000 + T, 10_000), false],
    ['a minute of monotonic time, wall clock steady', at(0, 0), 0, at(R, R), true],
  ])('%s: %s', (_what, measuredAt, latestWall, current, expected) => {
    expect(mustMeasure(measuredAt, latestWall, current)).toBe(expected);
  });
});

describe('offsetFrom: the offset a round trip to the store gives', () => {
  const bounds = (low: number, high: number): OffsetBounds => ({ low, high });
  it.each<[string, OffsetBounds, number | undefined, number]>([
    ['first measurement: the middle of the round trip', bounds(-100, 100), undefined, 0],
    [
      'first measurement, a freeze of 18 s after the answer: the middle, 9 s off',
      bounds(-18_000, 0),
      undefined,
      -9_000,
    ],
    ['the prediction inside the bounds is kept', bounds(-100, 100), 40, 40],
    ['a freeze stretched the round trip: the prediction stays', bounds(-18_000, 0), -2, -2],
    ['the prediction below the bounds moves up to them', bounds(500, 510), 0, 500],
    ['the prediction above the bounds moves down to them', bounds(-510, -500), 0, -500],
    ['an instant round trip decides alone', bounds(42, 42), 7, 42],
  ])('%s', (_what, b, predicted, expected) => {
    expect(offsetFrom(b, predicted)).toBe(expected);
  });
});

describe('the shared clock', () => {
  it.each([
    // [what happened, local step in ms, time passed after the step before the next sync]
    ['a backward step of a minute (NTP)', -60_000, 1_000],
    ['a backward step of an hour (a VM restored from a snapshot)', -3_600_000, 1_000],
    ['a backward step of 5 s', -5_000, 0],
    ['a forward step of an hour', 3_600_000, 1_000],
    ['a forward step of two minutes', 120_000, 0],
  ])('reads the store’s time again at the next sync after %s', async (_what, stepMs, afterMs) => {
    const { local, shared, pass, measures, storeTime } = setup(0);
    await shared.sync();
    expect(shared.now()).toBe(storeTime());
    pass(10_000);
    await shared.sync(); // within the minute: nothing measured
    expect(measures()).toBe(1);
    local.wall += stepMs;
    pass(afterMs);
    // Paths read the time before they sync (a checkout's lookup): the step must still show.
    shared.now();
    await shared.sync();
    expect(measures()).toBe(2);
    // The instance's step no longer shows in the time every instance agrees on.
    expect(shared.now()).toBe(storeTime());
  });

  it.each([
    ['back', -5_000],
    ['forward', 5_000],
  ])('is not moved by a step %s of 5 s when the clock has monotonic time, and measures again', async (_way, stepMs) => {
    let storeTime = STORE_START;
    let measured = 0;
    const local = new MonotonicSteppingClock(STORE_START);
    const shared = new SharedClock(local, async () => (measured++, storeTime));
    await shared.sync();
    storeTime += 10_000;
    local.wall += 10_000 + stepMs;
    local.monotonic += 10_000;
    expect(shared.now()).toBe(storeTime);
    await shared.sync();
    expect(measured).toBe(2);
    expect(shared.now()).toBe(storeTime);
  });

  it.each([
    ['back an hour', -3_600_000],
    ['forward half an hour', 1_800_000],
  ])('keeps the true time through a step %s while the store is out of reach (monotonic time)', async (_w, stepMs) => {
    let storeTime = STORE_START;
    let down = false;
    const local = new MonotonicSteppingClock(STORE_START + 7_000);
    const shared = new SharedClock(local, async () => {
      if (down) throw new Error('store down');
      return storeTime;
    });
    await shared.sync();
    down = true;
    storeTime += 20_000;
    local.wall += 20_000 + stepMs;
    local.monotonic += 20_000;
    await shared.sync(); // fails: the offset cannot be measured again
    expect(shared.now()).toBe(storeTime);
    storeTime += 90_000;
    local.wall += 90_000;
    local.monotonic += 90_000;
    await shared.sync();
    expect(shared.now()).toBe(storeTime);
  });

  it.each([
    ['with monotonic time, stepped forward 20 min meanwhile', true, 1_200_000],
    ['with monotonic time, no step', true, 0],
    ['without monotonic time, no step', false, 0],
  ])(
    'corrects a time stamped before its first measurement (store away at start, an instance 27 min ahead): %s',
    async (_what, monotonic, stepMs) => {
      let storeTime = STORE_START;
      let down = true;
      const local = monotonic
        ? new MonotonicSteppingClock(STORE_START + 1_620_000)
        : new SteppingClock(STORE_START + 1_620_000);
      const move = (ms: number) => {
        storeTime += ms;
        local.wall += ms;
        if (local instanceof MonotonicSteppingClock) local.monotonic += ms;
      };
      const shared = new SharedClock(local, async () => {
        if (down) throw new Error('store down');
        return storeTime;
      });
      await shared.sync();
      const mark = shared.mark();
      const stampedAt = storeTime;
      move(50_000);
      local.wall += stepMs;
      down = false;
      await shared.sync();
      expect(mark.at + shared.shiftSince(mark)).toBe(stampedAt);
    },
  );

  it('measures again when the clock steps back during the round trip (a caller joined to it reads the true time)', async () => {
    let storeTime = STORE_START;
    const local = new SteppingClock(STORE_START);
    let calls = 0;
    const shared = new SharedClock(local, async () => {
      // The first answer comes after an hour's step back of the instance's clock.
      if (calls++ === 0) local.wall -= 3_600_000;
      return storeTime;
    });
    await shared.sync();
    expect(calls).toBe(2);
    expect(shared.now()).toBe(storeTime);
    storeTime += 1_000;
    local.wall += 1_000;
    expect(shared.now()).toBe(storeTime);
  });

  it.each([
    ['without monotonic time', () => new SteppingClock(STORE_START + 3_000)],
    ['with monotonic time', () => new MonotonicSteppingClock(STORE_START + 3_000)],
  ])(
    'is not put off by a process frozen after the store answered (the round trip’s middle would be 9 s off), %s',
    async (_what, makeClock) => {
      let storeTime = STORE_START;
      const local = makeClock();
      let freeze = false;
      const shared = new SharedClock(local, async () => {
        const answer = storeTime;
        // The process freezes for 18 s after the store read its clock: real time passes for both.
        if (freeze) {
          storeTime += 18_000;
          local.wall += 18_000;
          if (local instanceof MonotonicSteppingClock) local.monotonic += 18_000;
        }
        return answer;
      });
      await shared.sync();
      expect(shared.now()).toBe(storeTime);
      freeze = true;
      storeTime += SHARED_CLOCK_RESYNC_MS;
      local.wall += SHARED_CLOCK_RESYNC_MS;
      if (local instanceof MonotonicSteppingClock) local.monotonic += SHARED_CLOCK_RESYNC_MS;
      await shared.sync();
      expect(shared.now()).toBe(storeTime);
    },
  );

  it('counts durations on the instance’s monotonic time: a measurement after the store’s clock stepped back does not move them', async () => {
    let storeTime = STORE_START;
    const local = new MonotonicSteppingClock(STORE_START);
    const shared = new SharedClock(local, async () => storeTime);
    await shared.sync();
    const since = monotonicNow(shared);
    // The store fails over to a replica whose clock is 5 min behind; a resync interval later, measured again.
    storeTime -= 300_000;
    storeTime += R;
    local.wall += R;
    local.monotonic += R;
    await shared.sync();
    expect(shared.now()).toBe(storeTime);
    // A claim's lease counted since then (settlement.attempt.ts) has run R, not R less the step.
    expect(monotonicNow(shared) - since).toBe(R);
  });

  it('knows the shared time once it reached the store’s clock, and keeps knowing it while the store is away', async () => {
    let down = true;
    const local = new MonotonicSteppingClock(STORE_START + 3_600_000);
    const shared = new SharedClock(local, async () => {
      if (down) throw new Error('store down');
      return STORE_START;
    });
    expect([shared.known, await shared.sync()]).toEqual([false, false]);
    down = false;
    expect([await shared.sync(), shared.known, shared.now()]).toEqual([true, true, STORE_START]);
    down = true;
    local.wall += SHARED_CLOCK_RESYNC_MS;
    local.monotonic += SHARED_CLOCK_RESYNC_MS;
    expect([await shared.sync(), shared.now()]).toEqual([true, STORE_START + SHARED_CLOCK_RESYNC_MS]);
    // A store without a clock: its own time is the shared one.
    expect(await new SharedClock(local).sync()).toBe(true);
  });

  it('measures at most once a minute while the local clock runs steadily, then again', async () => {
    const { shared, pass, measures, storeTime } = setup(-42_000);
    await shared.sync();
    expect(shared.now()).toBe(storeTime());
    for (let k = 0; k < 5; k++) {
      pass(SHARED_CLOCK_RESYNC_MS / 6);
      await shared.sync();
    }
    expect(measures()).toBe(1);
    pass(SHARED_CLOCK_RESYNC_MS / 6);
    await shared.sync();
    expect(measures()).toBe(2);
    expect(shared.offsetMs).toBe(42_000);
  });

  it('says a measurement is due exactly when sync would measure (the paths skip its time limit otherwise)', async () => {
    const { shared, pass, measures } = setup(-42_000);
    const dues: boolean[] = [];
    for (let k = 0; k < 8; k++) {
      dues.push(shared.due);
      const before = measures();
      await shared.sync();
      expect(measures() - before).toBe(dues[k] ? 1 : 0);
      pass(SHARED_CLOCK_RESYNC_MS / 3);
    }
    // Never measured, then once a minute.
    expect(dues).toEqual([true, false, false, true, false, false, true, false]);
    expect(new SharedClock(setup(0).shared.local).due).toBe(false);
  });
});
