import {
  bucketStart,
  handlingHistogram,
  histogramPercentile,
  storyLogOf,
  TALLY,
  tallySum,
  type TallyBucket,
} from '../core/store/index.js';
import type { PaymentsClient } from '../core/client/index.js';
import { type DeskPageContext, html, page, type SafeHtml } from './desk.views.js';

/** The windows the charts page offers, by their name in `?window=`. */
export const CHART_WINDOWS: Readonly<Record<string, { label: string; ms: number }>> = {
  '1h': { label: 'the last hour', ms: 3_600_000 },
  '24h': { label: 'the last 24 hours', ms: 86_400_000 },
  '7d': { label: 'the last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'the last 30 days', ms: 30 * 86_400_000 },
};

/** The window `?window=` names; the last 24 hours when it names none of {@link CHART_WINDOWS}. */
export function chartWindow(param: string | null): string {
  return param !== null && Object.hasOwn(CHART_WINDOWS, param) ? param : '24h';
}

/** What the charts show of a window's tallies. */
export interface ChartSummary {
  /** Payments handled, by outcome, most first (ties by name). */
  outcomes: Array<{ label: string; value: number }>;
  /** The histogram of times from paid to handled, by slot (`≤ 250 ms`, ..., `longer`). */
  histogram: Array<{ label: string; value: number }>;
  /** The median time from paid to handled, ms (`Infinity`: past the last bound; `undefined`: none). */
  p50?: number;
  /** The 99th percentile, as `p50`. */
  p99?: number;
  /** Verify calls per settled payment, `undefined` when none settled. */
  verifyPerSettled?: number;
  /** Payments settled. */
  settled: number;
  /** Verify calls spent on strangers. */
  verifyStrangers: number;
  /** Webhook deliveries refused. */
  refused: number;
}

/** The summary of a window's tallies: one rule for the page and its tests. */
export function chartSummary(buckets: readonly TallyBucket[]): ChartSummary {
  const outcomes = new Map<string, number>();
  for (const b of buckets)
    for (const [name, count] of Object.entries(b.counts))
      if (name.startsWith('outcome.')) outcomes.set(name.slice(8), (outcomes.get(name.slice(8)) ?? 0) + count);
  const slots = handlingHistogram(buckets);
  const settled = tallySum(buckets, TALLY.settled);
  return {
    outcomes: [...outcomes]
      .map(([label, value]) => ({ label, value }))
      .sort((a, b) => b.value - a.value || a.label.localeCompare(b.label)),
    histogram: slots.map((s) => ({
      label: s.le === 'inf' ? 'longer' : `≤ ${durationText(Number(s.le))}`,
      value: s.count,
    })),
    p50: histogramPercentile(slots, 50),
    p99: histogramPercentile(slots, 99),
    verifyPerSettled: settled === 0 ? undefined : tallySum(buckets, TALLY.verifySettled) / settled,
    settled,
    verifyStrangers: tallySum(buckets, TALLY.verifyStranger),
    refused: tallySum(buckets, TALLY.refused),
  };
}

/** A duration as people read it: `250 ms`, `2.5 s`, `5 min`. */
export function durationText(ms: number | undefined): string {
  if (ms === undefined) return 'none yet';
  if (ms === Infinity) return `more than ${durationText(900_000)}`;
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1000} s`;
  return `${ms / 60_000} min`;
}

/**
 * A horizontal bar chart as SVG markup: a title and a description for assistive technology
 * (`role="img"`, `aria-labelledby`), and every bar's label and value as text, so the numbers read
 * without colour. Presentation attributes only (no `style`): the page's policy allows no inline style.
 */
export function barChart(
  id: string,
  title: string,
  desc: string,
  bars: ReadonlyArray<{ label: string; value: number }>,
): SafeHtml {
  const row = 24;
  const labelWidth = 150;
  const barWidth = 300;
  const height = Math.max(1, bars.length) * row + 8;
  const max = Math.max(1, ...bars.map((b) => b.value));
  return html`<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="${id}-title ${id}-desc" width="${labelWidth + barWidth + 80}" height="${height}" viewBox="0 0 ${labelWidth + barWidth + 80} ${height}"><title id="${id}-title">${title}</title><desc id="${id}-desc">${desc}</desc>${
    bars.length === 0
      ? html`<text x="4" y="18" fill="#1b1b1b" font-size="13">Nothing counted in this window.</text>`
      : bars.map((b, i) => {
          const y = i * row + 4;
          const w = Math.round((b.value / max) * barWidth);
          return html`<g><text x="${labelWidth - 6}" y="${y + 15}" text-anchor="end" fill="#1b1b1b" font-size="13">${b.label}</text><rect x="${labelWidth}" y="${y + 2}" width="${w}" height="${row - 8}" fill="#2f6f4f"></rect><text x="${labelWidth + w + 6}" y="${y + 15}" fill="#1b1b1b" font-size="13">${b.value}</text></g>`;
        })
  }</svg>`;
}

/** The tallies of a window, as the store keeps them. */
export interface DeskChartData {
  /** The window's name (a key of {@link CHART_WINDOWS}). */
  window: string;
  /** The buckets read; `undefined` when the store keeps no tallies. */
  buckets?: TallyBucket[];
  /** The registration the tallies are of (`''`: the unnamed one). */
  registration: string;
}

/** Reads a window's tallies: one range read of the buckets, never a scan of the records. */
export async function readCharts(client: PaymentsClient, window: string, now: number): Promise<DeskChartData> {
  const log = storyLogOf(client.store);
  const registration = client.name ?? '';
  if (log === undefined) return { window, registration };
  const to = bucketStart(now, log.limits.bucketMs);
  const from = bucketStart(now - CHART_WINDOWS[window].ms + 1, log.limits.bucketMs);
  await client.flushStories();
  return { window, registration, buckets: await log.tallies(registration, from, to) };
}

function ratio(value: number | undefined): string {
  return value === undefined ? 'none settled yet' : value.toFixed(2);
}

/** The charts page: outcomes, handling times, verify calls, refused deliveries, over a chosen window. */
export function chartsPage(ctx: DeskPageContext, data: DeskChartData): string {
  const windows = Object.entries(CHART_WINDOWS).map(([name, w]) =>
    name === data.window
      ? html`<li><strong aria-current="page">${w.label}</strong></li>`
      : html`<li><a href="${ctx.base}/charts?window=${name}">${w.label}</a></li>`,
  );
  const who = data.registration === '' ? 'this registration' : html`registration ${data.registration}`;
  if (data.buckets === undefined)
    return page(
      'Charts',
      ctx,
      html`<p>This store keeps no tallies (its <code>story</code> option is off, or it is a custom store without one).</p>`,
    );
  const s = chartSummary(data.buckets);
  const label = CHART_WINDOWS[data.window].label;
  return page(
    'Charts',
    ctx,
    html`<nav aria-label="Window"><ul>${windows}</ul></nav><p>Counted as outcomes happen, for ${who}, over ${label}.</p>
<section id="outcomes"><h2>Payments by outcome</h2>${barChart('outcomes', `Payments by outcome, ${label}`, `Handled payments counted by outcome: ${s.outcomes.map((o) => `${o.label} ${o.value}`).join(', ') || 'none'}.`, s.outcomes)}</section>
<section id="handling"><h2>Time from paid to handled</h2><p>Median (p50): ${durationText(s.p50)}; p99: ${durationText(s.p99)} (the upper bound of the slot each falls in).</p>${barChart('handling', `Time from paid to handled, ${label}`, 'Paid payments counted by the time from the start of the attempt that found them paid to the end of their handlers.', s.histogram)}</section>
<section id="calls"><h2>Verify calls and deliveries</h2><dl><dt>Verify calls per settled payment</dt><dd>${ratio(s.verifyPerSettled)} (${s.settled} settled)</dd><dt>Verify calls spent on strangers</dt><dd>${s.verifyStrangers}</dd><dt>Webhook deliveries refused</dt><dd>${s.refused}</dd></dl></section>`,
  );
}
