import type { CardBinding } from 'nestjs-payments';
import type { Flash } from '../admin/admin.flash.js';
import { orderTitle, type Order } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';
import { money, shortDate, stateBadge } from './parts.view.js';

/** Outcome of a bindings lookup: the bindings, or why there are none to show. */
export type BindingsLookup =
  | { clientId: string; bindings: CardBinding[]; error?: undefined }
  | { clientId: string; error: string; bindings?: undefined };

/** Everything the admin page shows. */
export interface AdminView {
  /** Orders, newest first. */
  readonly orders: readonly Order[];
  /** The message of the last action, shown once. */
  readonly flash?: Flash;
  /** Result of `?clientId=`, when a lookup was made. */
  readonly bindings?: BindingsLookup;
  /** Where the payments desk is mounted (`PaymentsDeskModule`), e.g. `/admin/payments`. */
  readonly deskPath: string;
  /** Base URL of the payment service (never the keys). */
  readonly serviceUrl: string;
  /** Where the orders are: `PGlite (sample-app/.data)`, `PostgreSQL (host:5432/shop)`. */
  readonly databaseLabel: string;
  /** The token of the page's forms. */
  readonly csrfToken: string;
}

const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}" />`;

/** The sign-out button in the header of admin pages. */
export function signOutForm(csrfToken: string): SafeHtml {
  return html`<form method="post" action="/admin/logout">${csrfField(csrfToken)}<button type="submit" id="sign-out">Sign out</button></form>`;
}

/**
 * What a row offers: Refund (paid or captured: to a confirmation page; a captured order refunds
 * what was captured), Capture / Cancel (authorized).
 */
function orderAction(order: Order, csrfToken: string): SafeHtml {
  if (order.status === 'paid' || order.status === 'captured') {
    return html`<a class="button small danger" href="/admin/orders/${encodeURIComponent(order.id)}/refund" data-action="refund">Refund…</a>`;
  }
  if (order.status === 'authorized') {
    return html`<form method="post" action="/admin/orders/${encodeURIComponent(order.id)}/capture">
        ${csrfField(csrfToken)}<input class="amount" name="amount" inputmode="decimal" placeholder="all" aria-label="Amount to capture (TND)" />
        <button class="small" type="submit" data-action="capture">Capture</button>
      </form>
      <form method="post" action="/admin/orders/${encodeURIComponent(order.id)}/cancel">
        ${csrfField(csrfToken)}<button class="small secondary" type="submit" data-action="cancel">Cancel</button>
      </form>`;
  }
  return html`<span class="muted">—</span>`;
}

function ordersTable(orders: readonly Order[], csrfToken: string): SafeHtml {
  if (orders.length === 0)
    return html`<div class="table-wrap"><p class="empty">No orders yet. Buy something in the catalog.</p></div>`;
  const rows = orders.map(
    (o) =>
      html`<tr id="order-${o.id}" data-state="${o.status}">
        <td class="mono">${o.id}</td>
        <td>${orderTitle(o)}</td>
        <td class="num">${money(o.amount)}</td>
        <td>
          ${stateBadge(o.status)}${o.capturedAmount !== undefined && html` <span class="muted" data-captured="${o.capturedAmount}">${money(o.capturedAmount)}</span>`}
        </td>
        <td class="mono">${o.paymentId ?? '—'}</td>
        <td class="mono">${o.clientId ?? '—'}</td>
        <td>${shortDate(o.createdAt)}</td>
        <td class="action">${orderAction(o, csrfToken)}</td>
      </tr>`,
  );
  return html`<div class="table-wrap">
    <table id="orders">
      <thead>
        <tr>
          <th>Order</th>
          <th>Product</th>
          <th class="num">Amount</th>
          <th>State</th>
          <th>Payment id</th>
          <th>Saved card for</th>
          <th>Created (UTC)</th>
          <th class="action">Action</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

/**
 * What needs a person about payments (handlers failing, duplicates to refund, payments overdue,
 * mismatches, refunds that failed) is on the plugin's payments desk, mounted behind the same
 * sign-in: the admin links to it rather than keeping lists of its own.
 */
function deskPanel(deskPath: string): SafeHtml {
  return html`<section class="panel" id="payments-desk">
    <h2>Payments that need a person</h2>
    <p class="muted">
      Payments whose order update failed (with "Run handlers again"), second charges of paid orders (with "Refund"), payments overdue, mismatches and
      failed refunds, and any payment's story by its id or its order's, are on the payments desk.
    </p>
    <p><a class="button" id="open-desk" href="${deskPath}">Open the payments desk</a></p>
  </section>`;
}

function bindingsResult(lookup: BindingsLookup | undefined): SafeHtml {
  if (!lookup) return html``;
  if (lookup.error !== undefined)
    return html`<p class="flash flash-error result" id="bindings-error">${lookup.error}</p>`;
  if (lookup.bindings.length === 0)
    return html`<p class="result muted" id="bindings-empty">No card bindings for <strong>${lookup.clientId}</strong>.</p>`;
  const rows = lookup.bindings.map(
    (b) =>
      html`<tr data-binding="${b.bindingId}">
        <td><strong>${b.cardBrand}</strong></td>
        <td class="mono">•••• ${b.cardLastFour}</td>
        <td><span class="badge badge-${b.status === 'active' ? 'active' : 'other'}">${b.status}</span></td>
        <td>${shortDate(b.createdAt)}</td>
        <td class="mono">${b.bindingId}</td>
      </tr>`,
  );
  return html`<div class="table-wrap result">
    <table id="bindings">
      <thead>
        <tr>
          <th>Brand</th>
          <th>Card</th>
          <th>Status</th>
          <th>Created (UTC)</th>
          <th>Binding id</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

/** GET /admin: orders with their actions, the way to the payments desk, and the card bindings lookup. */
export function adminPage(ctx: PageContext, view: AdminView): string {
  const flash =
    view.flash && html`<p class="flash flash-${view.flash.kind}" id="flash" role="status">${view.flash.text}</p>`;
  return layout(
    ctx,
    'Admin',
    'admin',
    html`<h1>Orders</h1>
      <p class="lead">Payment service: <code>${view.serviceUrl}</code>${ctx.sandboxMode && ' (built-in sandbox)'}. Orders in ${view.databaseLabel}.</p>
      ${flash} ${ordersTable(view.orders, view.csrfToken)}
      <p class="muted">
        "Charged when shipped" orders are pre-authorized at checkout (the amount is held on the card): capture all of it or a part (the rest is released) when
        you ship, or cancel to release it all.
      </p>
      ${deskPanel(view.deskPath)}
      <section class="panel" id="bindings-lookup">
        <h2>Card bindings</h2>
        <p class="muted">
          Cards customers saved with the payment service ("Save my card" at checkout), by customer
          id${ctx.sandboxMode && html` (try <code>demo-customer</code>, or a customer id from the orders table)`}.
        </p>
        <form class="inline-form" method="get" action="/admin">
          <label for="clientId">Customer id</label>
          <input id="clientId" name="clientId" value="${view.bindings?.clientId ?? ''}" placeholder="cus_…" autocomplete="off" />
          <button type="submit" id="lookup">Look up</button>
        </form>
        ${bindingsResult(view.bindings)}
      </section>`,
    undefined,
    { nav: signOutForm(view.csrfToken) },
  );
}

/** GET /admin/orders/:id/refund: the confirmation step before a refund (money leaves the shop). */
export function refundConfirmPage(ctx: PageContext, order: Order, csrfToken: string): string {
  const amount = order.capturedAmount ?? order.amount;
  return layout(
    ctx,
    'Confirm refund',
    'admin',
    html`<section class="panel narrow" id="refund-confirm">
      <h1>Refund ${money(amount)}?</h1>
      <p class="muted">
        Order <span class="mono">${order.id}</span> (${orderTitle(order)}), payment <span class="mono">${order.paymentId ?? '—'}</span>. The customer gets
        ${order.capturedAmount === undefined ? 'the whole payment' : 'the captured amount'} back. This cannot be undone.
      </p>
      <form class="inline-form" method="post" action="/admin/orders/${encodeURIComponent(order.id)}/refund">
        ${csrfField(csrfToken)}<input type="hidden" name="confirm" value="yes" />
        <button class="danger" type="submit" id="confirm-refund">Refund ${money(amount)}</button>
        <a class="button secondary" href="/admin">Back</a>
      </form>
    </section>`,
    undefined,
    { nav: signOutForm(csrfToken) },
  );
}

/** GET /admin/login. */
export function loginPage(ctx: PageContext, csrfToken: string, next: string, error?: string): string {
  return layout(
    ctx,
    'Sign in',
    'admin',
    html`<section class="panel narrow" id="login">
      <h1>Sign in to the admin</h1>
      ${error !== undefined && html`<p class="flash flash-error" id="login-error">${error}</p>`}
      <p class="muted">
        ${ctx.sandboxMode ? 'The password is ADMIN_PASSWORD, or the one the shop printed when it started.' : 'The password is the shop’s ADMIN_PASSWORD.'}
      </p>
      <form class="inline-form" method="post" action="/admin/login">
        ${csrfField(csrfToken)}<input type="hidden" name="next" value="${next}" />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required autofocus />
        <button type="submit" id="sign-in">Sign in</button>
      </form>
    </section>`,
  );
}
