import { html, SafeHtml } from './html.util.js';

/** Name shown in the header and the page titles. */
export const SHOP_NAME = 'Medina Roasters';

/** What every page needs to know about the running shop. */
export interface PageContext {
  /** Payments go to the built-in sandbox: every page says so. */
  readonly sandboxMode: boolean;
}

/** Which navigation link is the current page. */
export type NavItem = 'catalog' | 'admin' | 'none';

/** Extra header content: the admin's sign-out form, when signed in. */
export interface LayoutExtras {
  /** Markup added at the end of the navigation. */
  readonly nav?: SafeHtml;
}

// One stylesheet for the whole shop, inline: the pages load no external assets.
const STYLE = `
*{box-sizing:border-box}
:root{--ink:#1f2937;--muted:#6b7280;--line:#e7e2dc;--bg:#f7f4f0;--brand:#7c4a2d;--brand-dark:#5e3720;--card:#fff}
body{margin:0;background:var(--bg);color:var(--ink);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
a{color:var(--brand)}
.top{background:var(--card);border-bottom:1px solid var(--line)}
.bar{max-width:72rem;margin:0 auto;padding:.85rem 1.25rem;display:flex;align-items:center;gap:1.5rem}
.brand{font-weight:800;font-size:1.2rem;color:var(--brand);text-decoration:none;letter-spacing:-.01em}
.brand span{display:inline-block;width:1.6rem;height:1.6rem;margin-right:.5rem;vertical-align:-.35rem;border-radius:50%;background:linear-gradient(135deg,#a0522d,#5e3720)}
nav{margin-left:auto;display:flex;gap:.25rem}
nav a{color:var(--ink);text-decoration:none;padding:.4rem .75rem;border-radius:8px;font-weight:500}
nav a:hover{background:#f3ede8}
nav a[aria-current]{background:#f3ede8;color:var(--brand)}
nav form{display:inline}nav form button{background:none;color:var(--muted);font-weight:500;padding:.4rem .75rem}nav form button:hover{background:#f3ede8}
.testmode{background:#fef3c7;color:#92400e;border-bottom:1px solid #fde68a;text-align:center;font-size:.85rem;padding:.4rem 1rem}
main{max-width:72rem;margin:0 auto;padding:2rem 1.25rem 3rem}
h1{font-size:1.65rem;line-height:1.25;margin:0 0 .35rem;letter-spacing:-.01em}
h2{font-size:1.15rem;margin:0 0 .75rem}
.lead{color:var(--muted);margin:0 0 1.75rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(14.5rem,1fr));gap:1.25rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:14px;overflow:hidden;display:flex;flex-direction:column;box-shadow:0 1px 2px rgba(0,0,0,.04)}
.picture{height:8.5rem;display:flex;align-items:center;justify-content:center;color:rgba(255,255,255,.92);font-size:2.4rem;font-weight:800;letter-spacing:.05em}
.card-body{padding:1rem 1.1rem 1.1rem;display:flex;flex-direction:column;gap:.4rem;flex:1}
.card-body h2{margin:0;font-size:1.05rem}
.card-body p{margin:0;color:var(--muted);font-size:.9rem;flex:1}
.price{font-size:1.3rem;font-weight:700;font-variant-numeric:tabular-nums;margin:.35rem 0 .5rem}
.price small{font-size:.8rem;color:var(--muted);font-weight:600;margin-left:.2rem}
button,.button{display:inline-block;border:0;border-radius:8px;padding:.6rem 1rem;font:inherit;font-weight:600;cursor:pointer;text-decoration:none;text-align:center;background:var(--brand);color:#fff}
button:hover,.button:hover{background:var(--brand-dark)}
button.small{padding:.3rem .7rem;font-size:.85rem}
button.danger{background:#b91c1c}button.danger:hover{background:#991b1b}
button.secondary,.button.secondary{background:#ece7e1;color:var(--ink)}button.secondary:hover,.button.secondary:hover{background:#ddd5cc}
.card form button{width:100%}
.panel{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:1.25rem 1.4rem;margin:0 0 1.5rem;box-shadow:0 1px 2px rgba(0,0,0,.04)}
.panel.narrow{max-width:34rem}
.panel p{margin:.25rem 0 1rem}
.muted{color:var(--muted)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.45rem 1.25rem;margin:1rem 0 1.25rem}
dt{color:var(--muted)}dd{margin:0;word-break:break-all}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:14px;background:var(--card);margin:0 0 1.5rem}
table{width:100%;border-collapse:collapse}
th,td{padding:.65rem .75rem;text-align:left;border-bottom:1px solid var(--line);font-size:.9rem;vertical-align:middle;white-space:nowrap}
th{background:#faf8f5;color:var(--muted);font-weight:600;font-size:.75rem;text-transform:uppercase;letter-spacing:.05em}
tr:last-child td{border-bottom:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}th.num{text-align:right}
td form{display:inline}
td.action{text-align:right}th.action{text-align:right}
#orders th,#orders td{padding:.6rem .55rem;white-space:normal}
#orders td.num{white-space:nowrap}
#orders td.mono{word-break:break-all;font-size:.74rem;min-width:6rem}
#orders td.action{min-width:9rem}
#orders td.action form{display:inline-flex;gap:.3rem;margin:.15rem 0}
#orders input.amount{width:4.5rem}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.82rem}
.badge{display:inline-block;padding:.12rem .6rem;border-radius:999px;font-size:.72rem;font-weight:700;letter-spacing:.05em;text-transform:uppercase;background:#e5e7eb;color:#374151}
.badge-pending{background:#dbeafe;color:#1e40af}
.badge-paid,.badge-active{background:#dcfce7;color:#166534}
.badge-failed{background:#fee2e2;color:#991b1b}
.badge-refunded{background:#ede9fe;color:#5b21b6}
.badge-authorized{background:#fef3c7;color:#92400e}
.badge-captured{background:#dcfce7;color:#166534}
.badge-expired{background:#f3f4f6;color:#6b7280}
.badge-cancelled{background:#e5e7eb;color:#374151}
.flash{padding:.8rem 1rem;border-radius:10px;margin:0 0 1.5rem;border:1px solid}
.flash-success{background:#f0fdf4;border-color:#bbf7d0;color:#166534}
.flash-error{background:#fef2f2;border-color:#fecaca;color:#991b1b}
.inline-form{display:flex;gap:.6rem;flex-wrap:wrap;align-items:center}
.check{display:flex;gap:.4rem;align-items:center;font-weight:500;font-size:.85rem;color:var(--muted);margin:0 0 .5rem}
.check input{min-width:0}
input.amount{min-width:0;width:6.5rem;padding:.3rem .5rem;font-size:.85rem}
.tag{display:inline-block;font-size:.72rem;font-weight:700;color:#92400e;background:#fef3c7;border-radius:6px;padding:.05rem .45rem;margin-left:.3rem;vertical-align:.1rem}
input,select{font:inherit;padding:.55rem .7rem;border:1px solid #d6cfc7;border-radius:8px;background:#fff;min-width:14rem}
label{font-weight:600;font-size:.9rem}
.empty{color:var(--muted);padding:1.25rem;text-align:center}
.result{margin-top:1rem}
.panel .result{margin-bottom:0}
footer{max-width:72rem;margin:0 auto;padding:0 1.25rem 2rem;color:var(--muted);font-size:.8rem}
`;
// A constant of this file, not data: the one place markup is trusted without escaping.
const STYLESHEET = new SafeHtml(STYLE);

/**
 * The shared page: header with the shop's name and navigation, a test-mode banner in sandbox
 * mode, then `content`.
 *
 * @param refreshSecs reload the page after this many seconds (the success page waiting for its confirmation)
 */
export function layout(
  ctx: PageContext,
  title: string,
  current: NavItem,
  content: SafeHtml,
  refreshSecs?: number,
  extras: LayoutExtras = {},
): string {
  const link = (href: string, item: NavItem, label: string) =>
    html`<a href="${href}" ${current === item ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${refreshSecs !== undefined && html`<meta http-equiv="refresh" content="${refreshSecs}" />`}
        <title>${title} · ${SHOP_NAME}</title>
        <link rel="icon" href="data:," />
        <style>
          ${STYLESHEET}
        </style>
      </head>
      <body>
        <header class="top">
          <div class="bar">
            <a class="brand" href="/"><span></span>${SHOP_NAME}</a>
            <nav>${link('/', 'catalog', 'Catalog')}${link('/admin', 'admin', 'Admin')}${extras.nav}</nav>
          </div>
          ${ctx.sandboxMode && html`<div class="testmode" id="test-mode">Test mode: payments go to the built-in sandbox. No real money moves.</div>`}
        </header>
        <main>${content}</main>
        <footer>A sample shop built with nestjs-payments. Prices in Tunisian dinars (TND).</footer>
      </body>
    </html> `.value;
}
