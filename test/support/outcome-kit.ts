import express from 'express';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsLogger } from '../../lib/core/common/payments.logger.js';
import type { PaymentsStore, RateLimiter } from '../../lib/core/store/store.ports.js';
import { BasicPaymentsStore } from '../../lib/core/store/store.base.js';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentsOptions,
  type WebhookRouterOptions,
} from '../../lib/express/index.js';
import type { FakeService } from './fake-service.js';
import { verifyAnswer, verifyPath } from './verify-answers.js';

// Helpers for the outcome tests (webhook -> verify -> handlers). Owned by the outcome tests;
// fake-service.ts stays as it is.

/** A logger that drops everything (or keeps it in `lines`). */
export function quietLogger(lines?: string[]): PaymentsLogger {
  const keep = (m: string) => void lines?.push(m);
  return { log: keep, warn: keep, error: keep };
}

/**
 * A client of `fake` as the outcome tests use it: no retries (each verify answer is used once),
 * reconciliation off (the tests run passes by hand), a quiet logger, its own memory store, the
 * webhook at https://shop.example/hook signed with `secret`. `overrides` replace whole options.
 */
export function fakeServiceClient(
  fake: FakeService,
  secret: string | undefined,
  overrides: Partial<PaymentsOptions> = {},
): PaymentsClient {
  return createPaymentsClient({
    publicKey: 'pk_outcomes',
    privateKey: 'sk_outcomes_private',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    maxRetries: 0,
    webhook: { publicUrl: 'https://shop.example/hook', secret },
    reconciliation: { enabled: false },
    logger: quietLogger(),
    store: new MemoryPaymentsStore(),
    ...overrides,
  });
}

/** The webhook URL the last generate_payment request to `fake` carried. */
export function lastWebhookUrl(fake: FakeService): string {
  const generate = fake.requests.filter((r) => r.path === '/api/v2/generate_payment').at(-1);
  if (!generate) throw new Error('no generate_payment request reached the fake');
  return JSON.parse(generate.body).webhook as string;
}

/** The plugin's token: the last path segment of a webhook URL. */
export function tokenOf(webhookUrl: string): string {
  const token = new URL(webhookUrl).pathname.split('/').at(-1);
  if (!token) throw new Error(`no token in ${webhookUrl}`);
  return token;
}

/** Queues verify answers for a payment (200, the documented shape). */
export function answerVerify(
  fake: FakeService,
  paymentId: string,
  ...answers: Array<{ status: string; amount?: number; trackingId?: string }>
): void {
  fake.reply(verifyPath(paymentId), ...answers.map((a) => ({ status: 200, body: verifyAnswer(a) })));
}

/** Verify calls the fake received for a payment. */
export function verifyCount(fake: FakeService, paymentId: string): number {
  const path = verifyPath(paymentId);
  return fake.requests.filter((r) => r.path === path).length;
}

/** A running Express app with the webhook router mounted at `/hook`. */
export interface RunningRouter {
  server: Server;
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  close(): Promise<void>;
}

/** Starts an Express app with `createWebhookRouter(options)` at `/hook` on a free loopback port. */
export async function startRouter(options: WebhookRouterOptions): Promise<RunningRouter> {
  const app = express();
  app.use('/hook', createWebhookRouter(options));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    server,
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** POSTs a JSON body to a URL; resolves with the status and parsed body. */
export async function postJson(url: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/**
 * POSTs `bytes` bytes of body with `Transfer-Encoding: chunked` and no Content-Length (so a size
 * limit cannot be checked up front), in 4 KiB chunks; resolves with the answer's status and body.
 * The server may answer before the whole body was sent: write errors after that are expected.
 */
export function postChunked(
  url: string,
  bytes: number,
  options: { contentType?: string; paymentId?: string } = {},
): Promise<{ status: number; body: string; chunked: boolean }> {
  const { contentType, paymentId = 'pay_chunked' } = options;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'transfer-encoding': 'chunked' };
    if (contentType) headers['content-type'] = contentType;
    const req = http.request(url, { method: 'POST', headers });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          chunked: req.getHeader('content-length') === undefined,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    // A JSON object whose padding makes up the size: a parser that reads it whole sees valid JSON.
    const head = Buffer.from(`{"payment_id":${JSON.stringify(paymentId)},"pad":"`);
    const tail = Buffer.from('"}');
    let left = Math.max(0, bytes - head.length - tail.length);
    const write = () => {
      if (answered || req.destroyed) return;
      if (left === 0) return void req.end(tail);
      const size = Math.min(4096, left);
      left -= size;
      if (req.write(Buffer.alloc(size, 'x'))) setImmediate(write);
      else req.once('drain', write);
    };
    req.write(head);
    write();
  });
}

type StoreMethod = Exclude<keyof PaymentsStore, 'ping' | 'close'>;

/**
 * A store that delegates to another (by default a fresh memory store) and can be told to fail
 * chosen operations, like an unreachable database, or to call a hook before one runs. Its
 * combined operations are BasicPaymentsStore's, made of the basic calls (as a custom store's
 * would be); its rate limits are the inner store's, recorded and failed as `rateLimits`.
 */
export class DelegatingStore extends BasicPaymentsStore {
  readonly fail = new Set<StoreMethod>();
  readonly calls: StoreMethod[] = [];
  before?: (method: StoreMethod, args: unknown[]) => Promise<void> | void;

  override readonly rateLimits: RateLimiter = {
    take: (key, windowMs) => this.run('rateLimits', [key, windowMs], () => this.inner.rateLimits.take(key, windowMs)),
    free: (key) => this.run('rateLimits', [key], () => this.inner.rateLimits.free(key)),
  };

  constructor(readonly inner: PaymentsStore = new MemoryPaymentsStore()) {
    super();
  }

  private async run<T>(method: StoreMethod, args: unknown[], call: () => Promise<T>): Promise<T> {
    this.calls.push(method);
    await this.before?.(method, args);
    if (this.fail.has(method)) throw new Error(`store down during ${method} (ECONNREFUSED 127.0.0.1:6379)`);
    return call();
  }

  saveBinding(...a: Parameters<PaymentsStore['saveBinding']>) {
    return this.run('saveBinding', a, () => this.inner.saveBinding(...a));
  }
  findBinding(...a: Parameters<PaymentsStore['findBinding']>) {
    return this.run('findBinding', a, () => this.inner.findBinding(...a));
  }
  claim(...a: Parameters<PaymentsStore['claim']>) {
    return this.run('claim', a, () => this.inner.claim(...a));
  }
  markDone(...a: Parameters<PaymentsStore['markDone']>) {
    return this.run('markDone', a, () => this.inner.markDone(...a));
  }
  release(...a: Parameters<PaymentsStore['release']>) {
    return this.run('release', a, () => this.inner.release(...a));
  }
  schedulePending(...a: Parameters<PaymentsStore['schedulePending']>) {
    return this.run('schedulePending', a, () => this.inner.schedulePending(...a));
  }
  takeDuePending(...a: Parameters<PaymentsStore['takeDuePending']>) {
    return this.run('takeDuePending', a, () => this.inner.takeDuePending(...a));
  }
  findPending(...a: Parameters<PaymentsStore['findPending']>) {
    return this.run('findPending', a, () => this.inner.findPending(...a));
  }
  removePending(...a: Parameters<PaymentsStore['removePending']>) {
    return this.run('removePending', a, () => this.inner.removePending(...a));
  }
  countPending(...a: Parameters<PaymentsStore['countPending']>) {
    return this.run('countPending', a, () => this.inner.countPending(...a));
  }
  saveOutcome(...a: Parameters<PaymentsStore['saveOutcome']>) {
    return this.run('saveOutcome', a, () => this.inner.saveOutcome(...a));
  }
  getOutcome(...a: Parameters<PaymentsStore['getOutcome']>) {
    return this.run('getOutcome', a, () => this.inner.getOutcome(...a));
  }
  listOutcomes(...a: Parameters<PaymentsStore['listOutcomes']>) {
    return this.run('listOutcomes', a, () => this.inner.listOutcomes(...a));
  }
  async ping(): Promise<void> {
    await this.inner.ping?.();
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}

/** Generates a payment through `client` against `fake`, answering generate with `paymentId`. */
export async function generateVia(
  client: PaymentsClient,
  fake: FakeService,
  paymentId: string,
  input: { amount: string; developerTrackingId?: string; sessionTimeoutSecs?: number },
): Promise<{ paymentId: string; webhook: string; token: string }> {
  fake.reply('/api/v2/generate_payment', {
    status: 200,
    body: {
      result: { success: true, payment_id: paymentId, link: `https://checkout.example.test/${paymentId}` },
      name: 'developers',
      code: 0,
      version: 'v2',
    },
  });
  await client.generatePayment(input);
  const webhook = lastWebhookUrl(fake);
  return { paymentId, webhook, token: tokenOf(webhook) };
}
