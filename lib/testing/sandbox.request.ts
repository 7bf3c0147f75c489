import type { IncomingMessage } from 'node:http';
import type { SandboxRequest } from './sandbox.types.js';

/*
 * The sandbox's request log: what of a request it keeps (never the private key), and the small
 * URL helpers its server needs.
 */

const API_PREFIX = '/api/v2';

/** Whether a path is the service's API (`/api/v2/...`). */
export function isApiPath(pathname: string): boolean {
  return pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`);
}

/** The host part of a URL for a listening address; wildcards become loopback, which a client can dial. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** The query string as an object; a name repeated maps to an array. */
export function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? values[0] : values;
  }
  return query;
}

/**
 * The `Authorization` value as the request log keeps it: scheme and public key, never what follows
 * the colon (the private key, right or wrong), so a log printed in a failing test leaks nothing.
 */
export function redactAuthorization(value: string): string {
  const prefix = /^\S+ [^:]*:/.exec(value)?.[0];
  return prefix === undefined ? '[redacted]' : `${prefix}[redacted]`;
}

/** The headers as logged: the `Authorization` value without its private part. */
export function loggedHeaders(headers: IncomingMessage['headers']): IncomingMessage['headers'] {
  const copy = { ...headers };
  if (typeof copy.authorization === 'string') copy.authorization = redactAuthorization(copy.authorization);
  return Object.freeze(copy);
}

/** One API request as the log keeps it, frozen. */
export function loggedRequest(req: IncomingMessage, url: URL, body: string, authorization: string): SandboxRequest {
  return Object.freeze({
    method: req.method ?? 'GET',
    path: url.pathname,
    query: Object.freeze(queryOf(url.searchParams)),
    url: req.url ?? '/',
    headers: loggedHeaders(req.headers),
    authorized: req.headers.authorization === authorization,
    body,
  });
}
