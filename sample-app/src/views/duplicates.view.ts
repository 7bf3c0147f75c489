import type { OutcomeRecord } from 'nestjs-payments';
import { html, type SafeHtml } from './html.util.js';
import { money, shortDate } from './parts.view.js';

/** Second charges of paid orders (`listOutcomes({ outcome: 'duplicate' })`), or why they could not be listed. */
export type DuplicateCharges =
  { items: readonly OutcomeRecord[]; error?: undefined } | { items?: undefined; error: string };

/**
 * The admin's panel of second charges: a customer paid an order twice (two tabs); the plugin
 * confirmed the first payment only, and lists the other here, with Refund until it is refunded.
 */
export function duplicatesPanel(duplicates: DuplicateCharges, csrfToken: string): SafeHtml {
  let body: SafeHtml;
  if (duplicates.error !== undefined) {
    body = html`<p class="flash flash-error result">${duplicates.error}</p>`;
  } else if (duplicates.items.length === 0) {
    body = html`<p class="result muted" id="duplicates-empty">None: no order was paid twice.</p>`;
  } else {
    const rows = duplicates.items.map(
      (r) =>
        html`<tr data-payment="${r.paymentId}" data-refunded="${r.refund ? 'yes' : 'no'}">
          <td class="mono">${r.paymentId}</td>
          <td class="mono">${r.developerTrackingId ?? '—'}</td>
          <td class="num">${money(r.amount ?? '0')}</td>
          <td class="mono">${r.settledBy ?? '—'}</td>
          <td>${shortDate(r.updatedAt)}</td>
          <td class="action">
            ${
              r.refund
                ? html`<span class="badge badge-refunded" data-refund="${r.refund.refundId}">refunded</span>`
                : html`<form method="post" action="/admin/duplicates/${encodeURIComponent(r.paymentId)}/refund">
                    <input type="hidden" name="_csrf" value="${csrfToken}" /><button class="small danger" type="submit" data-action="refund-duplicate">
                      Refund
                    </button>
                  </form>`
            }
          </td>
        </tr>`,
    );
    body = html`<div class="table-wrap result">
      <table id="duplicates">
        <thead>
          <tr>
            <th>Second payment</th>
            <th>Order</th>
            <th class="num">Amount</th>
            <th>Order paid by</th>
            <th>Updated (UTC)</th>
            <th class="action">Action</th>
          </tr>
        </thead>
        <tbody>
          ${rows}
        </tbody>
      </table>
    </div>`;
  }
  return html`<section class="panel" id="duplicate-charges">
    <h2>Orders paid twice</h2>
    <p class="muted">A customer paid an order a second time (two tabs, a second "Pay now"). The order is paid once; refund the second payment here.</p>
    ${body}
  </section>`;
}
