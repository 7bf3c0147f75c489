/**
 * The checkout page behind each payment's `link`, and its Pay / Decline buttons. Plain HTML
 * forms and 303 redirects, so any browser (or a test with `fetch`) can pay without scripts.
 *
 * The redirect back to the shop carries `payment_id` (docs/service-facts.md §3), added with the one
 * rule of `sandbox.url.ts`. A Pay or Decline sent from another site is refused with 403 (a
 * forged form must not settle someone's payment): a browser's `Sec-Fetch-Site` other than
 * `same-origin` / `none`, or (without it) an `Origin` other than the sandbox's own, is refused;
 * a request with neither header (curl, a test's HTTP client) is not a browser's and is accepted.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkoutPage, messagePage } from './sandbox.html.js';
import { redirect303, sendHtml } from './sandbox.http.js';
import { CHECKOUT_PATH, type SandboxState, type Settlement } from './sandbox.state.js';
import type { SandboxPaymentState, SandboxSettlement } from './sandbox.types.js';
import { appendQuery, toAsciiUrl } from './sandbox.url.js';

/** Outcome of paying or declining: the settlement, or why it was refused. */
export type SettleOutcome =
  { ok: true; settlement: SandboxSettlement } | { ok: false; reason: 'unknown' | SandboxPaymentState };

/** What the checkout needs from the sandbox. */
export interface CheckoutContext {
  /** The sandbox's memory. */
  readonly state: SandboxState;
  /** Changes the state, then delivers the webhook; shared with `completePayment` / `failPayment`. */
  readonly settle: (paymentId: string, outcome: Exclude<Settlement, 'expired'>) => Promise<SettleOutcome>;
}

const ROUTE = new RegExp(`^${CHECKOUT_PATH}/([^/]+)(?:/(pay|decline))?$`);

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Whether a browser says this request comes from a page of another origin. `Sec-Fetch-Site` is
 * set by the browser alone, so when present it decides; `Origin` is the fallback for older
 * browsers (a browser may send `Origin: null` under some referrer policies, hence not first).
 */
export function isCrossSite(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  // `Origin: null` (sandboxed frame, opaque redirect) is never our own page.
  return origin !== `http://${req.headers.host ?? ''}`;
}

/** The shop URL a settled payment redirects to, with `payment_id` added (service facts §3). */
export function returnUrl(link: string, paymentId: string): string {
  return appendQuery(link, [['payment_id', paymentId]]);
}

function notFound(res: ServerResponse): void {
  sendHtml(res, 404, messagePage('Payment not found', 'There is no payment at this address.'));
}

/**
 * Answers a request whose path is under the checkout path. Returns false, answering nothing,
 * when the path is not a checkout route.
 */
export async function handleCheckoutRequest(
  ctx: CheckoutContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  const match = ROUTE.exec(url.pathname);
  if (!match) return false;
  const paymentId = decodeSegment(match[1]);
  const action = match[2] as 'pay' | 'decline' | undefined;
  if (paymentId === undefined) {
    notFound(res);
    return true;
  }

  if (!action) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendHtml(res, 405, messagePage('Method not allowed', 'Open this page with GET.'), { Allow: 'GET, HEAD' });
      return true;
    }
    const payment = ctx.state.get(paymentId);
    if (!payment) notFound(res);
    else sendHtml(res, 200, checkoutPage(payment));
    return true;
  }

  if (req.method !== 'POST') {
    sendHtml(res, 405, messagePage('Method not allowed', 'Use the buttons of the checkout page.'), { Allow: 'POST' });
    return true;
  }
  if (isCrossSite(req)) {
    sendHtml(res, 403, messagePage('Forbidden', 'Pay and Decline are accepted from this checkout page only.'));
    return true;
  }
  const outcome = await ctx.settle(paymentId, action === 'pay' ? 'paid' : 'failed');
  if (outcome.ok) {
    const { payment } = outcome.settlement;
    const link = action === 'pay' ? payment.successLink : payment.failLink;
    redirect303(res, link === undefined ? '/' : toAsciiUrl(returnUrl(link, payment.paymentId)));
  } else if (outcome.reason === 'unknown') {
    notFound(res);
  } else {
    // 409: the click came too late (already paid, declined, expired...); the page says why.
    sendHtml(
      res,
      409,
      messagePage('Payment not pending', `This payment is ${outcome.reason}; it can no longer be paid or declined.`),
    );
  }
  return true;
}
