/**
 * Helpers of the sandbox tests: a raw HTTP client (node:http, one socket per request, so no
 * pooled connection outlives a test and every header on the wire is ours) and a loopback
 * webhook receiver.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentsSandbox } from '../../lib/testing/index.js';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** One HTTP request on its own socket; rejects with the socket error (e.g. ECONNRESET). */
export function rawRequest(url: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(options.body));
    const req = http.request(url, { method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The Authorization header the sandbox accepts. */
export function authHeader(sandbox: PaymentsSandbox): string {
  return `Bearer ${sandbox.publicKey}:${sandbox.privateKey}`;
}

/** An authenticated JSON POST to the sandbox API. */
export function postJson(
  sandbox: PaymentsSandbox,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest(sandbox.url + path, {
    method: 'POST',
    headers: { Authorization: authHeader(sandbox), 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** An authenticated GET on the sandbox API. */
export function getApi(
  sandbox: PaymentsSandbox,
  pathAndQuery: string,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest(sandbox.url + pathAndQuery, { headers: { Authorization: authHeader(sandbox), ...headers } });
}

/** Creates a payment through the API and returns the parsed `result`. */
export async function generate(
  sandbox: PaymentsSandbox,
  fields: Record<string, unknown> = {},
): Promise<{ payment_id: string; link: string; developer_tracking_id?: string }> {
  const res = await postJson(sandbox, '/api/v2/generate_payment', {
    amount: '12500',
    success_link: 'https://shop.example/ok',
    fail_link: 'https://shop.example/ko',
    ...fields,
  });
  if (res.status !== 200) throw new Error(`generate_payment answered ${res.status}: ${res.text}`);
  return JSON.parse(res.text).result;
}

export interface ReceivedWebhook {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP server recording what it receives; answers the queued statuses, then 200. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  /** Statuses of the next answers, in order; 'hang' never answers. */
  readonly script: Array<number | 'hang'> = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const next = this.script.shift() ?? 200;
      if (next === 'hang') return;
      res.writeHead(next, { 'Content-Type': 'text/plain' });
      res.end('ok');
    });
  });

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** A loopback port with nothing listening on it (listened on, then closed). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** ISO 8601 UTC with milliseconds, as `Date.prototype.toISOString` writes it. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** `GET /api/v2/verify_payment/{id}` with the sandbox's credentials; the body parsed when JSON. */
export async function verify(sandbox: PaymentsSandbox, paymentId: string): Promise<RawResponse & { json: any }> {
  const res = await getApi(sandbox, `/api/v2/verify_payment/${encodeURIComponent(paymentId)}`);
  let json: unknown;
  try {
    json = JSON.parse(res.text);
  } catch {
    json = undefined;
  }
  return { ...res, json };
}

/** Clicks Pay or Decline on a checkout link, as a form POST (no Origin: a non-browser client). */
export function click(
  link: string,
  action: 'pay' | 'decline',
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest(`${link}/${action}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: '',
  });
}
