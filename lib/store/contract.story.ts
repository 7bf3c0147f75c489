import { randomUUID } from 'node:crypto';
import type { PaymentsStore } from '../core/index.js';
import { bucketStart, storyLogOf, type PaymentStoryLog, type StoryEntry } from '../core/store/index.js';
import type { StoreFixture } from './contract.hooks.js';
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
  });

  describe('story retention (what is older than retentionSecs is gone)', () => {
    /**
     * Runs `check` on a store of its own whose story keeps `retentionSecs`, or not at all when
     * the suite gave no way to make one (see StoreContractOptions.storyRetention).
     */
    const withRetention = async (
      retentionSecs: number,
      check: (log: PaymentStoryLog, registration: string) => Promise<void>,
    ): Promise<void> => {
      const make = c.options.storyRetention;
      if (make === undefined) return;
      const fixture: StoreFixture = await make({ retentionSecs, bucketSecs: 1 });
      try {
        const log = storyLogOf(fixture.store);
        expect(log).toBeDefined();
        if (log === undefined) return;
        expect(log.limits.retentionMs).toBe(retentionSecs * 1000);
        const registration = `reg-${randomUUID()}`;
        // A first read opens the connection and creates the tables (seconds for a fresh PGlite),
        // so that the waits below start when the store can write, not before.
        await log.entries(registration, 'warm-up');
        await check(log, registration);
      } finally {
        await fixture.cleanup();
      }
    };

    it('answers no entries of a story, and no tallies of a bucket, past their retention; a story written again then starts afresh', async () => {
      await withRetention(2, async (log, registration) => {
        const id = `pay_${randomUUID()}`;
        const size = log.limits.bucketMs;
        const current = bucketStart(Date.now(), size);
        // Ended five buckets ago, three seconds past its retention: counting it again does not bring it back.
        const ended = current - 5 * size;
        await log.append({
          registration,
          entries: [entry(id, 'first')],
          tallies: [
            { bucket: ended, name: 'settled', by: 1 },
            { bucket: current, name: 'settled', by: 1 },
          ],
        });
        expect((await log.entries(registration, id)).map((e) => e.answer)).toEqual(['first']);
        expect((await log.tallies(registration, ended, current + size)).map((b) => b.bucket)).toEqual([current]);

        // The story's retention after its latest entry, the bucket's after its end (one bucket later).
        await sleep(log.limits.retentionMs + size + 200);
        expect(await log.entries(registration, id)).toEqual([]);
        expect(await log.tallies(registration, ended, current + size)).toEqual([]);

        await log.append({ registration, entries: [entry(id, 'again')], tallies: [] });
        expect((await log.entries(registration, id)).map((e) => e.answer)).toEqual(['again']);
      });
    });

    it('keeps a story written to again for a retention from its latest entry, then forgets it', async () => {
      await withRetention(2, async (log, registration) => {
        const id = `pay_${randomUUID()}`;
        const other = `pay_${randomUUID()}`;
        await log.append({ registration, entries: [entry(id, 'first'), entry(other, 'only')], tallies: [] });
        await sleep(1200);
        const again = performance.now();
        await log.append({ registration, entries: [entry(id, 'second')], tallies: [] });
        // 2.4 s after the first write, 1.2 s after the second: past the first's retention only.
        await sleep(1200);
        const kept = await log.entries(registration, id);
        // "Kept" is proved only while the second write is younger than its retention: a machine
        // that stalled past it proves nothing (the story may rightly be gone), and is not failed.
        if (performance.now() < again + 1_900) expect(kept.map((e) => e.answer)).toEqual(['first', 'second']);
        expect(await log.entries(registration, other)).toEqual([]);
        await sleep(Math.max(0, again + 2_200 - performance.now()));
        expect(await log.entries(registration, id)).toEqual([]);
      });
    });
  });
}
