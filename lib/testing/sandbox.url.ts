/**
 * The one rule for adding query parameters to a merchant's URL, shared by the redirects back to
 * the shop (docs/service-facts.md §3) and the webhook URLs, plus the conversion of such a URL into a
 * value an HTTP header may carry.
 *
 * Everything works on the string as the merchant sent it, not on a parsed-and-reserialised URL,
 * so the link's own query, encoding and Unicode come back exactly as given.
 */
import { domainToASCII } from 'node:url';

/**
 * How a webhook URL gets the payment id: `'append'` with the same rule as the redirects,
 * `'naive'` with a second `?` even when the URL has a query (as a careless service would),
 * `'none'` not at all (as a dashboard-configured webhook that carries nothing of ours).
 */
export type SandboxPaymentIdInUrl = 'none' | 'append' | 'naive';

/** Query parameters to add, in order, as `[name, value]` pairs (encoded here). */
export type QueryParams = ReadonlyArray<readonly [string, string]>;

function encodeParams(params: QueryParams): string {
  return params.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
}

/**
 * Adds `params` to `url`: `?a=b` when the URL has no query, `&a=b` when it has one (nothing more
 * after a trailing `?` or `&`), before any `#fragment`, which is kept.
 */
export function appendQuery(url: string, params: QueryParams): string {
  if (params.length === 0) return url;
  const hash = url.indexOf('#');
  const base = hash === -1 ? url : url.slice(0, hash);
  const fragment = hash === -1 ? '' : url.slice(hash);
  const separator = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${separator}${encodeParams(params)}${fragment}`;
}

/** Adds `params` after a `?`, whatever the URL already holds: the careless service's bug, on purpose. */
export function naiveAppendQuery(url: string, params: QueryParams): string {
  return params.length === 0 ? url : `${url}?${encodeParams(params)}`;
}

/** Adds `params` the way `mode` says; `'none'` returns the URL unchanged. */
export function addQueryByMode(url: string, params: QueryParams, mode: SandboxPaymentIdInUrl): string {
  if (mode === 'append') return appendQuery(url, params);
  if (mode === 'naive') return naiveAppendQuery(url, params);
  return url;
}

function percentEncodeNonAscii(text: string): string {
  return text.replace(/[^\x00-\x7f]/gu, (char) => {
    try {
      return encodeURIComponent(char);
    } catch {
      // A lone surrogate (possible in JSON input) has no UTF-8 form; a URL parser would write U+FFFD.
      return '%EF%BF%BD';
    }
  });
}

/**
 * The same URL with only ASCII characters, for a `Location` header (Node refuses header values
 * beyond Latin-1, and browsers send non-ASCII URLs this way anyway): a Unicode host becomes its
 * punycode form, every other non-ASCII character is percent-encoded as UTF-8. ASCII is untouched.
 */
export function toAsciiUrl(url: string): string {
  if (/^[\x00-\x7f]*$/.test(url)) return url;
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/s.exec(url);
  if (!match) return percentEncodeNonAscii(url);
  const [, scheme, authority, rest] = match;
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? '' : authority.slice(0, at + 1);
  const hostPort = authority.slice(at + 1);
  const portMatch = /^(.*?)(:[0-9]*)?$/s.exec(hostPort) as RegExpExecArray;
  const host = /^[\x00-\x7f]*$/.test(portMatch[1])
    ? portMatch[1]
    : domainToASCII(portMatch[1]) || percentEncodeNonAscii(portMatch[1]);
  return `${scheme}${percentEncodeNonAscii(userinfo)}${host}${portMatch[2] ?? ''}${percentEncodeNonAscii(rest)}`;
}
