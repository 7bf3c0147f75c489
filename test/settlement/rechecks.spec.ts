/**
 * The pending lane's rule (a pure function, as a table): when a payment a webhook or a return found
 * still pending is checked again, and the walk of the whole lane for a verify that lags by minutes.
 *
 * What a path's expectation may put in the re-check queue (queuedExpectation): an entry is judged
 * later as the plugin's own record, so it holds the payment's tracking id, or none when the payment
 * has none, never "no tracking id" for a payment whose tracking id only a token's hash knows.
 */
import { describe, expect, it } from '@jest/globals';
import {
  lookAgainIn,
  nextRecheck,
  pathRecheck,
  PendingRechecks,
  queuedExpectation,
  RECHECK_WAITS_MS,
  UNQUEUED_LOOKS,
} from '../../lib/core/settlement/settlement.rechecks.js';
import { MemoryPaymentsStore, queueGenerated, type PendingPayment } from '../../lib/core/store/index.js';
import { SharedClock, type Clock } from '../../lib/core/time/index.js';
import type { OutcomeExpectation } from '../../lib/core/settlement/settlement.decision.js';
import { trackingHash } from '../../lib/core/webhook/webhook.token.js';

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

/** A token's expectation, as the webhook builds it for a token without a binding. */
function token(trackingId: string | undefined): OutcomeExpectation {
  const hash = trackingHash(trackingId);
  return {
    amount: '4200',
    trackingMatches: (t) => trackingHash(t) === hash,
    identifiesPayment: hash !== '',
    origin: 'token',
  };
}

const rows: Array<{
  name: string;
  expected: OutcomeExpectation | undefined;
  verified?: { developerTrackingId?: string };
  queued: Pick<OutcomeExpectation, 'amount' | 'developerTrackingId'> | undefined;
}> = [
  { name: 'nothing expected: nothing new', expected: undefined, queued: undefined },
  {
    name: "the plugin's record: as it is",
    expected: { amount: '4200', developerTrackingId: 'order-1', origin: 'binding' },
    queued: { amount: '4200', developerTrackingId: 'order-1' },
  },
  {
    name: 'a token with a tracking id, answer matching it: the verified tracking id is kept',
    expected: token('order-1'),
    verified: { developerTrackingId: 'order-1' },
    queued: { amount: '4200', developerTrackingId: 'order-1' },
  },
  {
    name: 'a token with a tracking id, no answer (verify failed): nothing new (it cannot be checked)',
    expected: token('order-1'),
    queued: undefined,
  },
  {
    name: 'a token with a tracking id, answer naming another: nothing new',
    expected: token('order-1'),
    verified: { developerTrackingId: 'order-2' },
    queued: undefined,
  },
  {
    name: 'a token with a tracking id, answer without one: nothing new',
    expected: token('order-1'),
    verified: {},
    queued: undefined,
  },
  {
    name: 'a token without a tracking id, no answer: the amount (the payment has none)',
    expected: token(undefined),
    queued: { amount: '4200', developerTrackingId: undefined },
  },
  {
    name: 'a token without a tracking id, answer without one: the amount',
    expected: token(undefined),
    verified: {},
    queued: { amount: '4200', developerTrackingId: undefined },
  },
  {
    name: 'a token without a tracking id, answer with one: nothing new',
    expected: token(undefined),
    verified: { developerTrackingId: 'order-2' },
    queued: undefined,
  },
];

describe('pathRecheck: a webhook or a return found the payment pending', () => {
  it.each<[string, ReturnType<typeof entry>, number, { dueAt: number; rechecks: number | undefined }]>([
    [
      'not in the lane: the lane starts, its first wait',
      entry(undefined, 1200),
      T0 + 10_000,
      { dueAt: T0 + 13_000, rechecks: 1 },
    ],
    ['a lane place of 0: the lane starts', entry(0, 1200), T0 + 10_000, { dueAt: T0 + 13_000, rechecks: 1 }],
    // A reload in the lane is its latest check made again: the same wait, the lane not advanced.
    [
      'in the lane after 4 checks: the fourth wait again',
      entry(4, 1200),
      T0 + 40_000,
      { dueAt: T0 + 48_000, rechecks: 4 },
    ],
    [
      'in the lane after 9 checks: 60 s again, not on to the backing off',
      entry(9, 1200),
      T0 + 100_000,
      { dueAt: T0 + 160_000, rechecks: 9 },
    ],
    [
      'past the fixed waits: the current backing-off wait again',
      entry(11, 1200),
      T0 + 300_000,
      { dueAt: T0 + 406_500, rechecks: 11 },
    ],
  ])('%s', (_what, queued, now, expected) => {
    expect(pathRecheck(queued, now, GRACE_SECS)).toEqual(expected);
  });

  it('returns reloaded at every check keep each wait within 0.75 of the time since the lane began (soak seed 90)', () => {
    // A customer reloading the return page at every lane check: each reload is a verify that found
    // it pending, and must not move the lane on to its long waits early.
    let queued = entry(undefined, 1200) as PendingPayment & ReturnType<typeof entry>;
    const began = T0;
    let now = began;
    for (let check = 0; check < 12; check++) {
      const lane = nextRecheck({ ...queued, rechecks: queued.rechecks ?? 0 }, now, GRACE_SECS);
      const reload = pathRecheck({ ...queued, rechecks: lane.rechecks }, now + 1, GRACE_SECS);
      if (reload.rechecks === undefined) break;
      const wait = reload.dueAt - (now + 1);
      expect(wait).toBeLessThanOrEqual(Math.max(30_000, 0.75 * (now + 1 - began)));
      queued = { ...queued, rechecks: reload.rechecks };
      now = reload.dueAt;
    }
  });
});

describe('queuedExpectation(): what a path may queue for a re-check', () => {
  it.each(rows)('$name', ({ expected, verified, queued }) => {
    const got = queuedExpectation(expected, verified);
    if (queued === undefined) {
      expect(got).toBeUndefined();
      return;
    }
    expect({ amount: got?.amount, developerTrackingId: got?.developerTrackingId }).toEqual(queued);
  });
});

describe('PendingRechecks.note: a payment a webhook found pending before generatePayment queued it', () => {
  it('generated with a one-hour session (the default is 20 minutes): checked until ITS session end, not the default estimate', async () => {
    let now = T0;
    const local: Clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => undefined };
    const sessionEndsAt = iso(T0 + 3_600_000);
    const generated: PendingPayment = {
      paymentId: 'pay_long',
      amount: '12500',
      createdAt: iso(T0 - 1_000),
      sessionEndsAt,
      checks: 0,
    };
    // A slow store: generatePayment's queue write lands after the webhook's read of the queue
    // found nothing, and before the webhook's own write.
    class RacingStore extends MemoryPaymentsStore {
      override async findPending(paymentId: string): Promise<PendingPayment | undefined> {
        const found = await super.findPending(paymentId);
        if (!found) await queueGenerated(this, generated, T0 + 3_660_000);
        return found;
      }
    }
    const store = new RacingStore({ clock: local });
    const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    const rechecks = new PendingRechecks(store, new SharedClock(local), GRACE_SECS, () => undefined, logger, 1200);

    await rechecks.note('pay_long', { amount: '12500', origin: 'token' });
    expect((await store.findPending('pay_long'))?.sessionEndsAt).toBe(sessionEndsAt);

    // The lane, as reconciliation walks it: every check finds the payment still pending.
    let lastLaneCheck = T0;
    for (let i = 0; i < 100; i++) {
      const [taken] = await store.takeDuePending(Number.MAX_SAFE_INTEGER / 2, 1, 1_000);
      const entry = taken;
      if (entry?.rechecks === undefined) break;
      const plan = nextRecheck(entry, now, GRACE_SECS);
      await rechecks.schedule(entry, plan);
      if (plan.rechecks === undefined) {
        // Back to the session's schedule: at its own end and grace (or a minute after the last check).
        expect(plan.dueAt).toBeGreaterThanOrEqual(T0 + 3_600_000 + GRACE_SECS * 1000);
        break;
      }
      now = plan.dueAt;
      lastLaneCheck = now;
    }
    // The lane went on well past the default session's end (T0 + 20 min), into the hour's last half.
    expect(lastLaneCheck).toBeGreaterThan(T0 + 1_800_000);
  });
});

describe('lookAgainIn(): a path found nothing queued and knows no amount', () => {
  it.each([
    { attempt: 1, wait: 5_000 },
    { attempt: UNQUEUED_LOOKS - 1, wait: 5_000 },
    { attempt: UNQUEUED_LOOKS, wait: undefined },
    { attempt: 24, wait: undefined },
  ])('look $attempt: next in $wait ms', ({ attempt, wait }) => {
    expect(lookAgainIn(attempt)).toBe(wait);
  });
});

describe("PendingRechecks.note: a return deferred before a slow store took generatePayment's write", () => {
  it('looks again and puts the entry in the pending lane once the write landed (not left to the session end)', async () => {
    let now = T0;
    const timers: Array<{ at: number; fn: () => void }> = [];
    const local: Clock = {
      now: () => now,
      setTimeout: (fn, ms) => (timers.push({ at: now + ms, fn }), {}),
      clearTimeout: () => undefined,
    };
    const store = new MemoryPaymentsStore({ clock: local });
    const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    const rechecks = new PendingRechecks(store, new SharedClock(local), GRACE_SECS, () => undefined, logger, 1200);
    const generated: PendingPayment = {
      paymentId: 'pay_slow',
      amount: '12500',
      createdAt: iso(T0 - 1_000),
      sessionEndsAt: iso(T0 + 1_200_000),
      checks: 0,
    };
    // Paused by the service's 429 for 16 s; the write lands 8 s from now.
    await rechecks.note('pay_slow', undefined, 16_000);
    expect(await store.findPending('pay_slow')).toBeUndefined();
    let landed = false;
    for (let step = 0; step < 10 && timers.length > 0; step++) {
      const timer = timers.shift() as { at: number; fn: () => void };
      now = timer.at;
      if (!landed && now >= T0 + 8_000) {
        await queueGenerated(store, generated, T0 + 1_200_000 + GRACE_SECS * 1000);
        landed = true;
      }
      timer.fn();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const [due] = await store.takeDuePending(T0 + 17_000, 1, 1_000);
    expect(due).toMatchObject({ paymentId: 'pay_slow', rechecks: 1, sessionEndsAt: generated.sessionEndsAt });
  });

  it('an id nobody generated costs a bounded number of looks', async () => {
    let now = T0;
    const timers: Array<{ at: number; fn: () => void }> = [];
    const local: Clock = {
      now: () => now,
      setTimeout: (fn, ms) => (timers.push({ at: now + ms, fn }), {}),
      clearTimeout: () => undefined,
    };
    let reads = 0;
    class CountingStore extends MemoryPaymentsStore {
      override async findPending(paymentId: string): Promise<PendingPayment | undefined> {
        reads++;
        return super.findPending(paymentId);
      }
    }
    const store = new CountingStore({ clock: local });
    const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    const rechecks = new PendingRechecks(store, new SharedClock(local), GRACE_SECS, () => undefined, logger, 1200);
    await rechecks.note('pay_invented', undefined);
    while (timers.length > 0) {
      const timer = timers.shift() as { at: number; fn: () => void };
      now = timer.at;
      timer.fn();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(reads).toBe(UNQUEUED_LOOKS);
  });
});
