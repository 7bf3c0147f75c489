import type { ReturnCheck } from '../orders/orders.controller.js';
import { orderTitle, type Order } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';
import { money, shortDate, stateBadge } from './parts.view.js';

/** Which return page the customer came back to. */
export type ReturnPage = 'success' | 'failed';

/** Seconds between reloads while the payment is still being processed. */
export const PROCESSING_REFRESH_SECS = 3;

/** Heading and text by verified state: what the customer needs to know, whatever page they landed on. */
function message(order: Order, check: ReturnCheck | undefined): { title: string; text: string } {
  switch (order.status) {
    case 'paid':
      return { title: 'Thank you, your order is paid', text: 'We have received your payment and are preparing your order.' };
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
  const details: SafeHtml = html`<dl>
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
  // Reload only while there is something to wait for: not after a mismatch, which needs a person.
  const waiting = order.status === 'pending' && check?.outcome !== 'mismatch';
  return layout(
    ctx,
    title,
    'none',
    html`<section class="panel narrow" id="order" data-outcome="${check?.outcome ?? ''}">
      <h1>${title}</h1>
      <p class="muted">${text}</p>
      ${details}
      <a class="button${order.status === 'paid' ? ' secondary' : ''}" href="/">Continue shopping</a>
    </section>`,
    waiting ? PROCESSING_REFRESH_SECS : undefined,
  );
}
