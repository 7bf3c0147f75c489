/**
 * The pending lane's rule (a pure function, as a table): when a payment a webhook or a return found
 * still pending is checked again, and the walk of the whole lane for a verify that lags by minutes.
 */
import { describe, expect, it } from '@jest/globals';
import { nextRecheck, RECHECK_WAITS_MS } from '../../lib/core/settlement/settlement.rechecks.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const GRACE_SECS = 60;
const iso = (ms: number) => new Date(ms).toISOString();
const entry = (rechecks: number | undefined, sessionSecs?: number) => ({
  createdAt: iso(T0),
  ...(sessionSecs === undefined ? {} : { sessionEndsAt: iso(T0 + sessionSecs * 1000) }),
  ...(rechecks === undefined ? {} : { rechecks }),
});

describe('nextRecheck', () => {
  it.each<[string, ReturnType<typeof entry>, number, { dueAt: number; rechecks: number | undefined }]>([
    ['a path just found it pending: the first wait', entry(0, 1200), T0 + 10_000, { dueAt: T0 + 13_000, rechecks: 1 }],
    ['the lane’s fourth wait', entry(3, 1200), T0 + 40_000, { dueAt: T0 + 48_000, rechecks: 4 }],
    // Past the fixed waits (213 s) the lane goes on, each wait half the time spent in the lane so far.
    [
      'past the fixed waits, the session open: half the lane so far',
      entry(10, 1200),
      T0 + 300_000,
      { dueAt: T0 + 300_000 + 106_500, rechecks: 11 },
    ],
    [
      'the next one: half again as long',
      entry(11, 1200),
      T0 + 410_000,
      { dueAt: T0 + 410_000 + 159_750, rechecks: 12 },
    ],
    [
      'a wait that would end after the session and grace: the session’s schedule',
      entry(12, 1200),
      T0 + 1_100_000,
      { dueAt: T0 + 1_260_000, rechecks: undefined },
    ],
    [
      'the session already over: a minute from now at the earliest',
      entry(10, 300),
      T0 + 400_000,
      { dueAt: T0 + 460_000, rechecks: undefined },
    ],
    [
      'no known session end (an entry made from a webhook alone): the lane ends with its fixed waits',
      entry(10),
      T0 + 300_000,
      { dueAt: T0 + 360_000, rechecks: undefined },
    ],
  ])('%s', (_what, queued, now, expected) => {
    expect(nextRecheck(queued, now, GRACE_SECS)).toEqual(expected);
  });

  it('a lag of 10 minutes in a 20-minute session: checked until the session ends, each wait at most 0.65 of the lane so far, in 15 checks', () => {
    let now = T0;
    let rechecks: number | undefined = 0;
    const checks: number[] = [];
    while (rechecks !== undefined) {
      const plan = nextRecheck(entry(rechecks, 1200), now, GRACE_SECS);
      if (plan.rechecks === undefined) break;
      // Found final at the first check past the lag: never later than 0.65 of the lag after it (or 6 s).
      expect(plan.dueAt - now).toBeLessThanOrEqual(Math.max(6_000, 0.65 * (now - T0)));
      now = plan.dueAt;
      rechecks = plan.rechecks;
      checks.push(now - T0);
    }
    expect(checks.slice(0, RECHECK_WAITS_MS.length).at(-1)).toBe(213_000);
    expect(checks.find((at) => at >= 600_000)).toBeLessThanOrEqual(600_000 * 1.65);
    expect(checks.at(-1)).toBeLessThan(1_260_000);
    expect(checks.length).toBeLessThanOrEqual(15);
  });
});
