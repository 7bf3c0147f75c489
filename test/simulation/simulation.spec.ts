import { describe, expect, it } from '@jest/globals';
import { runHistory, STRESSORS, type Extra, type HistoryResult, type Stressor } from './sim.history.js';

/**
 * The engine's executable specification: seeded histories on virtual time (several instances
 * over one store, a service that lags its own webhooks, fails, rate-limits and hangs; lost,
 * late and duplicate deliveries; crashes at any await; store outages; skewed clocks; strangers'
 * ids), each checked against the engine's promises (sim.history.ts). `SIM_HISTORIES` sets how
 * many (default 2000), `SIM_SEED` the first seed; a failing history prints its seed, and
 * `SIM_SEED=<seed> SIM_HISTORIES=1` replays it alone.
 */
const HISTORIES = Number(process.env.SIM_HISTORIES ?? 2000);
const FIRST_SEED = Number(process.env.SIM_SEED ?? 1);

/**
 * Histories a long run once found failing, replayed on every run whatever `SIM_SEED` says: each
 * pins a fixed finding. 201648: a return turned away by the plugin's own 429 pause (another
 * payment's) queued no re-check, and the service lost its webhooks. 203264: a duplicate charge's
 * handler failed on the return path and nothing re-ran it before the session's end. 151714: a
 * pending-lane check the service rate-limited was put back due at the pause's end, but nothing woke
 * the sweep then (it waited for its next tick). 351: an instance 27 min ahead generated a payment
 * while the store was away (never measured) and its clock stepped before the late write: the queue
 * entry's times kept the step, and reconciliation came after the bound. 408: an early webhook's
 * lane entry replaced generatePayment's (no session end): after the lane, the doubled waits passed
 * the session's end by minutes. 300994: a return deferred by a 429 pause came before a slow store
 * took generatePayment's queue write; its re-check found nothing queued and gave up at once.
 * 306514: a return to a payment settled as a mismatch, its record unread (the store away), was told
 * "confirmed" from the verified status alone. 307336 (the model's): a lag whose bound reached past the session's
 * end was held to the lag's bound, where the documentation states reconciliation's. 307395: as 300994 (a return deferred by a 429
 * pause before a slow store took the queue write). 307864 (the model's): a webhook whose binding
 * generatePayment had not yet recorded (the store away) and whose verify names another order is
 * refused as a replay, as with a forgotten binding. 310128: as 300994. 309701: as 307864 (the
 * store partitioned from the generating instance). 410075: a process stalled mid-transaction past its lease
 * failed its handlers on resuming, and recorded them failed over the duplicate another attempt had settled meanwhile.
 * 400182: a sweep tick missed by milliseconds the entry a pass had put one interval after its synced time.
 * 400446 (the model's): a slow handler whose lease lapsed during a store outage ran again on another
 * instance, the documented exception the model excused for concurrent runs but not for a run after a success.
 * 400388: an instance's first generatePayment after
 * its clock stepped 22 min ahead judged the order's open payment over by its unmeasured clock. 212:
 * steps of an instance's wall clock over an hour ahead forgot a stranger id's 404 and verified it again.
 * 276 (the inbox model): an attempt finds an earlier attempt's committed inbox row and must run no
 * handler (with the row's conflict unchecked, pay_4's effects commit twice); 11806 also runs the inbox
 * model: a done marker lost after the host's commit (its attempt's claim taken by a dead one).
 * 2487: an instance an hour ahead generated a payment while the store's clock was out of its reach,
 * and the store was back by the first write: the queue entry was written on the instance's clock.
 * 4198: a return spent the short lane's last slot 2 s before the lane's last check, which then found
 * none: the payment, final just after the return's verify, waited for its session's end. 4659 (the
 * model's): a process frozen while generatePayment's answer was on its way dated the session when it
 * resumed, and the bound did not count from then.
 */
/** Stressors whose histories are held to budgets of their own (docs/confirmations.md). */
const BUDGET_APART: readonly Stressor[] = ['failing', 'longlag', 'slowstore'];

/**
 * Histories that crash at a transaction's statements or stall a process mid-handler (transactional, or `lapse`):
 * each rolled-back attempt verifies again (as a failed handler run does), left out of the budget.
 */
const TRANSACTIONAL_APART: readonly Extra[] = ['commitcrashes', 'stalls', 'lapse'];

/** Verify calls per settled payment, on average, in the histories with long lags (docs/confirmations.md). */
const LONG_LAG_BUDGET = 6;

const PINNED_SEEDS = [
  351, 408, 151714, 201648, 203071, 203264, 206279, 206497, 300994, 306514, 307336, 307395, 307864, 309701, 310128,
  410075, 400182, 400446, 400388, 212, 510253, 510545, 90, 520748, 273, 3142, 602059, 603613, 11806, 18279, 619955,
  619626, 617951, 15957, 615755, 23997, 35429, 638156, 178, 276, 1056, 2487, 4198, 4659,
];

describe('the engine simulation', () => {
  it('replays: a seed is one history, event for event (no real time, no unseeded randomness in the engine)', async () => {
    for (const seed of [7, 201648, 203264]) {
      const [a, b] = [await runHistory(seed), await runHistory(seed)];
      expect({ events: b.events, latencies: b.latencies, settledVerifies: b.settledVerifies }).toEqual({
        events: a.events,
        latencies: a.latencies,
        settledVerifies: a.settledVerifies,
      });
    }
  });

  it.each(PINNED_SEEDS)('pinned history %i: safe and live within the stated bounds', async (seed) => {
    expect((await runHistory(seed)).violations).toEqual([]);
  });

  it(
    `${HISTORIES} histories from seed ${FIRST_SEED}: safe, live within the stated bounds, within the verify budget`,
    async () => {
      const results: HistoryResult[] = [];
      const failures: string[] = [];
      for (let seed = FIRST_SEED; seed < FIRST_SEED + HISTORIES; seed++) {
        const result = await runHistory(seed);
        results.push(result);
        const done = seed - FIRST_SEED + 1;
        if (done % 10_000 === 0)
          process.stdout.write(`simulation: ${done} histories, ${failures.length} failing so far\n`);
        if (result.violations.length > 0) {
          failures.push(
            `seed ${seed} [${result.stressors.join(', ')}] (replay: SIM_SEED=${seed} SIM_HISTORIES=1 npm run test:sim):\n  ${result.violations.join('\n  ')}`,
          );
          if (failures.length === 1)
            process.stdout.write(`simulation: first violation at history ${seed - FIRST_SEED + 1}\n`);
          if (failures.length >= 5 || process.env.SIM_STOP_AT_FIRST) break;
        }
      }
      const report = summarise(results);
      process.stdout.write(`${report}\n`);
      // The percentiles' bounds leave out the long lags, whose bound grows with the lag itself
      // (max(30 s, 0.75 × lag), checked payment by payment above), and the transactional histories
      // that crash at a transaction's statements or stall a process for minutes (crashes, each
      // held to its lease and the redelivery, payment by payment above).
      const stats = new Map<string, { p50: number; p99: number; max: number }>();
      summarise(
        results.filter((r) => !r.stressors.some((s) => ['longlag', 'commitcrashes', 'stalls', 'lapse'].includes(s))),
        stats,
      );
      expect(failures).toEqual([]);
      if (HISTORIES >= 500) {
        const breaches = latencyBreaches(stats);
        if (breaches.length > 0)
          process.stdout.write(`simulation: after ${results.length} histories: a latency bound broken\n`);
        expect(breaches).toEqual([]);
      }
      // The budget counts the plugin's own spending: a handler that throws costs one more verify per
      // failed run, and a verify that lags its webhook one per pending-lane check, by design (both
      // stated apart in docs/confirmations.md), so the histories that force them are left out: long
      // lags, a slow store's customers who pay at once while verify lags, and an early webhook's lane
      // checks while the customer is still at the checkout (each a verify of a pending payment).
      const spending = results.filter(
        (r) =>
          !r.stressors.some(
            (s) => (BUDGET_APART as readonly string[]).includes(s) || (TRANSACTIONAL_APART as string[]).includes(s),
          ) && !r.stressors.includes('early'),
      );
      const settled = spending.reduce((n, r) => n + r.settled, 0);
      const verifies = spending.reduce((n, r) => n + r.settledVerifies, 0);
      process.stdout.write(
        `simulation: verify budget ${(verifies / settled).toFixed(3)} per settled payment over ${spending.length} histories\n`,
      );
      // Averages mean something over many histories only (a replay of one seed checks its violations).
      if (HISTORIES >= 500) {
        expect(settled).toBeGreaterThan(HISTORIES / 2);
        // The budget stated in docs/confirmations.md: at most 1.5 verify calls per settled payment on average.
        expect(verifies / settled).toBeLessThanOrEqual(1.5);
        // Long lags: the lane's fixed checks (about s/3 for a lag of s) and then a few backing off,
        // not one a minute: stated in docs/confirmations.md.
        const lagging = results.filter((r) => r.stressors.includes('longlag') && !r.stressors.includes('failing'));
        const laggingSettled = lagging.reduce((n, r) => n + r.settled, 0);
        const laggingVerifies = lagging.reduce((n, r) => n + r.settledVerifies, 0);
        if (laggingSettled > 0) expect(laggingVerifies / laggingSettled).toBeLessThanOrEqual(LONG_LAG_BUDGET);
      }
    },
    Math.max(30 * 60_000, HISTORIES * 200),
  );
});

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * The latency bounds the simulation holds the engine to, per family, in virtual seconds from the
 * service's final answer reaching the plugin to the handlers running (docs/confirmations.md,
 * "Checked by the simulation"): what holds today over 2,000 histories, with a margin. Asserted over
 * a run of at least 500 histories (fewer say little about a percentile).
 */
const LATENCY_BOUNDS: Record<string, { p50: number; p99: number; max?: number }> = {
  all: { p50: 2, p99: 120 },
  calm: { p50: 2, p99: 10, max: 30 },
  steady: { p50: 2, p99: 15, max: 30 },
  lag: { p50: 6, p99: 120 },
  lossy: { p50: 2, p99: 120 },
  duplicates: { p50: 2, p99: 120 },
  skew: { p50: 2, p99: 120 },
  twice: { p50: 2, p99: 120 },
};

/** The latency bounds a run broke ({@link LATENCY_BOUNDS}), one line each. */
function latencyBreaches(stats: Map<string, { p50: number; p99: number; max: number }>): string[] {
  const breaches: string[] = [];
  for (const [family, bound] of Object.entries(LATENCY_BOUNDS)) {
    const got = stats.get(family);
    if (!got || Number.isNaN(got.p50)) continue;
    if (got.p50 > bound.p50 * 1000) breaches.push(`${family}: p50 ${got.p50 / 1000} s > ${bound.p50} s`);
    if (got.p99 > bound.p99 * 1000) breaches.push(`${family}: p99 ${got.p99 / 1000} s > ${bound.p99} s`);
    if (bound.max !== undefined && got.max > bound.max * 1000)
      breaches.push(`${family}: max ${got.max / 1000} s > ${bound.max} s`);
  }
  return breaches;
}

/** Virtual time to confirmation and verify calls per settled payment, per stressor. */
function summarise(
  results: HistoryResult[],
  stats = new Map<string, { p50: number; p99: number; max: number }>(),
): string {
  const rows = [['family', 'histories', 'settled', 'p50 s', 'p99 s', 'max s', 'verifies/settled']];
  // `steady`: the service may lag, lose, duplicate, skew and face strangers, but nothing fails (no
  // crash, outage, service fault, slow or failing handler): where the 30 s bound is stated bare.
  const failing: Array<Stressor | Extra> = [
    'crashes',
    'outage',
    'faults',
    'slow',
    'failing',
    'partition',
    'commitcrashes',
    'stalls',
    'lostcommits',
    'lapse',
  ];
  const families: Array<[string, (r: HistoryResult) => boolean]> = [
    ['all', () => true],
    ['calm', (r) => !r.stressors.some((s) => (STRESSORS as readonly string[]).includes(s) || s === 'partition')],
    // Long lags are left out too: their bound is the lag's (max(30 s, 0.75 × lag)), not the bare 30 s.
    ['steady', (r) => !r.stressors.some((s) => failing.includes(s) || s === 'longlag')],
  ];
  for (const s of STRESSORS) families.push([s, (r) => r.stressors.includes(s)]);
  for (const [name, member] of families) {
    const rs = results.filter(member);
    const lat = rs.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const settled = rs.reduce((n, r) => n + r.settled, 0);
    const verifies = rs.reduce((n, r) => n + r.settledVerifies, 0);
    stats.set(name, { p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat[lat.length - 1] ?? Number.NaN });
    const s = (ms: number) => (Number.isNaN(ms) ? '-' : (ms / 1000).toFixed(1));
    rows.push([
      name,
      String(rs.length),
      String(settled),
      s(percentile(lat, 50)),
      s(percentile(lat, 99)),
      s(lat[lat.length - 1] ?? Number.NaN),
      settled ? (verifies / settled).toFixed(2) : '-',
    ]);
  }
  const events = results.reduce((n, r) => n + r.events, 0);
  return `simulation: ${results.length} histories, ${events} events\n${rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(11) : c.padStart(9))).join(' ')).join('\n')}`;
}
