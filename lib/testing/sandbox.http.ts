/**
 * Small HTTP helpers of the sandbox server: bounded body reading and answers with an exact
 * status, body and content type (tests assert the wire byte for byte).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PAGE_SECURITY_HEADERS } from './sandbox.html.js';

/** Largest request body the sandbox reads: 1 MiB. Larger bodies get 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** A request body read in full, or the fact that it was too large. */
export type ReadBody = { tooLarge: false; text: string } | { tooLarge: true; text: '' };

/**
 * Reads the whole body as UTF-8. An oversized body is still drained (not kept), so the client
 * gets a clean 413 instead of a broken pipe while it is still sending.
 */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        tooLarge = true;
        chunks.length = 0;
      } else if (!tooLarge) {
        chunks.push(chunk);
      }
    });
    req.on('end', () =>
      resolve(
        tooLarge ? { tooLarge: true, text: '' } : { tooLarge: false, text: Buffer.concat(chunks).toString('utf8') },
      ),
    );
    req.on('error', reject);
  });
}

/** Sends a body with an exact status and content type. */
export function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(body);
}

/** Sends `value` as JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers?: Record<string, string>): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value), headers);
}

/** Sends an HTML page, always with the pages' security headers (CSP, no framing). */
export function sendHtml(res: ServerResponse, status: number, html: string, headers?: Record<string, string>): void {
  send(res, status, 'text/html; charset=utf-8', html, { ...PAGE_SECURITY_HEADERS, ...headers });
}

/** Sends a 303 See Other, the redirect a browser follows with a GET after a form POST. */
export function redirect303(res: ServerResponse, location: string): void {
  send(res, 303, 'text/plain; charset=utf-8', `See Other: ${location}`, { Location: location });
}

/** Whether the request declares a JSON body (`application/json`, parameters allowed). */
export function isJsonContentType(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && type.split(';')[0].trim().toLowerCase() === 'application/json';
}
