import http from 'node:http';
import type { AddressInfo } from 'node:net';
// The sandbox's check is the service-side rule (what the URL parser takes), written apart from
// the plugin's stricter class-validator one.
import { isParsableHttpUrl } from '../../lib/testing/sandbox.validation.js';

/** One request that reached the wire-checking server. */
export interface WireRequest {
  method: string;
  path: string;
  query: Array<[string, string]>;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: unknown;
}

// The request fields of generate_payment, the interface's and the public pages' (docs/service-facts.md §4),
// written out here as the service's side of the contract (not read from the client's table).
const GENERATE_KEYS = new Set([
  'amount',
  'success_link',
  'fail_link',
  'webhook',
  'developer_tracking_id',
  'session_timeout_secs',
  'accept_card',
  'image_url',
  'pre_authorization',
  'client_id',
  'destination',
]);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown) => typeof v === 'string' && /\S/.test(v);

/**
 * A loopback stand-in for the service that checks every request against the spec's wire rules
 * and records each violation. It answers success (echoing what it got) to valid requests and
 * 400 to invalid ones.
 */
export class WireCheckingServer {
  readonly requests: WireRequest[] = [];
  readonly violations: string[] = [];
  private readonly server: http.Server;
  private count = 0;

  private constructor(private readonly authorization: string) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    this.server.keepAliveTimeout = 30_000;
  }

  static async start(authorization: string): Promise<WireCheckingServer> {
    const s = new WireCheckingServer(authorization);
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    return s;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, rawBody: string, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://wire.invalid');
    let body: unknown;
    const problems: string[] = [];
    const problem = (p: string) => problems.push(`${req.method} ${url.pathname}: ${p}`);
    if (req.headers.authorization !== this.authorization) problem('wrong Authorization');
    if (rawBody !== '') {
      try {
        body = JSON.parse(rawBody);
      } catch {
        problem('body is not JSON');
      }
    }
    const request: WireRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: [...url.searchParams],
      headers: req.headers,
      rawBody,
      body,
    };
    this.requests.push(request);

    const isPost = url.pathname !== '/api/v2/bindings/list';
    if (isPost) {
      if (req.method !== 'POST') problem(`method ${req.method}`);
      if (req.headers['content-type'] !== 'application/json') problem(`content-type ${req.headers['content-type']}`);
      if (request.query.length > 0) problem('a POST with a query string');
      if (!isPlainObject(body)) problem('body is not a JSON object');
    }
    const b = isPlainObject(body) ? body : {};
    for (const [key, value] of Object.entries(b)) if (value === null) problem(`null value for ${key}`);
    let answer: unknown;
    switch (url.pathname) {
      case '/api/v2/generate_payment': {
        for (const key of Object.keys(b))
          if (!GENERATE_KEYS.has(key)) problem(`key not in the spec: ${JSON.stringify(key)}`);
        if (typeof b.amount !== 'string' || !/^[1-9][0-9]*$/.test(b.amount))
          problem(`amount ${JSON.stringify(b.amount)?.slice(0, 40)}`);
        for (const key of ['success_link', 'fail_link'])
          if (!isParsableHttpUrl(b[key])) problem(`${key} not an absolute http(s) URL`);
        for (const key of ['webhook', 'image_url'])
          if (key in b && !isParsableHttpUrl(b[key])) problem(`${key} not an absolute http(s) URL`);
        if (
          'session_timeout_secs' in b &&
          !(Number.isSafeInteger(b.session_timeout_secs) && (b.session_timeout_secs as number) > 0)
        )
          problem('session_timeout_secs');
        if ('accept_card' in b && typeof b.accept_card !== 'boolean') problem('accept_card');
        if (
          'developer_tracking_id' in b &&
          !(typeof b.developer_tracking_id === 'string' && b.developer_tracking_id !== '')
        )
          problem('developer_tracking_id');
        if ('pre_authorization' in b && typeof b.pre_authorization !== 'boolean') problem('pre_authorization');
        if ('client_id' in b && !isId(b.client_id)) problem('client_id');
        if ('destination' in b) {
          const parts = b.destination;
          const valid =
            Array.isArray(parts) &&
            parts.length > 0 &&
            parts.every(
              (p) =>
                isPlainObject(p) &&
                Object.keys(p).sort().join() === 'amount,destination' &&
                Number.isSafeInteger(p.amount) &&
                (p.amount as number) > 0 &&
                isId(p.destination),
            );
          if (!valid) problem(`destination ${JSON.stringify(parts)?.slice(0, 60)}`);
          else if (
            typeof b.amount === 'string' &&
            parts.reduce((sum: bigint, p) => sum + BigInt(p.amount as number), 0n) > BigInt(b.amount)
          )
            problem('destination adds up to more than amount');
        }
        const id = `pay_${++this.count}`;
        answer = {
          result: {
            success: true,
            payment_id: id,
            link: `https://checkout.example/shop/${id}`,
            ...('developer_tracking_id' in b ? { developer_tracking_id: b.developer_tracking_id } : {}),
          },
          name: 'Payment Service',
          code: 0,
          version: 'v2',
        };
        break;
      }
      case '/api/v2/refund_payment':
      case '/api/v2/cancel_payment': {
        if (Object.keys(b).join() !== 'payment_id' || !isId(b.payment_id)) problem(`body ${rawBody.slice(0, 60)}`);
        answer = url.pathname.endsWith('refund_payment')
          ? {
              result: {
                refund_id: 'ref_1',
                payment_id: b.payment_id,
                amount: '100',
                status: 'success',
                refunded_at: '2026-01-01T00:00:00Z',
              },
              status: 'success',
            }
          : {
              result: { payment_id: b.payment_id, status: 'cancelled', cancelled_at: '2026-01-01T00:00:00Z' },
              status: 'success',
            };
        break;
      }
      case '/api/v2/bindings/list': {
        if (req.method !== 'GET') problem(`method ${req.method}`);
        if (rawBody !== '') problem('a GET with a body');
        if (request.query.length !== 1 || request.query[0][0] !== 'client_id' || !isId(request.query[0][1]))
          problem(`query ${url.search.slice(0, 60)}`);
        const clientId = request.query[0]?.[1];
        answer = {
          result: {
            success: true,
            bindings: [
              {
                binding_id: 'b-1',
                client_id: clientId,
                card_last_four: '4242',
                card_brand: 'VISA',
                status: 'active',
                created_at: '2026-01-01T00:00:00Z',
              },
            ],
          },
          status: 'success',
        };
        break;
      }
      default:
        problem('unknown path');
    }
    this.violations.push(...problems);
    const text = JSON.stringify(problems.length > 0 ? { result: { status: 400, message: 'Bad Request' } } : answer);
    res.writeHead(problems.length > 0 ? 400 : 200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }
}
