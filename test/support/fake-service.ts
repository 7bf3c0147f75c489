import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake service received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** What the fake answers: a status and a body (object -> JSON), or a behaviour. */
export type FakeReply =
  { status: number; body?: unknown; headers?: Record<string, string> } | { hang: true } | { destroy: true };

/**
 * A real HTTP server on 127.0.0.1:0 standing in for the service: it records every request
 * exactly as it arrived and answers with replies queued per path (or a default per path).
 */
export class FakeService {
  readonly requests: RecordedRequest[] = [];
  private readonly queued = new Map<string, FakeReply[]>();
  private readonly defaults = new Map<string, FakeReply>();
  private readonly server: http.Server;
  private readonly hung = new Set<http.ServerResponse>();

  private constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://fake');
        this.requests.push({
          method: req.method ?? '',
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const reply = this.queued.get(url.pathname)?.shift() ??
          this.defaults.get(url.pathname) ?? { status: 404, body: { result: { status: 404, message: 'Not Found' } } };
        if ('hang' in reply) {
          this.hung.add(res);
          return;
        }
        if ('destroy' in reply) {
          req.socket.destroy();
          return;
        }
        const text =
          typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body);
        res.writeHead(reply.status, {
          'content-type': typeof reply.body === 'string' ? 'text/html' : 'application/json',
          ...reply.headers,
        });
        res.end(text);
      });
    });
  }

  /** Starts a fake on a free loopback port. */
  static async start(): Promise<FakeService> {
    const fake = new FakeService();
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  /** Base URL to use as the plugin's `baseUrl`. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Answers the next request to `path` with `reply` (queued replies are used in order). */
  reply(path: string, ...replies: FakeReply[]): this {
    this.queued.set(path, [...(this.queued.get(path) ?? []), ...replies]);
    return this;
  }

  /** Answers every request to `path` with `reply` once the queue is empty. */
  always(path: string, reply: FakeReply): this {
    this.defaults.set(path, reply);
    return this;
  }

  /** Forgets queued replies, defaults and recorded requests. */
  reset(): void {
    this.queued.clear();
    this.defaults.clear();
    this.requests.length = 0;
  }

  /** Closes the server and every connection (hung ones included). */
  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Successful answers of the four endpoints, as the spec shows them. */
export const OK = {
  generate: (paymentId = 'pay_1', extra: Record<string, unknown> = {}) => ({
    status: 200,
    body: {
      result: {
        success: true,
        payment_id: paymentId,
        link: `https://checkout.example/merchant/${paymentId}`,
        ...extra,
      },
      name: 'Payment Service',
      code: 0,
      version: 'v2',
    },
  }),
  refund: (paymentId = 'pay_1') => ({
    status: 200,
    body: {
      result: {
        refund_id: 'ref_1',
        payment_id: paymentId,
        amount: '12500',
        status: 'success',
        refunded_at: '2026-11-22T10:00:00Z',
      },
      status: 'success',
    },
  }),
  cancel: (paymentId = 'pay_1') => ({
    status: 200,
    body: {
      result: { payment_id: paymentId, status: 'cancelled', cancelled_at: '2026-11-22T10:00:00Z' },
      status: 'success',
    },
  }),
  bindings: (clientId = 'client-1') => ({
    status: 200,
    body: {
      result: {
        success: true,
        bindings: [
          {
            binding_id: '6f1c2b1e-8f3a-4c55-9d7e-2b8a1f0c9e11',
            client_id: clientId,
            card_last_four: '4242',
            card_brand: 'VISA',
            status: 'active',
            created_at: '2026-11-01T08:00:00Z',
          },
        ],
      },
      status: 'success',
    },
  }),
};

/** The paths of the service. */
export const PATHS = {
  generate: '/api/v2/generate_payment',
  refund: '/api/v2/refund_payment',
  cancel: '/api/v2/cancel_payment',
  bindings: '/api/v2/bindings/list',
} as const;
