import { fromMillimes } from 'nestjs-payments';
import type { OrderStatus } from '../orders/order.model.js';
import { html, type SafeHtml } from './html.util.js';

const STATE_LABELS: Record<OrderStatus, string> = {
  pending: 'Pending',
  paid: 'Paid',
  failed: 'Failed',
  expired: 'Expired',
  authorized: 'Authorized',
  captured: 'Captured',
  refunded: 'Refunded',
  cancelled: 'Cancelled',
};

/** A coloured badge for an order state; `data-state` carries the raw state for tests and scripts. */
export function stateBadge(state: OrderStatus): SafeHtml {
  return html`<span class="badge badge-${state}" data-state="${state}">${STATE_LABELS[state]}</span>`;
}

/** An amount in millimes, shown in dinars: `'12500'` -> `12.500 TND` (exact, no floats). */
export function money(millimes: string): SafeHtml {
  return html`${fromMillimes(millimes)}&nbsp;TND`;
}

/** A date as UTC `YYYY-MM-DD HH:MM` (label the column or field "UTC"): the same on every server. */
export function shortDate(date: Date | string): string {
  const iso = typeof date === 'string' ? date : date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}
