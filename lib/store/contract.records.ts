import { randomUUID } from 'node:crypto';
import {
  queueGenerated,
  queueRecheck,
  type OutcomeRecord,
  type PaymentsStore,
  type PendingPayment,
} from '../core/index.js';
import {
  binding,
  LONG_MS,
  PAST_SHORT_MS,
  SHORT_MS,
  sleep,
  whileFresh,
  type ContractContext,
} from './contract.support.js';

/** The contract of health, the reconciliation queue and the outcome records. */
export function describeRecords(c: ContractContext): void {
  const { describe, it, expect } = c.hooks;
  let store!: PaymentsStore;
  c.hooks.beforeEach(async () => {
    store = c.store();
  });

  describe('health', () => {
    it('answers ping when it has one', async () => {
      if (store.ping) await expect(store.ping()).resolves.toBeUndefined();
    });
  });

  describe('reconciliation queue', () => {
    const pending = (overrides: Partial<PendingPayment> = {}): PendingPayment => ({
      ...binding(),
      checks: 0,
      ...overrides,
    });

    it('finds a queued payment, field for field, and counts it', async () => {
      const entry = pending({ sessionEndsAt: '2025-01-02T03:24:05.000Z', checks: 2 });
      const before = await store.countPending();
      await store.schedulePending(entry, Date.now() + LONG_MS);
      await expect(store.findPending(entry.paymentId)).resolves.toStrictEqual(entry);
      await expect(store.countPending()).resolves.toBe(before + 1);
      await store.removePending(entry.paymentId);
      await expect(store.findPending(entry.paymentId)).resolves.toBeUndefined();
      await expect(store.countPending()).resolves.toBe(before);
    });

    it('keeps one entry per payment: scheduling again replaces it', async () => {
      const entry = pending();
      await store.schedulePending(entry, Date.now() + LONG_MS);
      await store.schedulePending({ ...entry, checks: 3 }, Date.now() + LONG_MS);
      expect((await store.findPending(entry.paymentId))?.checks).toBe(3);
      await store.removePending(entry.paymentId);
    });

    it('keeps a pending-lane entry queued before generatePayment writes its own (a webhook came first), filling in the session', async () => {
      // A far future keeps other tests' entries (due at real now) out of the way.
      const base = Date.now() + 2000 * LONG_MS;
      // The webhook's entry: made from its token (no session end), in the lane, due within seconds.
      const lane = pending({ createdAt: new Date(base).toISOString(), checks: 0, rechecks: 2 });
      delete lane.sessionEndsAt;
      await store.schedulePending(lane, base + 8_000);
      // generatePayment's write lands after it, due at the session's end.
      const generated = pending({
        paymentId: lane.paymentId,
        createdAt: new Date(base - 2_000).toISOString(),
        sessionEndsAt: new Date(base + 600_000).toISOString(),
        checks: 0,
      });
      await queueGenerated(store, generated, base + 660_000);
      const kept = await store.findPending(lane.paymentId);
      expect(kept?.rechecks).toBe(2);
      expect(kept?.checks).toBe(0);
      if (store.queueGenerated) expect(kept).toStrictEqual({ ...generated, rechecks: 2 });
      // Still due on the lane's time, not the session's.
      expect((await store.takeDuePending(base + 8_000, 100, LONG_MS)).map((t) => t.paymentId)).toContain(
        lane.paymentId,
      );
      await store.removePending(lane.paymentId);
      // With nothing queued, it is queued as generated, due when asked.
      const fresh = pending({ sessionEndsAt: new Date(base + 600_000).toISOString() });
      await queueGenerated(store, fresh, base + 660_000);
      await expect(store.findPending(fresh.paymentId)).resolves.toStrictEqual(fresh);
      expect((await store.takeDuePending(base + 659_999, 100, LONG_MS)).map((t) => t.paymentId)).not.toContain(
        fresh.paymentId,
      );
      expect((await store.takeDuePending(base + 660_000, 100, LONG_MS)).map((t) => t.paymentId)).toContain(
        fresh.paymentId,
      );
      await store.removePending(fresh.paymentId);
    });

    it("keeps generatePayment's session end when a path re-queues a payment it found nothing of (generatePayment's write landed in between)", async () => {
      const base = Date.now() + 3000 * LONG_MS;
      // generatePayment's entry: a session of an hour, due at its end.
      const generated = pending({
        createdAt: new Date(base - 2_000).toISOString(),
        sessionEndsAt: new Date(base + 3_600_000).toISOString(),
        checks: 0,
      });
      await queueGenerated(store, generated, base + 3_660_000);
      // The path's entry, made when it found nothing queued: an estimate of the session's end, in the lane.
      const path = pending({
        paymentId: generated.paymentId,
        createdAt: new Date(base).toISOString(),
        sessionEndsAt: new Date(base + 600_000).toISOString(),
        checks: 0,
        rechecks: 1,
      });
      await queueRecheck(store, path, base + 3_000);
      const kept = await store.findPending(generated.paymentId);
      expect(kept?.rechecks).toBe(1);
      if (store.queueRecheck) expect(kept).toStrictEqual({ ...generated, rechecks: 1 });
      // Due on the lane's time.
      expect((await store.takeDuePending(base + 3_000, 100, LONG_MS)).map((t) => t.paymentId)).toContain(
        generated.paymentId,
      );
      // Leaving the lane (no rechecks), it keeps the session's end and takes the path's checks.
      const { rechecks: _lane, ...leaving } = path;
      await queueRecheck(store, { ...leaving, checks: 4 }, base + 3_660_000);
      const left = await store.findPending(generated.paymentId);
      expect(left?.rechecks).toBeUndefined();
      expect(left?.checks).toBe(4);
      if (store.queueRecheck) expect(left).toStrictEqual({ ...generated, checks: 4 });
      await store.removePending(generated.paymentId);
      // With nothing queued, the path's entry is queued as it is.
      const alone = pending({ rechecks: 3 });
      await queueRecheck(store, alone, base + 5_000);
      await expect(store.findPending(alone.paymentId)).resolves.toStrictEqual(alone);
      await store.removePending(alone.paymentId);
    });

    it('takes only due entries, oldest due first, at most limit', async () => {
      // A time far in the future keeps other tests' entries (due at real now) out of the way.
      const base = Date.now() + 1000 * LONG_MS;
      const [a, b, c] = [pending(), pending(), pending()];
      await store.schedulePending(b, base + 2);
      await store.schedulePending(a, base + 1);
      await store.schedulePending(c, base + 1000);
      const taken = await store.takeDuePending(base + 10, 1, LONG_MS);
      expect(taken.map((t) => t.paymentId)).toEqual([a.paymentId]);
      expect(taken[0]).toStrictEqual(a);
      const next = await store.takeDuePending(base + 10, 10, LONG_MS);
      expect(next.map((t) => t.paymentId)).toContain(b.paymentId);
      expect(next.map((t) => t.paymentId)).not.toContain(c.paymentId);
      for (const e of [a, b, c]) await store.removePending(e.paymentId);
    });

    it('takes a re-queued entry at its new due time only, once, whether moved later or earlier', async () => {
      const base = Date.now() + 2500 * LONG_MS;
      const [later, earlier] = [pending(), pending()];
      await store.schedulePending(later, base + 1);
      await store.schedulePending(earlier, base + 5_000);
      await store.schedulePending(later, base + 5_000);
      await store.schedulePending(earlier, base + 2);
      const first = (await store.takeDuePending(base + 10, 100, LONG_MS)).map((t) => t.paymentId);
      expect(first).toContain(earlier.paymentId);
      expect(first).not.toContain(later.paymentId);
      const second = (await store.takeDuePending(base + 5_000, 100, LONG_MS)).map((t) => t.paymentId);
      expect(second.filter((id) => id === later.paymentId)).toHaveLength(1);
      expect(second).not.toContain(earlier.paymentId);
      await store.removePending(later.paymentId);
      await store.schedulePending(later, base + 6_000);
      await store.removePending(later.paymentId);
      expect((await store.takeDuePending(base + 6_000, 100, LONG_MS)).map((t) => t.paymentId)).not.toContain(
        later.paymentId,
      );
      for (const e of [later, earlier]) await store.removePending(e.paymentId);
    });

    it('hides a taken entry for the lease, then offers it again (a crashed taker loses nothing)', async () => {
      const base = Date.now() + 2000 * LONG_MS;
      const entry = pending();
      await store.schedulePending(entry, base);
      expect((await store.takeDuePending(base, 10, 1000)).map((t) => t.paymentId)).toContain(entry.paymentId);
      expect((await store.takeDuePending(base + 999, 10, 1000)).map((t) => t.paymentId)).not.toContain(entry.paymentId);
      expect((await store.takeDuePending(base + 1000, 10, 1000)).map((t) => t.paymentId)).toContain(entry.paymentId);
      await store.removePending(entry.paymentId);
    });

    it('gives each due entry to exactly one of 10 concurrent takers', async () => {
      const base = Date.now() + 3000 * LONG_MS;
      const entries = Array.from({ length: 20 }, () => pending());
      for (const e of entries) await store.schedulePending(e, base);
      const takes = await Promise.all(Array.from({ length: 10 }, () => store.takeDuePending(base, 5, LONG_MS)));
      const ids = takes
        .flat()
        .map((t) => t.paymentId)
        .filter((id) => entries.some((e) => e.paymentId === id));
      expect(ids).toHaveLength(20);
      expect(new Set(ids).size).toBe(20);
      for (const e of entries) await store.removePending(e.paymentId);
    });

    it('resolves removePending of an unknown payment', async () => {
      await expect(store.removePending(`pay_${randomUUID()}`)).resolves.toBeUndefined();
    });
  });

  describe('outcome records', () => {
    const record = (overrides: Partial<OutcomeRecord> = {}): OutcomeRecord => ({
      paymentId: `pay_${randomUUID()}`,
      outcome: 'confirmed',
      status: 'SUCCESS',
      source: 'webhook',
      handlers: 'succeeded',
      attempts: 1,
      amount: '12500',
      developerTrackingId: 'order-42',
      updatedAt: '2025-01-02T03:04:05.000Z',
      ...overrides,
    });

    it('gets a saved record field for field, and replaces it when saved again', async () => {
      const saved = record({ lastError: 'Error: handler down', handlers: 'failed' });
      await store.saveOutcome(saved, LONG_MS);
      await expect(store.getOutcome(saved.paymentId)).resolves.toStrictEqual(saved);
      const { lastError: _gone, ...replaced } = { ...saved, handlers: 'succeeded' as const, attempts: 2 };
      await store.saveOutcome(replaced, LONG_MS);
      await expect(store.getOutcome(saved.paymentId)).resolves.toStrictEqual(replaced);
    });

    it('answers undefined for an unknown payment', async () => {
      await expect(store.getOutcome(`pay_${randomUUID()}`)).resolves.toBeUndefined();
    });

    it('forgets a record once its TTL has passed', async () => {
      const saved = record();
      await store.saveOutcome(saved, SHORT_MS);
      await sleep(PAST_SHORT_MS);
      await expect(store.getOutcome(saved.paymentId)).resolves.toBeUndefined();
    });

    it('lists newest first, filters, and pages through every match exactly once', async () => {
      // A distinctive year keeps other tests' records out of the filtered pages' way.
      const marker = randomUUID();
      const saved = Array.from({ length: 7 }, (_, i) =>
        record({
          updatedAt: `2999-01-01T00:00:0${i}.000Z`,
          handlers: i % 2 === 0 ? 'failed' : 'succeeded',
          lastError: marker,
        }),
      );
      for (const r of saved) await store.saveOutcome(r, LONG_MS);
      const seen: OutcomeRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.listOutcomes({ handlers: 'failed', limit: 2, cursor });
        seen.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      const mine = seen.filter((r) => r.lastError === marker);
      expect(mine.map((r) => r.updatedAt)).toEqual([
        '2999-01-01T00:00:06.000Z',
        '2999-01-01T00:00:04.000Z',
        '2999-01-01T00:00:02.000Z',
        '2999-01-01T00:00:00.000Z',
      ]);
      expect(seen.every((r) => r.handlers === 'failed')).toBe(true);
      expect(new Set(seen.map((r) => r.paymentId)).size).toBe(seen.length);
    });

    it('does not list a record once its TTL has passed', async () => {
      const listed = async (marker: string) => {
        const seen: OutcomeRecord[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listOutcomes({ outcome: 'expired', limit: 500, cursor });
          seen.push(...page.items);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return seen.filter((r) => r.lastError === marker).map((r) => r.paymentId);
      };
      const { marker, kept } = await whileFresh(async () => {
        const marker = randomUUID();
        const short = record({ updatedAt: '2998-06-01T00:00:00.000Z', outcome: 'expired', lastError: marker });
        const kept = record({ updatedAt: '2998-06-01T00:00:00.000Z', outcome: 'expired', lastError: marker });
        await store.saveOutcome(short, SHORT_MS);
        await store.saveOutcome(kept, LONG_MS);
        expect((await listed(marker)).sort()).toEqual([short.paymentId, kept.paymentId].sort());
        return { marker, kept };
      });
      await sleep(PAST_SHORT_MS);
      expect(await listed(marker)).toEqual([kept.paymentId]);
    });

    it('orders records updated at the same time by payment id, across pages, and filters by outcome', async () => {
      const marker = randomUUID();
      const at = '2997-03-03T03:03:03.000Z';
      const ids = Array.from({ length: 5 }, () => `pay_${randomUUID()}`);
      for (const id of ids)
        await store.saveOutcome(
          record({ paymentId: id, updatedAt: at, outcome: 'authorized', lastError: marker }),
          LONG_MS,
        );
      await store.saveOutcome(record({ updatedAt: at, outcome: 'failed', lastError: marker }), LONG_MS);
      const seen: OutcomeRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.listOutcomes({ outcome: 'authorized', limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      expect(seen.every((r) => r.outcome === 'authorized')).toBe(true);
      expect(seen.filter((r) => r.lastError === marker).map((r) => r.paymentId)).toEqual([...ids].sort());
    });

    it('refuses a foreign cursor and a non-positive limit', async () => {
      await expect(store.listOutcomes({ cursor: 'not-a-cursor' })).rejects.toThrow(RangeError);
      await expect(store.listOutcomes({ limit: 0 })).rejects.toThrow(RangeError);
    });
  });
}
