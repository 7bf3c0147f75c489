import { randomUUID } from 'node:crypto';
import type { PaymentsStore } from '../core/index.js';
import { bucketStart, storyLogOf, type PaymentStoryLog, type StoryEntry } from '../core/store/index.js';
import { sleep, type ContractContext } from './contract.support.js';

/** The contract of the stories and tallies: what every store that keeps them (`store.story`) does. */
export function describeStory(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  /** The store's log, or undefined when it keeps none and need not (the test then checks only that). */
  const logOf = (): PaymentStoryLog | undefined => {
    const log = storyLogOf(store);
    if (log === undefined) expect(c.options.story ?? false).toBe(false);
    return log;
  };
  const entry = (paymentId: string, answer: string, overrides: Partial<StoryEntry> = {}): StoryEntry => ({
    paymentId,
    at: '2030-01-01T00:00:00.000Z',
    instance: 'host:1',
    source: 'webhook',
    kind: 'verify',
    answer,
    ...overrides,
  });

  describe('stories and tallies (the desk’s timeline and charts)', () => {
    it('appends entries to their payments’ stories and reads them back field for field, oldest first, payments and registrations apart', async () => {
      const log = logOf();
      if (log === undefined) return;
      const registration = `reg-${randomUUID()}`;
      const [a, b, odd] = [`pay_${randomUUID()}`, `pay_${randomUUID()}`, `{pay_${randomUUID()}} :é/ü`];
      await log.append({
        registration,
        entries: [
          entry(a, 'SUCCESS'),
          entry(b, '200 handled', { kind: 'webhook', error: 'boom "x" é' }),
          entry(a, 'confirmed: handled', { kind: 'handlers', source: 'return' }),
          entry(odd, 'x'),
        ],
        tallies: [],
      });
      await log.append({ registration, entries: [entry(a, '200 handled', { kind: 'webhook' })], tallies: [] });
      expect((await log.entries(registration, a)).map((e) => e.answer)).toEqual([
        'SUCCESS',
        'confirmed: handled',
        '200 handled',
      ]);
      expect(await log.entries(registration, b)).toEqual([
        entry(b, '200 handled', { kind: 'webhook', error: 'boom "x" é' }),
      ]);
      expect(await log.entries(registration, odd)).toEqual([entry(odd, 'x')]);
      expect(await log.entries(`${registration}-other`, a)).toEqual([]);
      expect(await log.entries(registration, `pay_${randomUUID()}`)).toEqual([]);
    });

    it('keeps the newest entries of a payment, up to its bound', async () => {
      const log = logOf();
      if (log === undefined) return;
      const registration = `reg-${randomUUID()}`;
      const id = `pay_${randomUUID()}`;
      const max = log.limits.maxEntries;
      const answers = Array.from({ length: max + 3 }, (_, i) => String(i));
      await log.append({ registration, entries: answers.slice(0, 2).map((x) => entry(id, x)), tallies: [] });
      await log.append({ registration, entries: answers.slice(2).map((x) => entry(id, x)), tallies: [] });
      expect((await log.entries(registration, id)).map((e) => e.answer)).toEqual(answers.slice(3));
    });

    it('adds tallies per bucket, across concurrent writers, and reads a range of buckets', async () => {
      const log = logOf();
      if (log === undefined) return;
      const registration = `reg-${randomUUID()}`;
      const size = log.limits.bucketMs;
      // Buckets near now: they are within every store's retention.
      const b0 = bucketStart(Date.now(), size) - 2 * size;
      const [b1, b2] = [b0 + size, b0 + 2 * size];
      await Promise.all(
        Array.from({ length: 20 }, () =>
          log.append({
            registration,
            entries: [],
            tallies: [
              { bucket: b0, name: 'outcome.confirmed', by: 1 },
              { bucket: b2, name: 'verify.settled', by: 2 },
            ],
          }),
        ),
      );
      await log.append({
        registration: `${registration}-other`,
        entries: [],
        tallies: [{ bucket: b0, name: 'settled', by: 5 }],
      });
      const all = await log.tallies(registration, b0, b2);
      const counts = Object.fromEntries(all.map((b) => [b.bucket, b.counts]));
      expect(counts[b0]).toEqual({ 'outcome.confirmed': 20 });
      expect(counts[b1] ?? {}).toEqual({});
      expect(counts[b2]).toEqual({ 'verify.settled': 40 });
      expect(all.map((b) => b.bucket)).toEqual([...all.map((b) => b.bucket)].sort((x, y) => x - y));
      expect((await log.tallies(registration, b1, b2)).map((b) => b.bucket)).toEqual([b2]);
      expect(await log.tallies(`${registration}-none`, b0, b2)).toEqual([]);
    });

    it('answers no tally of a bucket past the retention, and still those within it', async () => {
      const log = logOf();
      if (log === undefined) return;
      const registration = `reg-${randomUUID()}`;
      const { bucketMs, retentionMs } = log.limits;
      const recent = bucketStart(Date.now(), bucketMs) - bucketMs;
      // Ended more than the retention ago (with a margin for the clocks of the host and the server).
      const old = bucketStart(Date.now() - retentionMs - 2 * bucketMs - 60_000, bucketMs);
      await log.append({
        registration,
        entries: [],
        tallies: [
          { bucket: old, name: 'outcome.confirmed', by: 3 },
          { bucket: recent, name: 'outcome.confirmed', by: 1 },
        ],
      });
      expect(await log.tallies(registration, old, recent)).toEqual([
        { bucket: recent, counts: { 'outcome.confirmed': 1 } },
      ]);
    });

    it('forgets a story the retention after its last entry, and the tallies with it; a story written to again is kept', async () => {
      if (c.options.storyStore === undefined) return;
      const fixture = await c.options.storyStore({ retentionSecs: 2, bucketSecs: 1 });
      try {
        const log = storyLogOf(fixture.store);
        expect(log?.limits).toMatchObject({ retentionMs: 2_000, bucketMs: 1_000 });
        if (log === undefined) return;
        const registration = `reg-${randomUUID()}`;
        const [quiet, busy] = [`pay_${randomUUID()}`, `pay_${randomUUID()}`];
        const bucket = bucketStart(Date.now(), log.limits.bucketMs);
        await log.append({
          registration,
          entries: [entry(quiet, 'SUCCESS'), entry(busy, 'SUCCESS')],
          tallies: [{ bucket, name: 'outcome.confirmed', by: 1 }],
        });
        const firstWritten = performance.now();
        expect(await log.entries(registration, quiet)).toEqual([entry(quiet, 'SUCCESS')]);
        await sleep(1_200);
        const again = performance.now();
        await log.append({ registration, entries: [entry(busy, '200 handled')], tallies: [] });
        await sleep(firstWritten + 2_150 - performance.now());
        expect(await log.entries(registration, quiet)).toEqual([]);
        const busyNow = await log.entries(registration, busy);
        // Proves "kept" only while the second write is younger than the retention (a stalled machine may pass it).
        if (performance.now() < again + 1_900) expect(busyNow.map((e) => e.answer)).toEqual(['SUCCESS', '200 handled']);
        // Past the second write's retention, and the bucket's end plus the retention.
        await sleep(Math.max(again, bucket + 1_000 - Date.now() + performance.now()) + 2_150 - performance.now());
        expect(await log.entries(registration, busy)).toEqual([]);
        expect(await log.tallies(registration, bucket, bucket)).toEqual([]);
      } finally {
        await fixture.cleanup();
      }
    });
  });
}
