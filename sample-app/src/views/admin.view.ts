import type { CardBinding } from 'nestjs-payments';
import type { Flash } from '../admin/admin.flash.js';
import type { CatalogItem } from '../catalog/catalog.service.js';
import type { Order } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';
import { money, shortDate, stateBadge } from './parts.view.js';

/** Outcome of a bindings lookup: the bindings, or why there are none to show. */
export type BindingsLookup = { clientId: string; bindings: CardBinding[]; error?: undefined } | { clientId: string; error: string; bindings?: undefined };

/** Everything the admin page shows. */
export interface AdminView {
  /** Orders, newest first. */
  readonly orders: readonly Order[];
  /** Products, for the pre-authorized test order form. */
  readonly products: readonly CatalogItem[];
  /** The message of the last action, shown once. */
  readonly flash?: Flash;
  /** Result of `?clientId=`, when a lookup was made. */
  readonly bindings?: BindingsLookup;
  /** Base URL of the payment service (never the keys). */
  readonly serviceUrl: string;
}

/** The action a row offers: Refund for paid orders, Cancel for pre-authorized ones. */
function orderAction(order: Order): SafeHtml {
  if (order.state === 'paid') {
    return html`<form method="post" action="/admin/orders/${order.id}/refund"><button class="small danger" type="submit" data-action="refund">Refund</button></form>`;
  }
  if (order.state === 'preauthorized') {
    return html`<form method="post" action="/admin/orders/${order.id}/cancel"><button class="small secondary" type="submit" data-action="cancel">Cancel</button></form>`;
  }
  return html`<span class="muted">—</span>`;
}

function ordersTable(orders: readonly Order[]): SafeHtml {
  if (orders.length === 0) return html`<div class="table-wrap"><p class="empty">No orders yet. Buy something in the catalog.</p></div>`;
  const rows = orders.map(
    (o) => html`<tr id="order-${o.id}" data-state="${o.state}">
<td class="mono">${o.id}</td>
<td>${o.productName}</td>
<td class="num">${money(o.amount)}</td>
<td>${stateBadge(o.state)}</td>
<td class="mono">${o.paymentId ?? '—'}</td>
<td>${shortDate(o.createdAt)}</td>
<td class="action">${orderAction(o)}</td>
</tr>`,
  );
  return html`<div class="table-wrap"><table id="orders">
<thead><tr><th>Order</th><th>Product</th><th class="num">Amount</th><th>State</th><th>Payment id</th><th>Created (UTC)</th><th class="action">Action</th></tr></thead>
<tbody>
${rows}
</tbody>
</table></div>`;
}

function bindingsResult(lookup: BindingsLookup | undefined): SafeHtml {
  if (!lookup) return html``;
  if (lookup.error !== undefined) return html`<p class="flash flash-error result" id="bindings-error">${lookup.error}</p>`;
  if (lookup.bindings.length === 0) return html`<p class="result muted" id="bindings-empty">No card bindings for <strong>${lookup.clientId}</strong>.</p>`;
  const rows = lookup.bindings.map(
    (b) => html`<tr data-binding="${b.bindingId}">
<td><strong>${b.cardBrand}</strong></td>
<td class="mono">•••• ${b.cardLastFour}</td>
<td><span class="badge badge-${b.status === 'active' ? 'active' : 'other'}">${b.status}</span></td>
<td>${shortDate(b.createdAt)}</td>
<td class="mono">${b.bindingId}</td>
</tr>`,
  );
  return html`<div class="table-wrap result"><table id="bindings">
<thead><tr><th>Brand</th><th>Card</th><th>Status</th><th>Created (UTC)</th><th>Binding id</th></tr></thead>
<tbody>
${rows}
</tbody>
</table></div>`;
}

/** GET /admin: orders with their actions, the bindings lookup, and the sandbox's test tools. */
export function adminPage(ctx: PageContext, view: AdminView): string {
  const flash = view.flash && html`<p class="flash flash-${view.flash.kind}" id="flash" role="status">${view.flash.text}</p>`;
  const options = view.products.map((p) => html`<option value="${p.id}">${p.name} (${money(p.amount)})</option>`);
  const testTools =
    ctx.sandboxMode &&
    html`<section class="panel" id="test-tools">
<h2>Sandbox test tools</h2>
<p class="muted">The payment service has no public endpoint for pre-authorizations; the sandbox can make one, so you can try Cancel.</p>
<form class="inline-form" method="post" action="/admin/test-orders">
<select name="productId" aria-label="Product">${options}</select>
<button type="submit" id="create-preauthorized">Create pre-authorized test order</button>
</form>
</section>`;
  return layout(
    ctx,
    'Admin',
    'admin',
    html`<h1>Orders</h1>
<p class="lead">Payment service: <code>${view.serviceUrl}</code>${ctx.sandboxMode && ' (built-in sandbox)'}. This demo page has no login.</p>
${flash}
${ordersTable(view.orders)}
${testTools}
<section class="panel" id="bindings-lookup">
<h2>Card bindings</h2>
<p class="muted">Cards a customer saved with the payment service, by your customer id${ctx.sandboxMode && html` (try <code>demo-customer</code>)`}.</p>
<form class="inline-form" method="get" action="/admin">
<label for="clientId">Customer id</label>
<input id="clientId" name="clientId" value="${view.bindings?.clientId ?? ''}" placeholder="demo-customer" autocomplete="off">
<button type="submit" id="lookup">Look up</button>
</form>
${bindingsResult(view.bindings)}
</section>`,
  );
}
