/**
 * HTML of the sandbox's pages. Self-contained (one inline stylesheet, no scripts, no external
 * assets) so they work offline and in a locked-down headless browser; every interpolated value
 * goes through {@link escapeHtml}, since tracking ids and URLs come from the client.
 */
import { createHash } from 'node:crypto';
// The sandbox runs with no package installed (test/testing/sandbox.cli.e2e-spec.ts): a barrel would
// load the HTTP transport and axios, so it takes this dependency-free rule file directly.
// eslint-disable-next-line no-restricted-imports -- see above
import { fromMillimes } from '../core/api/wire.values.js';
import { CHECKOUT_PATH } from './sandbox.state.js';
import type { SandboxPayment, SandboxPaymentState } from './sandbox.types.js';

/** Escapes text for use in HTML element content and double- or single-quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f3f4f6;color:#111827;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{background:#fff;width:100%;max-width:26rem;margin:1.5rem;padding:2rem;border-radius:12px;box-shadow:0 10px 30px rgba(0,0,0,.08)}
h1{font-size:1.25rem;margin:0 0 .25rem}
.merchant{color:#6b7280;font-size:.875rem;margin:0 0 1.5rem}
.amount{font-size:2.25rem;font-weight:700;margin:0 0 1.25rem;font-variant-numeric:tabular-nums}
dl{display:grid;grid-template-columns:auto 1fr;gap:.35rem 1rem;margin:0 0 1.5rem;font-size:.9rem}
dt{color:#6b7280}dd{margin:0;word-break:break-all}
.state{display:inline-block;padding:.05rem .5rem;border-radius:999px;background:#e5e7eb;font-size:.8rem;font-weight:600}
.state-pending{background:#dbeafe;color:#1e40af}.state-paid{background:#dcfce7;color:#166534}
.state-preauthorized,.state-captured{background:#fef3c7;color:#92400e}
.state-failed,.state-expired,.state-cancelled{background:#fee2e2;color:#991b1b}
.actions{display:flex;gap:.75rem}#hold{margin-bottom:1rem}.actions form{flex:1}
button{width:100%;padding:.75rem 1rem;border:0;border-radius:8px;font:inherit;font-weight:600;cursor:pointer}
#pay{background:#16a34a;color:#fff}#pay:hover{background:#15803d}
#decline{background:#e5e7eb;color:#111827}#decline:hover{background:#d1d5db}
.notice{margin:0;padding:.75rem 1rem;border-radius:8px;background:#f9fafb;border:1px solid #e5e7eb}
footer{margin-top:1.5rem;color:#9ca3af;font-size:.75rem}
ul{padding-left:1.25rem}a{color:#1d4ed8}
`;

/**
 * Headers of every sandbox page. A checkout page is where a customer confirms a payment, so it
 * must not be framed (clickjacking): `frame-ancestors 'none'` and, for old browsers,
 * `X-Frame-Options: DENY`. The CSP allows nothing but the page's own stylesheet (by hash, so no
 * `'unsafe-inline'`) and the empty `data:` favicon; no script at all. `form-action` is left out
 * on purpose: Chromium applies it to the redirect after Pay, which goes to the shop's origin.
 */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': [
    "default-src 'none'",
    `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
    'img-src data:',
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // Not `no-referrer`: under it a browser sends `Origin: null` with the page's own Pay form.
  'Referrer-Policy': 'same-origin',
});

/** A whole page around `content` (already HTML). */
export function layout(title: string, content: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
${content}
<footer>nestjs-payments sandbox: a test emulator, no real money moves.</footer>
</main>
</body>
</html>
`;
}

/** A page with a heading and one line of text. */
export function messagePage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p class="notice">${escapeHtml(message)}</p>`);
}

const STATE_NOTICES: Record<SandboxPaymentState, string> = {
  pending: 'Waiting for payment.',
  paid: 'This payment has been paid.',
  failed: 'This payment was declined.',
  expired: 'This payment session has expired.',
  refunded: 'This payment has been paid and refunded.',
  preauthorized:
    'The amount is held on the card (pre-authorized); the merchant will capture or release it. There is nothing to pay here.',
  captured: 'This pre-authorized payment has been captured.',
  cancelled: 'This pre-authorized payment has been cancelled; the held amount was released.',
};

/** Path of the checkout page of a payment (the `link` without the origin). */
export function checkoutPath(paymentId: string): string {
  return `${CHECKOUT_PATH}/${encodeURIComponent(paymentId)}`;
}

/** The checkout page: amount, tracking id, state, and Pay / Decline while the payment is pending. */
export function checkoutPage(payment: SandboxPayment): string {
  const rows: Array<[string, string]> = [['Payment', payment.paymentId]];
  if (payment.developerTrackingId !== undefined) rows.push(['Tracking id', payment.developerTrackingId]);
  if (payment.kind === 'preauthorized') rows.push(['Type', 'Pre-authorization (amount held, captured later)']);
  rows.push(['Cards accepted', payment.acceptCard ? 'yes' : 'no']);
  if (payment.state === 'pending' && payment.expiresAt) rows.push(['Expires at', payment.expiresAt]);
  const details = rows.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join('\n');
  const state = escapeHtml(payment.state);
  const base = escapeHtml(checkoutPath(payment.paymentId));
  const hold =
    payment.kind === 'preauthorized'
      ? `<p class="notice" id="hold">Paying holds ${escapeHtml(fromMillimes(payment.amount))} TND on your card: the merchant captures it later, in full or in part, or releases it.</p>\n`
      : '';
  const actions =
    payment.state === 'pending'
      ? `${hold}<div class="actions">
<form method="post" action="${base}/pay"><button type="submit" id="pay">Pay</button></form>
<form method="post" action="${base}/decline"><button type="submit" id="decline">Decline</button></form>
</div>`
      : `<p class="notice" id="notice">${escapeHtml(STATE_NOTICES[payment.state])}</p>`;
  return layout(
    'Sandbox checkout',
    `<h1>Sandbox checkout</h1>
<p class="merchant">sandbox-merchant</p>
<p class="amount" id="amount">${escapeHtml(fromMillimes(payment.amount))} TND</p>
<dl>
${details}
<dt>State</dt><dd><span class="state state-${state}" id="state">${state}</span></dd>
</dl>
${actions}`,
  );
}

/** The landing page at `/`: where the API is, and the payments made so far. */
export function indexPage(url: string, payments: readonly SandboxPayment[]): string {
  const items = payments
    .map((p) => {
      const label = `${p.paymentId}: ${fromMillimes(p.amount)} TND, ${p.state}`;
      return p.link
        ? `<li><a href="${escapeHtml(checkoutPath(p.paymentId))}">${escapeHtml(label)}</a></li>`
        : `<li>${escapeHtml(label)}</li>`;
    })
    .join('\n');
  return layout(
    'Payments sandbox',
    `<h1>Payments sandbox</h1>
<p>API base URL: <code>${escapeHtml(url)}</code> (paths under <code>/api/v2/</code>).</p>
${payments.length ? `<ul>\n${items}\n</ul>` : '<p class="notice">No payments yet.</p>'}`,
  );
}
