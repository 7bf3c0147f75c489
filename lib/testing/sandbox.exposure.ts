/**
 * Who can reach the sandbox and where it may send webhooks. The sandbox is a free "pay" button:
 * reachable from elsewhere with its published default keys, anyone could create a payment whose
 * webhook is any URL and pay it, making the sandbox a relay. So it refuses to listen beyond
 * loopback with the default private key, warns whenever it listens beyond loopback, and sends
 * webhooks only to loopback hosts unless `webhookAllowedHosts` names more.
 */
import { isIP } from 'node:net';

/** Whether `host` (a listen address or a URL's hostname, brackets allowed) can only be reached from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(h) || /^::ffff:127\./.test(h);
  return false;
}

/** What listening on an address implies: start, start with a warning, or refuse. */
export type ListenDecision =
  { kind: 'loopback' } | { kind: 'exposed'; warning: string } | { kind: 'refused'; error: string };

/**
 * The decision for listening on `host` with or without the sandbox's published default private key.
 * A wildcard (`0.0.0.0`, `::`) or a named host counts as beyond loopback.
 */
export function listenDecision(host: string, defaultPrivateKey: boolean): ListenDecision {
  if (isLoopbackHost(host)) return { kind: 'loopback' };
  if (defaultPrivateKey) {
    return {
      kind: 'refused',
      error:
        `PaymentsSandbox: refusing to listen on ${host} (beyond loopback) with the published default private key: ` +
        'anyone who reaches it could create and pay payments. Set the privateKey option (CLI: --private-key) to a key of your own, or listen on 127.0.0.1',
    };
  }
  return {
    kind: 'exposed',
    warning:
      `PaymentsSandbox: WARNING: listening on ${host}, reachable from other machines: whoever reaches it with the keys can create and pay payments. ` +
      'Webhooks go only to loopback hosts and those of the webhookAllowedHosts option (CLI: --webhook-allow-host).',
  };
}

/**
 * Whether a webhook may be sent to `url`: a loopback host always; another host only when
 * `allowedHosts` names it (case-insensitive hostname, without port) or holds `'*'`.
 */
export function webhookHostAllowed(url: string, allowedHosts: readonly string[]): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return false;
  }
  if (isLoopbackHost(hostname)) return true;
  const h = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return allowedHosts.some(
    (allowed) =>
      allowed === '*' ||
      allowed
        .trim()
        .toLowerCase()
        .replace(/^\[(.*)\]$/, '$1') === h,
  );
}

/**
 * A webhook URL for a log line: its origin and path with the last path segment (where the plugin
 * puts its token) replaced by `…`, and no query (which may carry one too).
 */
export function urlWithoutToken(url: string): string {
  try {
    const u = new URL(url);
    const segments = u.pathname.split('/');
    if (segments.length > 1 && segments[segments.length - 1] !== '') segments[segments.length - 1] = '…';
    return `${u.origin}${segments.join('/')}`;
  } catch {
    return '(invalid URL)';
  }
}

/** The allowed-hosts option, checked: a list of non-empty strings (TypeError naming it otherwise). */
export function allowedHostsOf(value: readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  const list: unknown = value;
  if (!Array.isArray(list) || !list.every((h): h is string => typeof h === 'string' && h.trim() !== '')) {
    throw new TypeError('PaymentsSandbox: webhookAllowedHosts must be a list of host names');
  }
  return Object.freeze([...list]);
}
