import type { Order } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';
import { money, shortDate, stateBadge } from './parts.view.js';

/** Which return page the customer came back to. */
export type ReturnPage = 'success' | 'failed';

/** Heading and text by state: what the customer needs to know, whatever page they landed on. */
function message(order: Order, page: ReturnPage): { title: string; text: string } {
  switch (order.state) {
    case 'paid':
      return { title: 'Thank you, your order is paid', text: 'We have received your payment and are preparing your order.' };
    case 'refunded':
      return { title: 'This order was refunded', text: 'The payment has been returned to you.' };
    case 'failed':
      return { title: 'Payment failed', text: 'The payment was declined or did not go through. You have not been charged.' };
    case 'cancelled':
      return { title: 'This order was cancelled', text: 'The reserved funds have been released.' };
    case 'preauthorized':
      return { title: 'Payment reserved', text: 'The amount is reserved on your card and will be captured when we ship.' };
    case 'pending':
      return page === 'success'
        ? { title: 'Confirming your payment…', text: 'We are waiting for the payment service to confirm it. This page refreshes by itself.' }
        : { title: 'Payment not completed', text: 'Your payment did not go through. You have not been charged; you can try again from the catalog.' };
  }
}

/** The page the payment service sends the customer back to (`/orders/:id/success` or `/failed`). */
export function orderPage(ctx: PageContext, order: Order, page: ReturnPage): string {
  const { title, text } = message(order, page);
  const details: SafeHtml = html`<dl>
<dt>Order</dt><dd class="mono" id="order-id">${order.id}</dd>
<dt>Product</dt><dd>${order.productName}</dd>
<dt>Amount</dt><dd id="order-amount">${money(order.amount)}</dd>
<dt>State</dt><dd id="order-state">${stateBadge(order.state)}</dd>
<dt>Ordered</dt><dd>${shortDate(order.createdAt)} UTC</dd>
</dl>`;
  // Refresh only while waiting on the confirmation, and only on the success page: after a
  // failure there is nothing to wait for.
  const waiting = order.state === 'pending' && page === 'success';
  return layout(
    ctx,
    title,
    'none',
    html`<section class="panel narrow" id="order">
<h1>${title}</h1>
<p class="muted">${text}</p>
${details}
<a class="button${order.state === 'paid' ? ' secondary' : ''}" href="/">Continue shopping</a>
</section>`,
    waiting ? 2 : undefined,
  );
}
