import type { OutcomeRecord } from 'nestjs-payments';
import { orderTitle, type Order, type OrderEvent, type ReturnCheck } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';
import { money, shortDate, stateBadge } from './parts.view.js';

/** Which return page the customer came back to. */
export type ReturnPage = 'success' | 'failed';

/** Seconds between reloads while the payment is still being processed. */
export const PROCESSING_REFRESH_SECS = 3;

/** Heading and text by verified state: what the customer needs to know, whatever page they landed on. */
function message(order: Order, check: ReturnCheck | undefined): { title: string; text: string } {
  if (check?.outcome === 'duplicate') {
    // The customer paid an order that another of their payments had already paid (two tabs).
    return {
      title: 'This order was already paid',
      text: 'You paid it a second time: that second payment is not used, and we refund it to you. There is nothing else to do.',
    };
  }
  switch (order.status) {
    case 'paid':
      return {
        title: 'Thank you, your order is paid',
        text: 'We have received your payment and are preparing your order.',
      };
    case 'authorized':
      return {
        title: 'Thank you, your order is confirmed',
        text: 'The amount is reserved on your card. We charge it when your order ships, and only for what we ship.',
      };
    case 'captured':
      return { title: 'Your order has shipped', text: 'The reserved amount has been charged.' };
    case 'refunded':
      return { title: 'This order was refunded', text: 'The payment has been returned to you.' };
    case 'failed':
      return {
        title: 'Payment failed',
        text: 'The payment was declined or did not go through. You have not been charged; you can try again from the catalog.',
      };
    case 'expired':
      return {
        title: 'Payment session expired',
        text: 'The payment was not completed in time. You have not been charged; you can order again from the catalog.',
      };
    case 'cancelled':
      return { title: 'This order was cancelled', text: 'The reserved funds have been released.' };
    case 'pending':
      if (check?.outcome === 'mismatch') {
        return {
          title: 'We could not confirm your payment',
          text: "The payment service's record of this payment does not match your order. Please contact us with your order number; we will sort it out.",
        };
      }
      return {
        title: 'Your payment is being processed',
        text: 'We are waiting for the payment service to confirm it. This page refreshes by itself; you can also refresh it in a moment.',
      };
  }
}

/**
 * The page the payment service sends the customer back to (`/orders/:id/success` or `/failed`):
 * the order's verified state, whichever page it is.
 * @param check what the page's `reconcilePayment` found, when the order was pending
 */
export function orderPage(ctx: PageContext, order: Order, _page: ReturnPage, check?: ReturnCheck): string {
  const { title, text } = message(order, check);
  // Reload only while there is something to wait for: not after a mismatch, which needs a person.
  const waiting = order.status === 'pending' && check?.outcome !== 'mismatch';
  return layout(
    ctx,
    title,
    'none',
    html`<section class="panel narrow" id="order" data-outcome="${check?.outcome ?? ''}">
      <h1>${title}</h1>
      <p class="muted">${text}</p>
      ${orderDetails(order)}
      <a class="button${order.status === 'paid' ? ' secondary' : ''}" href="/">Continue shopping</a>
      <a class="button secondary" id="order-link" href="/orders/${order.id}">Order page</a>
    </section>`,
    waiting ? PROCESSING_REFRESH_SECS : undefined,
  );
}

/** The order's facts: number, product, amounts, state, saved card, date. */
function orderDetails(order: Order): SafeHtml {
  return html`<dl>
    <dt>Order</dt>
    <dd class="mono" id="order-id">${order.id}</dd>
    <dt>Product</dt>
    <dd>${orderTitle(order)}</dd>
    <dt>Amount</dt>
    <dd id="order-amount">${money(order.amount)}</dd>
    ${
      order.capturedAmount !== undefined &&
      html`<dt>Charged</dt>
        <dd id="order-captured">${money(order.capturedAmount)}</dd>`
    }
    <dt>State</dt>
    <dd id="order-state">${stateBadge(order.status)}</dd>
    ${
      order.clientId !== undefined &&
      html`<dt>Saved card</dt>
        <dd id="order-client">Saved for customer <span class="mono">${order.clientId}</span></dd>`
    }
    <dt>Ordered</dt>
    <dd>${shortDate(order.createdAt)} UTC</dd>
  </dl>`;
}

/** What each kind of history event means to the customer. */
const EVENT_LABELS: Readonly<Record<string, string>> = {
  created: 'Order placed',
  paid: 'Payment received',
  failed: 'Payment failed',
  expired: 'Payment session expired',
  authorized: 'Amount reserved on the card',
  captured: 'Reserved amount charged',
  refunded: 'Refunded',
  cancelled: 'Cancelled, reserved funds released',
};

/** Who or what recorded an event: the plugin's outcome sources, the checkout, the shop's staff. */
const SOURCE_LABELS: Readonly<Record<string, string>> = {
  checkout: 'at checkout',
  webhook: 'notified by the payment service',
  return: 'checked when you came back from the payment page',
  reconciliation: "found by the shop's periodic check",
  admin: 'by the shop',
};

/** The order's history, oldest first: one row per event. */
function orderHistory(events: readonly OrderEvent[]): SafeHtml {
  return html`<ol class="history" id="order-history">
    ${events.map(
      (event) =>
        html`<li data-kind="${event.kind}" data-source="${event.source}">
          <time datetime="${event.at.toISOString()}">${shortDate(event.at)} UTC</time>
          <strong>${EVENT_LABELS[event.kind] ?? event.kind}</strong>
          <span class="muted"
            >${SOURCE_LABELS[event.source] ?? event.source}${event.serviceStatus !== undefined && html` (service status ${event.serviceStatus})`}${event.detail !== undefined && html`: ${event.detail}`}</span
          >
        </li>`,
    )}
  </ol>`;
}

/**
 * The order's own page (`/orders/:id`): its state and history as the shop recorded them. It never
 * asks the payment service (the return pages do), so a pending order is shown as pending and the
 * page reloads until it changes.
 */
export function orderStatusPage(
  ctx: PageContext,
  order: Order,
  events: readonly OrderEvent[],
  extras: { duplicates?: readonly OutcomeRecord[]; pay?: { csrfToken: string; attempt: string } } = {},
): string {
  const title = `Order ${order.id}`;
  const duplicates = extras.duplicates ?? [];
  const pay = order.status === 'pending' ? extras.pay : undefined;
  return layout(
    ctx,
    title,
    'none',
    html`<section class="panel narrow" id="order" data-state="${order.status}">
      <h1>${title}</h1>
      <p class="muted">${message(order, undefined).text}</p>
      ${orderDetails(order)}
      <h2>History</h2>
      ${orderHistory(events)} ${duplicates.length > 0 && duplicatesList(duplicates)}
      ${
        pay &&
        html`<form method="post" action="/orders/${order.id}/pay">
          <input type="hidden" name="_csrf" value="${pay.csrfToken}" /><input type="hidden" name="attempt" value="${pay.attempt}" />
          <button type="submit" id="pay-again">Pay now</button>
        </form>`
      }
      <a class="button secondary" href="/">Continue shopping</a>
    </section>`,
    order.status === 'pending' ? PROCESSING_REFRESH_SECS : undefined,
  );
}

/** Second charges of the order (the plugin's `duplicate` records): each is refunded, or to be. */
function duplicatesList(duplicates: readonly OutcomeRecord[]): SafeHtml {
  return html`<h2>Second payments</h2>
    <ul class="history" id="order-duplicates">
      ${duplicates.map(
        (d) =>
          html`<li data-payment="${d.paymentId}" data-refunded="${d.refund ? 'yes' : 'no'}">
            <strong>Payment <span class="mono">${d.paymentId}</span> of ${money(d.amount ?? '0')}</strong>
            <span class="muted"
              >charged after the order was paid${d.settledBy !== undefined && html` (by <span class="mono">${d.settledBy}</span>)`}:
              ${d.refund ? html`refunded (${d.refund.refundId})` : 'to be refunded by the shop'}</span
            >
          </li>`,
      )}
    </ul>`;
}
