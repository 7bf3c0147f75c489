import { describe, expect, it } from '@jest/globals';
import {
  bucketStart,
  expired,
  handlingHistogram,
  handlingSlot,
  histogramPercentile,
  keptEntries,
  MemoryStoryLog,
  parseStoryEntry,
  storyLimits,
  TALLY,
  type TallyBucket,
} from '../../lib/core/store/index.js';
import { storyOfSettle } from '../../lib/core/settlement/index.js';
import { chartSummary, chartWindow, durationText } from '../../lib/desk/desk.charts.js';

describe('story rules', () => {
  it.each([
    [0, 3_600_000, 0],
    [3_599_999, 3_600_000, 0],
    [3_600_000, 3_600_000, 3_600_000],
    [7_250_000, 3_600_000, 7_200_000],
    [61_000, 60_000, 60_000],
  ])('bucketStart(%d, %d) is %d', (at, size, start) => expect(bucketStart(at, size)).toBe(start));

  it.each([
    [[], ['a'], 3, ['a']],
    [['a', 'b'], ['c'], 3, ['a', 'b', 'c']],
    [['a', 'b', 'c'], ['d', 'e'], 3, ['c', 'd', 'e']],
    [['a'], ['b', 'c', 'd', 'e'], 2, ['d', 'e']],
  ])('keeps the newest: %j + %j within %d -> %j', (held, added, max, kept) =>
    expect(keptEntries(held, added, max)).toEqual(kept),
  );

  it.each([
    [1000, 500, 1499, false],
    [1000, 500, 1500, true],
    [1000, 500, 9000, true],
  ])('written at %d, kept %d ms: expired at %d is %s', (at, keep, now, gone) =>
    expect(expired(at, keep, now)).toBe(gone),
  );

  it.each([
    [0, '50'],
    [50, '50'],
    [51, '100'],
    [999, '1000'],
    [900_000, '900000'],
    [900_001, 'inf'],
  ])('handling time %d ms falls in slot %s', (ms, slot) => {
    expect(handlingSlot(ms)).toBe(slot);
    expect(TALLY.handled(ms)).toBe(`handled.le.${slot}`);
  });

  const hist = (counts: Record<string, number>) =>
    handlingHistogram([
      { bucket: 0, counts: Object.fromEntries(Object.entries(counts).map(([k, v]) => [`handled.le.${k}`, v])) },
    ]);
  it.each([
    [{}, 50, undefined],
    [{ 100: 1 }, 50, 100],
    [{ 100: 1 }, 99, 100],
    [{ 50: 98, 5000: 2 }, 50, 50],
    [{ 50: 98, 5000: 2 }, 99, 5000],
    [{ 50: 99, 5000: 1 }, 99, 50],
    [{ 250: 1, inf: 1 }, 50, 250],
    [{ 250: 1, inf: 1 }, 99, Infinity],
  ])('histogram %j: p%d is %s', (counts, p, expected) =>
    expect(histogramPercentile(hist(counts as Record<string, number>), p)).toBe(expected),
  );

  it('checks its options and applies defaults', () => {
    expect(storyLimits()).toEqual({ maxEntries: 50, retentionMs: 2_592_000_000, bucketMs: 3_600_000 });
    expect(storyLimits({ maxEntries: 3, retentionSecs: 10, bucketSecs: 60 })).toEqual({
      maxEntries: 3,
      retentionMs: 10_000,
      bucketMs: 60_000,
    });
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => storyLimits({ maxEntries: bad })).toThrow('story.maxEntries must be a positive integer');
  });

  it('reads back only well-formed entries', () => {
    const entry = { paymentId: 'p', at: 't', instance: 'i', source: 's', kind: 'verify', answer: 'SUCCESS' };
    expect(parseStoryEntry(JSON.stringify(entry))).toEqual(entry);
    expect(parseStoryEntry(JSON.stringify({ ...entry, error: 'e' }))).toEqual({ ...entry, error: 'e' });
    expect(parseStoryEntry(JSON.stringify({ ...entry, error: 3 }))).toBeUndefined();
    expect(parseStoryEntry(JSON.stringify({ ...entry, answer: undefined }))).toBeUndefined();
    expect(parseStoryEntry('not json')).toBeUndefined();
    expect(parseStoryEntry('null')).toBeUndefined();
  });
});

describe('what a settle tells the story', () => {
  const verification = { paymentId: 'p', status: 'SUCCESS', amount: '1000' };
  it.each([
    [
      { kind: 'handled', outcome: 'confirmed', verification },
      ['verify SUCCESS', 'handlers confirmed: handled'],
      ['verify.settled', 'settled', 'outcome.confirmed'],
      true,
    ],
    [
      { kind: 'handled', outcome: 'failed', verification: { ...verification, status: 'FAILURE' } },
      ['verify FAILURE', 'handlers failed: handled'],
      ['verify.settled', 'settled', 'outcome.failed'],
      false,
    ],
    [
      { kind: 'handlers-failed', outcome: 'confirmed', verification, error: 'boom' },
      ['verify SUCCESS', 'handlers confirmed: failed'],
      ['verify.settled'],
      false,
    ],
    [
      { kind: 'pending', verification: { ...verification, status: 'PENDING' } },
      ['verify PENDING'],
      ['verify.settled'],
      false,
    ],
    [
      { kind: 'mismatch', verification, problems: ['amount'] },
      ['verify SUCCESS'],
      ['verify.settled', 'settled', 'outcome.mismatch'],
      false,
    ],
    [{ kind: 'foreign', problems: ['unknown'] }, ['verify unknown'], ['verify.stranger'], false],
    [{ kind: 'rate-limited', retryAfterSecs: 3 }, ['verify rate-limited 3 s'], [], false],
    [{ kind: 'busy' }, [], [], false],
    [{ kind: 'duplicate' }, [], [], false],
    [
      {
        kind: 'order-duplicate',
        outcome: 'duplicate',
        verification,
        settledBy: { paymentId: 'first', amount: '1000' },
        refund: { refundId: 'r1', amount: '1000', status: 'done', refundedAt: 't' },
      },
      ['verify SUCCESS', 'duplicate duplicate of first', 'refund refund r1, 1000, done'],
      ['verify.settled', 'settled', 'outcome.duplicate'],
      false,
    ],
  ])('%j', (result, entries, tallies, paid) => {
    const told = storyOfSettle(result as Parameters<typeof storyOfSettle>[0]);
    expect(told.entries.map((e) => `${e.kind} ${e.answer}`)).toEqual(entries);
    expect(told.tallies.map((t) => t.name)).toEqual(tallies);
    expect(told.paidHandled).toBe(paid);
  });
});

describe('the memory story log', () => {
  it('keeps the newest entries per payment and registration, and forgets them after the retention', async () => {
    let now = 1_000_000;
    const log = new MemoryStoryLog(
      { maxEntries: 2, retentionSecs: 10, bucketSecs: 60 },
      {
        now: () => now,
        setTimeout: () => ({}),
        clearTimeout: () => undefined,
      },
    );
    const entry = (paymentId: string, answer: string) => ({
      paymentId,
      at: 't',
      instance: 'i',
      source: 'webhook',
      kind: 'verify' as const,
      answer,
    });
    await log.append({ registration: '', entries: [entry('p', '1'), entry('p', '2'), entry('q', 'x')], tallies: [] });
    await log.append({ registration: '', entries: [entry('p', '3')], tallies: [] });
    expect((await log.entries('', 'p')).map((e) => e.answer)).toEqual(['2', '3']);
    expect(await log.entries('other', 'p')).toEqual([]);
    now += 9_999;
    expect(await log.entries('', 'q')).toHaveLength(1);
    now += 1;
    expect(await log.entries('', 'q')).toEqual([]);
  });
});

describe('the charts', () => {
  it.each([
    [null, '24h'],
    ['7d', '7d'],
    ['1h', '1h'],
    ['forever', '24h'],
    ['__proto__', '24h'],
  ])('window %s is %s', (param, name) => expect(chartWindow(param)).toBe(name));

  it.each([
    [undefined, 'none yet'],
    [250, '250 ms'],
    [2500, '2.5 s'],
    [300_000, '5 min'],
    [Infinity, 'more than 15 min'],
  ])('duration %s reads %s', (ms, text) => expect(durationText(ms)).toBe(text));

  it('sums the window’s buckets', () => {
    const buckets: TallyBucket[] = [
      {
        bucket: 0,
        counts: { 'outcome.confirmed': 2, settled: 3, 'verify.settled': 4, 'handled.le.100': 2, 'webhook.refused': 1 },
      },
      {
        bucket: 1,
        counts: { 'outcome.duplicate': 1, 'outcome.confirmed': 1, 'verify.stranger': 5, 'handled.le.inf': 1 },
      },
    ];
    const s = chartSummary(buckets);
    expect(s.outcomes).toEqual([
      { label: 'confirmed', value: 3 },
      { label: 'duplicate', value: 1 },
    ]);
    expect(s.verifyPerSettled).toBeCloseTo(4 / 3);
    expect([s.settled, s.verifyStrangers, s.refused, s.p50, s.p99]).toEqual([3, 5, 1, 100, Infinity]);
    expect(s.histogram.at(1)).toEqual({ label: '≤ 100 ms', value: 2 });
    expect(s.histogram.at(-1)).toEqual({ label: 'longer', value: 1 });
    expect(chartSummary([]).verifyPerSettled).toBeUndefined();
  });
});
