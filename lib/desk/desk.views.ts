import { createHash } from 'node:crypto';
import type { CardBinding } from '../core/api/index.js';
import type { OutcomeRecord, StoryKind } from '../core/store/index.js';
import { laneOf } from '../core/settlement/index.js';
import { DESK_RESULTS, type DeskResult } from './desk.actions.js';
import { type DeskList, type DeskOverview, type DeskPayment, needsPerson, refundable } from './desk.data.js';

/**
 * HTML built by one rule: every value interpolated into a page is escaped, unless it is markup
 * this folder built ({@link SafeHtml}). Values the service or a customer controls (order ids,
 * error messages, statuses) can only ever reach a page as text.
 */
/** Markup built by {@link html}: interpolated as it is. */
export class SafeHtml {
  /** @param value markup whose every interpolated value was escaped */
  constructor(readonly value: string) {}

  /** The markup. */
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c] ?? c);
}

/** What may be interpolated: text (escaped), numbers, markup, lists of these; nothing else renders. */
export type HtmlValue = string | number | SafeHtml | undefined | null | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

/** The tagged template of every page: `html\`<td>${orderId}</td>\`` escapes `orderId`. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/** The one stylesheet, inline: no asset from anywhere, allowed by its hash in the page's policy. */
const STYLE = `body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header,main{max-width:72rem;margin:0 auto;padding:.75rem 1rem}header{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
header a{font-weight:600;color:inherit}header form{margin-left:auto}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.5rem}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top;word-break:break-word}
th{background:#f0f0f0}.count{font-weight:400;color:#555}.note{background:#eef6ee;border:1px solid #9c9;padding:.5rem}
.warn{background:#fff4e5;border:1px solid #e0a040;padding:.5rem}button{cursor:pointer}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:#fff;padding:.5rem;border:1px solid #ddd}
dt{font-weight:600}dd{margin:0;word-break:break-word}table.timeline td:first-child,table.timeline td:nth-child(n+4){white-space:nowrap;word-break:normal}`;

/** The Content-Security-Policy of every page: nothing loads, only this stylesheet applies, forms post to the desk. */
export const DESK_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** What every page knows: where the desk is mounted, who is looking, their form token. */
export interface DeskPageContext {
  /** The desk's mount path, e.g. `/desk` (no trailing slash; `''` at the root). */
  base: string;
  /** The principal's name to show. */
  who: string;
  /** The form token of this principal. */
  token: string;
}

/** The link of a payment's page. */
function paymentHref(base: string, paymentId: string): string {
  return `${base}/payments/${encodeURIComponent(paymentId)}`;
}

/** A whole page. */
export function page(title: string, ctx: Pick<DeskPageContext, 'base' | 'who'> | undefined, body: HtmlValue): string {
  const nav =
    ctx === undefined
      ? ''
      : html`<header><a href="${ctx.base || '/'}">Payments desk</a> <a href="${ctx.base}/charts">Charts</a>
<form method="get" action="${ctx.base}/search" role="search"><label>Search <input name="q" required maxlength="200"></label> <label>by <select name="by"><option value="">payment or order id</option><option value="token">webhook token or URL</option><option value="customer">customer id (card bindings)</option></select></label> <button>Search</button></form>
<span>Signed in as ${ctx.who}</span></header>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title} · Payments desk</title><style>${STYLE_HTML}</style></head>
<body>${nav}<main><h1>${title}</h1>${body}</main></body></html>`.value;
}

/** The stylesheet as markup (it is this file's constant, not a value from outside). */
const STYLE_HTML: SafeHtml = new SafeHtml(STYLE);

/** A button posting `action` for one payment, with the form token. */
function actionForm(ctx: DeskPageContext, paymentId: string, action: string, label: string): SafeHtml {
  return html`<form method="post" action="${paymentHref(ctx.base, paymentId)}/${action}"><input type="hidden" name="_csrf" value="${ctx.token}"><button>${label}</button></form>`;
}

function recordRows(
  ctx: DeskPageContext,
  items: OutcomeRecord[],
  action?: (r: OutcomeRecord) => HtmlValue,
  actionTitle = 'Action',
): SafeHtml {
  return html`<table><thead><tr><th>Payment</th><th>Order</th><th>Outcome</th><th>Handlers</th><th>Updated</th><th>Last error</th>${action ? html`<th>${actionTitle}</th>` : ''}</tr></thead><tbody>${items.map(
    (r) =>
      html`<tr><td><a href="${paymentHref(ctx.base, r.paymentId)}">${r.paymentId}</a></td><td>${r.developerTrackingId ?? ''}</td><td>${r.outcome} (${r.status})</td><td>${r.handlers}, ${r.attempts} attempt(s)</td><td>${r.updatedAt}</td><td>${r.lastError ?? r.refundError ?? ''}</td>${action ? html`<td>${action(r)}</td>` : ''}</tr>`,
  )}</tbody></table>`;
}

function listSection(
  ctx: DeskPageContext,
  id: string,
  title: string,
  what: string,
  list: DeskList,
  action?: (r: OutcomeRecord) => HtmlValue,
  actionTitle?: string,
): SafeHtml {
  const count = `${list.count}${list.more ? '+' : ''}`;
  return html`<section id="${id}"><h2>${title} <span class="count">(${count})</span></h2><p>${what}</p>${
    list.items.length === 0 ? html`<p>None.</p>` : recordRows(ctx, list.items, action, actionTitle)
  }</section>`;
}

/** The overview: what needs a person, with counts, and the latest outcomes. */
export function overviewPage(ctx: DeskPageContext, data: DeskOverview): string {
  const review = (r: OutcomeRecord) => actionForm(ctx, r.paymentId, 'review', 'Mark reviewed');
  const rerun = (r: OutcomeRecord) => [
    actionForm(ctx, r.paymentId, 'run-handlers', 'Check now and run handlers again'),
    review(r),
  ];
  const refund = (r: OutcomeRecord) => [actionForm(ctx, r.paymentId, 'refund', 'Refund this duplicate'), review(r)];
  const reviewedBy = (r: OutcomeRecord) => {
    const by = data.reviews[r.paymentId];
    return by === undefined ? '' : html`${by.name}, <time>${by.at}</time>`;
  };
  return page(
    'What needs a person',
    ctx,
    html`${listSection(ctx, 'failing', 'Handlers failing', 'Your handlers threw on the latest attempt: the payment is not settled. Fix the cause (the last error), then run them again.', data.failing, rerun)}
${listSection(ctx, 'overdue', 'Overdue payments', 'Their outcome is still unknown after the fast checks (the service did not answer, or kept saying pending): check now, or ask the service.', data.overdue, rerun)}
${listSection(ctx, 'duplicates', 'Duplicates to refund', 'A second charge of an order another payment had paid: refund it (sent at most once per payment).', data.duplicates, refund)}
${listSection(ctx, 'mismatches', 'Mismatches', 'The service verified another amount, order or currency than the plugin sent: never confirmed. Look at the order and the service before anything else.', data.mismatches, review)}
${listSection(ctx, 'refunds-failed', 'Refunds that failed', 'The refund of a duplicate was refused, never reached the service after 3 calls, or its answer was lost: check at the service and refund by hand if it must be.', data.refundsFailed, review)}
${listSection(ctx, 'reviewed', 'Reviewed', 'Payments of the lists above a person marked reviewed: each is back in its list when what it needs changes (a new attempt, a new failure).', data.reviewed, reviewedBy, 'Reviewed by')}
<section id="latest"><h2>Latest outcomes</h2>${data.latest.length === 0 ? html`<p>None yet.</p>` : recordRows(ctx, data.latest)}</section>`,
  );
}

/** Search results: the payments of an order, or none. */
export function searchPage(ctx: DeskPageContext, query: string, found: OutcomeRecord[]): string {
  return page(
    'Search',
    ctx,
    html`<p>Payments of order or payment id “${query}”:</p>${found.length === 0 ? html`<p>No payment found. Records are kept for <code>outcomeRecordTtlSecs</code>; an order is found among the latest records only.</p>` : recordRows(ctx, found)}`,
  );
}

/** How the timeline names an action taken from the desk. */
const ACTION_NAMES: Readonly<Record<string, string>> = {
  'run-handlers': 'Checked now and handlers run from the desk',
  refund: 'Refund of the duplicate asked from the desk',
  review: 'Marked reviewed',
};

/** A customer's card bindings, as the service lists them. */
export function customerPage(ctx: DeskPageContext, clientId: string, bindings: CardBinding[] | undefined): string {
  return page(
    'Search',
    ctx,
    html`<p>Card bindings of customer “${clientId}”:</p>${
      bindings === undefined
        ? html`<p class="warn">The service did not answer: try again in a moment.</p>`
        : bindings.length === 0
          ? html`<p>The service knows no card binding of this customer.</p>`
          : html`<table><thead><tr><th>Binding</th><th>Customer</th><th>Card</th><th>Status</th><th>Created</th></tr></thead><tbody>${bindings.map(
              (b) =>
                html`<tr><td>${b.bindingId}</td><td>${b.clientId}</td><td>${b.cardBrand} ···· ${b.cardLastFour}</td><td>${b.status}</td><td>${b.createdAt}</td></tr>`,
            )}</tbody></table>`
    }`,
  );
}

interface TimelineEntry {
  /** ISO 8601, or `''` for what holds now. */
  at: string;
  /** What happened. */
  text: SafeHtml;
  /** What it was answered (the story's entries). */
  answer?: string;
  /** The path that wrote it. */
  source: string;
  /** The app instance that wrote it (the story's entries). */
  instance?: string;
}

/** How the timeline names a kind of story entry. */
const STORY_NAMES: Readonly<Record<StoryKind, string>> = {
  created: 'Created',
  webhook: 'Webhook delivery answered',
  verify: 'Verified with the service',
  return: 'Return visit',
  handlers: 'Handlers ran',
  duplicate: 'Duplicate charge',
  refund: 'Refund of the duplicate',
  desk: 'Desk action',
};

function timeline(p: DeskPayment): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  const { record, pending, refund } = p;
  for (const e of p.story ?? [])
    entries.push({
      at: e.at,
      text: html`${STORY_NAMES[e.kind] ?? e.kind}${e.error === undefined ? '' : html`; error: ${e.error}`}`,
      answer: e.answer,
      source: e.source,
      instance: e.instance,
    });
  if (pending !== undefined) {
    entries.push({
      at: pending.createdAt,
      text: html`Generated: ${pending.amount} millimes${pending.developerTrackingId === undefined ? '' : html`, order ${pending.developerTrackingId}`}`,
      source: 'queue',
    });
    if (pending.sessionEndsAt !== undefined)
      entries.push({ at: pending.sessionEndsAt, text: html`Checkout session ends`, source: 'queue' });
    entries.push({
      at: '',
      text: html`In the reconciliation queue: ${pending.checks} check(s) so far${laneText(pending.rechecks)}`,
      source: 'queue',
    });
  }
  if (record !== undefined) {
    entries.push({
      at: record.updatedAt,
      text: html`Latest attempt (${record.attempts} in all), by ${record.source}: the service said ${record.status}, outcome ${record.outcome}; handlers ${record.handlers}${record.lastError === undefined ? '' : html`; last error: ${record.lastError}`}`,
      source: 'record',
    });
  }
  if (refund !== undefined) {
    entries.push({
      at: refund.updatedAt,
      text: html`Refund record: ${refund.state} after ${refund.tries} call(s)${refund.error === undefined ? '' : html`; ${refund.error}`}`,
      source: 'refund record',
    });
    if (refund.refund !== undefined)
      entries.push({
        at: refund.refund.refundedAt,
        text: html`Refunded by the service: refund ${refund.refund.refundId}, ${refund.refund.amount}, ${refund.refund.status}`,
        source: 'refund record',
      });
  } else if (record?.refund !== undefined) {
    entries.push({
      at: record.refund.refundedAt,
      text: html`Refunded by the service: refund ${record.refund.refundId}, ${record.refund.amount}, ${record.refund.status}`,
      source: 'record',
    });
  }
  for (const a of p.actions)
    entries.push({
      at: a.at,
      text: html`${ACTION_NAMES[a.action] ?? a.action} by ${a.name}: ${a.result}`,
      source: 'desk',
    });
  // A stable sort: entries of one instant keep the order they were written in.
  return entries.sort((a, b) => (a.at === '' ? (b.at === '' ? 0 : 1) : b.at === '' ? -1 : a.at.localeCompare(b.at)));
}

/** The timeline as a table: time, what, answer, source, instance. */
function timelineTable(p: DeskPayment): SafeHtml {
  const kept =
    p.story === undefined
      ? html`<p>This store keeps no story of payments: the timeline is built from its records.</p>`
      : '';
  return html`${kept}<table class="timeline"><thead><tr><th scope="col">Time</th><th scope="col">What</th><th scope="col">Answer</th><th scope="col">Source</th><th scope="col">Instance</th></tr></thead><tbody>${timeline(
    p,
  ).map(
    (e) =>
      html`<tr><td>${e.at === '' ? 'now' : html`<time>${e.at}</time>`}</td><td>${e.text}</td><td>${e.answer ?? ''}</td><td>${e.source}</td><td>${e.instance ?? ''}</td></tr>`,
  )}</tbody></table>`;
}

function field(name: string, value: HtmlValue): SafeHtml {
  return value === undefined || value === '' ? html`` : html`<dt>${name}</dt><dd>${value}</dd>`;
}

/** One payment: its record's fields, a timeline of what the store knows, and its actions. */
export function paymentPage(ctx: DeskPageContext, p: DeskPayment, result: DeskResult | undefined): string {
  const { record } = p;
  const flash = result === undefined ? '' : html`<p class="note" role="status">${DESK_RESULTS[result]}</p>`;
  const actions: SafeHtml[] = [];
  if (record === undefined || record.handlers !== 'succeeded' || record.outcome === 'pending')
    actions.push(actionForm(ctx, p.paymentId, 'run-handlers', 'Check now and run handlers again'));
  if (record !== undefined && refundable(record))
    actions.push(actionForm(ctx, p.paymentId, 'refund', 'Refund this duplicate'));
  if (record !== undefined && needsPerson(record) && p.reviewHolds !== true)
    actions.push(actionForm(ctx, p.paymentId, 'review', 'Mark reviewed'));
  const review =
    p.review === undefined
      ? ''
      : html`<p class="note">${p.reviewHolds === true ? 'Reviewed' : 'Reviewed earlier (it needs something else now)'} by ${p.review.name} at <time>${p.review.at}</time>.</p>`;
  return page(
    `Payment ${p.paymentId}`,
    ctx,
    html`${flash}${review}
<section><h2>Record</h2>${
      record === undefined
        ? html`<p>No outcome recorded yet.</p>`
        : html`<dl>${field('Outcome', record.outcome)}${field('Service status', record.status)}${field('Amount (millimes)', record.amount)}${field('Order', record.developerTrackingId)}${field('Path of the latest attempt', record.source)}${field('Handlers', record.handlers)}${field('Attempts', record.attempts)}${field('Last error', record.lastError)}${field('Updated', record.updatedAt)}${field('Settled by (duplicate of)', record.settledBy === undefined ? undefined : html`<a href="${paymentHref(ctx.base, record.settledBy)}">${record.settledBy}</a>`)}${field('Refund state', record.refundState)}${field('Refund calls', record.refundTries)}${field('Refund error', record.refundError)}</dl>`
    }</section>
${orderSettlement(p, ctx.base)}
<section><h2>Timeline</h2>${timelineTable(p)}</section>
<section><h2>Actions</h2>${actions.length === 0 ? html`<p>Nothing to do: the payment is settled.</p>` : actions}</section>`,
  );
}

// Which payment settled the payment's order: itself, or another (with a link to it).
function orderSettlement(p: DeskPayment, base: string): SafeHtml | '' {
  const by = p.orderSettledBy;
  if (by === undefined) return '';
  if (by.paymentId === p.paymentId) return html`<p>This payment settled its order.</p>`;
  return html`<p>Its order was settled by payment <a href="${paymentHref(base, by.paymentId)}">${by.paymentId}</a> (${by.amount} millimes).</p>`;
}

/** A page saying why a request was not served (401, 403, 404, 500). */
export function messagePage(title: string, text: string, ctx?: Pick<DeskPageContext, 'base' | 'who'>): string {
  return page(title, ctx, html`<p>${text}</p>`);
}

// Where the queue entry is in the pending lane (settlement.evidence.ts), as a clause of the queue line.
function laneText(rechecks: number | undefined): string {
  switch (laneOf(rechecks)) {
    case 'none':
      return '';
    case 'short':
      return ', in the short lane (only a return found it pending)';
    case 'fast':
      return `, ${String(rechecks)} recheck(s) in the pending lane`;
  }
}
