import { describe, expect, it } from '@jest/globals';
import {
  allowanceWindowMs,
  laneOf,
  pendingLaneOf,
  returnSpend,
  SHORT_LANE_START,
  UNPAID_SLOTS,
  UnpaidAllowance,
  unpaidSlots,
  type ReturnFacts,
  type ReturnSpend,
} from '../../lib/core/settlement/settlement.evidence.js';
import { nextRecheck, pathRecheck } from '../../lib/core/settlement/settlement.rechecks.js';
import { MemoryRateLimiter } from '../../lib/core/store/memory.limiter.js';
import { SYSTEM_CLOCK } from '../../lib/core/time/time.clock.js';

// Issue 39 item 3: the pending lane spends verify calls by evidence. An unpaid customer's returns
// started the lane's ten fast checks each time (20 abandoned checkouts cost 149 verify calls).

const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('returnSpend(): what a return may spend, by the evidence', () => {
  const rows: Array<[string, ReturnFacts, ReturnSpend]> = [
    ['nothing found it pending yet: a first look', { lane: 'none' }, 'first-look'],
    [
      'a done payment (the runner answers it from the record)',
      { lane: 'none', record: { outcome: 'confirmed', source: 'webhook' } },
      'first-look',
    ],
    [
      'in the fast lane (a webhook or a failure started it)',
      { lane: 'fast', record: { outcome: 'pending', source: 'return' } },
      'fast',
    ],
    [
      'a webhook found it pending: the service lags',
      { lane: 'none', record: { outcome: 'pending', source: 'webhook' } },
      'fast',
    ],
    [
      'a webhook found it pending, short lane running',
      { lane: 'short', record: { outcome: 'pending', source: 'webhook' } },
      'fast',
    ],
    [
      'a return found it pending before: the allowance',
      { lane: 'none', record: { outcome: 'pending', source: 'return' } },
      'allowance',
    ],
    [
      'the short lane found it pending: the allowance',
      { lane: 'short', record: { outcome: 'pending', source: 'reconciliation' } },
      'allowance',
    ],
    ['the short lane, its record unread', { lane: 'short' }, 'allowance'],
    [
      'reconciliation found it pending (session schedule)',
      { lane: 'none', record: { outcome: 'pending', source: 'reconciliation' } },
      'allowance',
    ],
  ];
  it.each(rows)('%s', (_what, facts, spend) => {
    expect(returnSpend(facts)).toBe(spend);
  });

  it('a PENDING answer earns: fast → the fast lane, first look → the short lane, allowance → nothing', () => {
    expect(['fast', 'first-look', 'allowance'].map((s) => pendingLaneOf(s as ReturnSpend))).toEqual([
      'fast',
      'short',
      'none',
    ]);
  });
});

describe('the short lane', () => {
  const entry = { createdAt: new Date(T0).toISOString(), sessionEndsAt: new Date(T0 + 900_000).toISOString() };

  it('laneOf: undefined none, negative short, else fast', () => {
    expect([undefined, SHORT_LANE_START, -1, 0, 4].map(laneOf)).toEqual(['none', 'short', 'short', 'fast', 'fast']);
  });

  it('a return alone: checks at +10 s and +35 s, then the session schedule (session end + grace)', () => {
    const start = pathRecheck({ ...entry }, T0, 60, 'short');
    expect(start).toEqual({ dueAt: T0 + 10_000, rechecks: SHORT_LANE_START + 1 });
    const second = nextRecheck({ ...entry, rechecks: start?.rechecks }, T0 + 10_000, 60);
    expect(second).toEqual({ dueAt: T0 + 35_000, rechecks: SHORT_LANE_START + 2 });
    const out = nextRecheck({ ...entry, rechecks: second.rechecks }, T0 + 35_000, 60);
    expect(out).toEqual({ dueAt: T0 + 960_000, rechecks: undefined });
  });

  it('a return alone never restarts a lane already running; a webhook upgrades the short lane to the fast one', () => {
    expect(pathRecheck({ ...entry, rechecks: SHORT_LANE_START + 1 }, T0, 60, 'short')).toBeUndefined();
    expect(pathRecheck({ ...entry, rechecks: 3 }, T0, 60, 'short')).toBeUndefined();
    expect(pathRecheck({ ...entry, rechecks: SHORT_LANE_START + 1 }, T0, 60, 'fast')).toEqual({
      dueAt: T0 + 3_000,
      rechecks: 1,
    });
    expect(pathRecheck({ ...entry }, T0, 60, 'none')).toBeUndefined();
  });
});

describe('the allowance: shared slots per payment', () => {
  it('lasts to the session end plus grace (at least a minute; an hour when the end is unknown)', () => {
    const ends = new Date(T0 + 600_000).toISOString();
    expect(allowanceWindowMs({ sessionEndsAt: ends }, T0, 60)).toBe(660_000);
    expect(allowanceWindowMs({ sessionEndsAt: ends }, T0 + 659_000, 60)).toBe(60_000);
    expect(allowanceWindowMs(undefined, T0, 60)).toBe(3_600_000);
  });

  it(`${UNPAID_SLOTS} verifies per payment, whatever the instances (one store's slots)`, async () => {
    let now = T0;
    const limits = new MemoryRateLimiter({ clock: { ...SYSTEM_CLOCK, now: () => now } });
    const instances = [
      new UnpaidAllowance(limits, 60),
      new UnpaidAllowance(limits, 60),
      new UnpaidAllowance(limits, 60),
    ];
    const entry = { sessionEndsAt: new Date(T0 + 600_000).toISOString() };
    const taken: boolean[] = [];
    for (let k = 0; k < 9; k++) taken.push(await instances[k % 3].take('pay_a', entry, now));
    expect(taken.filter(Boolean)).toHaveLength(UNPAID_SLOTS);
    // Another payment has its own.
    expect(await instances[0].take('pay_b', entry, now)).toBe(true);
    expect(unpaidSlots('pay_a')).toHaveLength(UNPAID_SLOTS);
    // After the session's end and grace, a new window (reconciliation's checks are not held to it).
    now = T0 + 661_000;
    expect(await instances[1].take('pay_a', entry, now)).toBe(true);
  });

  it('a store that does not answer allows nothing', async () => {
    const broken = {
      take: () => Promise.reject(new Error('down')),
      free: () => Promise.resolve(),
    };
    expect(await new UnpaidAllowance(broken, 60).take('pay_a', undefined, T0)).toBe(false);
  });
});
