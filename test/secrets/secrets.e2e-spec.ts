import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import express from 'express';
import net from 'node:net';
import { inspect } from 'node:util';
import {
  MemoryPaymentsStore,
  OnPaymentConfirmed,
  PaymentsError,
  PaymentsModule,
  PaymentsService,
  PaymentsWebhookController,
  PaymentsWebhookGuard,
  WEBHOOK_TOKEN_PARAM,
  type PaymentBinding,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
  type PaymentsStore,
} from '../../lib/index.js';
import { createPaymentsClient, createWebhookRouter } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';

// A full run of a Nest app (and a plain Express one) through every error path, with ALL output
// captured: the Nest logger, process.stdout/stderr, console.*, and every HTTP answer of the
// webhook routes. Neither the private key nor the webhook secret may appear anywhere.

const PRIVATE_KEY = 'sk_live_PRIVKEY-7f3b2c9d1e-ZQ';
const WEBHOOK_SECRET = 'whsec_WHSECRET-0a1b2c3d4e5f6a7b8c9d0e1f2a3b';
const SHORT_SECRET = 'whsec_SHORTSECRET-42';

/** Every form in which a secret could show up in text. */
function needles(): string[] {
  const list: string[] = [];
  for (const secret of [PRIVATE_KEY, WEBHOOK_SECRET, SHORT_SECRET]) {
    const b = Buffer.from(secret);
    list.push(secret, secret.slice(6, 20), b.toString('base64'), b.toString('base64url'), b.toString('hex'), encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1));
  }
  list.push(Buffer.from(`pk_live:${PRIVATE_KEY}`).toString('base64'));
  return list;
}

/** A LoggerService that keeps everything, every argument, rendered deeply. */
class CaptureLogger implements LoggerService {
  constructor(private readonly lines: string[]) {}
  private keep(level: string, message: unknown, rest: unknown[]) {
    this.lines.push(`[${level}] ${[message, ...rest].map((m) => (typeof m === 'string' ? m : inspect(m, { depth: 10, showHidden: true }))).join(' ')}`);
  }
  log(message: unknown, ...rest: unknown[]) { this.keep('log', message, rest); }
  error(message: unknown, ...rest: unknown[]) { this.keep('error', message, rest); }
  warn(message: unknown, ...rest: unknown[]) { this.keep('warn', message, rest); }
  debug(message: unknown, ...rest: unknown[]) { this.keep('debug', message, rest); }
  verbose(message: unknown, ...rest: unknown[]) { this.keep('verbose', message, rest); }
  fatal(message: unknown, ...rest: unknown[]) { this.keep('fatal', message, rest); }
}

/** A memory store whose operations can be made to fail, like an unreachable database. */
class FlakyStore implements PaymentsStore {
  readonly inner = new MemoryPaymentsStore();
  fail = new Set<'saveBinding' | 'findBinding' | 'claim' | 'markDone' | 'release'>();
  private check(op: 'saveBinding' | 'findBinding' | 'claim' | 'markDone' | 'release') {
    if (this.fail.has(op)) throw new Error(`store down during ${op} (ECONNREFUSED 127.0.0.1:6379)`);
  }
  async saveBinding(id: string, b: PaymentBinding, ttl: number) { this.check('saveBinding'); return this.inner.saveBinding(id, b, ttl); }
  async findBinding(id: string) { this.check('findBinding'); return this.inner.findBinding(id); }
  async claim(key: string, owner: string, lease: number) { this.check('claim'); return this.inner.claim(key, owner, lease); }
  async markDone(key: string, owner: string, ttl: number) { this.check('markDone'); return this.inner.markDone(key, owner, ttl); }
  async release(key: string, owner: string) { this.check('release'); return this.inner.release(key, owner); }
}

@Injectable()
class Orders {
  failing = false;
  readonly paid: string[] = [];
  @OnPaymentConfirmed()
  async markPaid(event: PaymentConfirmedEvent) {
    if (this.failing) throw new Error(`database unavailable while marking ${event.paymentId} paid`);
    this.paid.push(event.paymentId);
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const lines: string[] = [];
const answers: string[] = [];
const logger = new CaptureLogger(lines);
const rejections = collectUnhandledRejections();
const restore: Array<() => void> = [];

/** What a host typically does with an error: log it every way it can. */
function hostLogs(error: unknown) {
  logger.error(error);
  logger.error(String(error), (error as Error)?.stack);
  logger.error(JSON.stringify(error));
  logger.error(inspect(error, { depth: 10, showHidden: true }));
}

async function attempt(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return await call();
  } catch (error) {
    expect(error).toBeInstanceOf(PaymentsError);
    hostLogs(error);
    return error;
  }
}

beforeAll(() => {
  // Intercept every byte written to stdout and stderr, and console.* (which Jest routes elsewhere).
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      lines.push(`[${stream === process.stdout ? 'stdout' : 'stderr'}] ${Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk)}`);
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as typeof stream.write;
    restore.push(() => (stream.write = original));
  }
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    const original = console[method];
    console[method] = (...args: unknown[]) => void lines.push(`[console.${method}] ${args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 10 }))).join(' ')}`);
    restore.push(() => (console[method] = original));
  }
});

afterAll(async () => {
  for (const undo of restore.reverse()) undo();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

describe('a full run through every error path leaks neither the private key nor the webhook secret', () => {
  let sandbox: PaymentsSandbox;
  let otherSandbox: PaymentsSandbox;
  let app: INestApplication;
  let payments: PaymentsService;
  let orders: Orders;
  let store: FlakyStore;
  let appUrl: string;

  async function hook(query: string, body: unknown = {}, method = 'POST') {
    const res = await fetch(`${appUrl}/payments/webhook?${query}`, {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json' } : {},
      body: method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
    });
    const text = await res.text();
    answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
    return res.status;
  }

  const tokenOf = (paymentId: string) => new URL(sandbox.getPayment(paymentId)!.webhook!).searchParams.get(WEBHOOK_TOKEN_PARAM)!;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start({ publicKey: 'pk_live', privateKey: PRIVATE_KEY, webhookRetries: 2 });
    otherSandbox = await PaymentsSandbox.start({ publicKey: 'pk_live', privateKey: 'a-different-key' });
    store = new FlakyStore();
    const port = await freePort();
    appUrl = `http://127.0.0.1:${port}`;
    const moduleRef = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot({
          ...sandbox.options(),
          timeoutMs: 400,
          maxRetries: 1,
          webhook: { publicUrl: `${appUrl}/payments/webhook`, secret: WEBHOOK_SECRET },
          store,
        }),
      ],
      providers: [Orders],
    })
      .setLogger(logger)
      .compile();
    app = moduleRef.createNestApplication({ logger });
    await app.listen(port, '127.0.0.1');
    payments = app.get(PaymentsService);
    orders = app.get(Orders);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
    await otherSandbox?.close();
  });

  it('start-up refuses bad options without echoing any of them', async () => {
    const bad: Array<Partial<PaymentsModuleOptions>> = [
      { privateKey: `${PRIVATE_KEY}\r\n` },
      { privateKey: `${PRIVATE_KEY}`, publicKey: `pk:${PRIVATE_KEY}` },
      { webhook: { publicUrl: 'https://shop.example/hook', secret: SHORT_SECRET } },
      { baseUrl: `not a url ${PRIVATE_KEY}` },
      { webhook: { publicUrl: `javascript:${WEBHOOK_SECRET}`, secret: WEBHOOK_SECRET } },
      { privateKey: undefined, webhook: { secret: WEBHOOK_SECRET } as never },
    ];
    for (const overrides of bad) {
      const error = await Test.createTestingModule({ imports: [PaymentsModule.forRoot({ ...sandbox.options(), privateKey: PRIVATE_KEY, ...overrides } as PaymentsModuleOptions)] })
        .setLogger(logger)
        .compile()
        .then(async (m) => {
          await m.createNestApplication({ logger }).init();
          return undefined;
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsError);
      expect((error as PaymentsError).code).toBe('VALIDATION_FAILED');
      hostLogs(error);
    }
  });

  it('the happy path: a payment generated, paid in the sandbox, confirmed by its webhook', async () => {
    const { paymentId } = await payments.generatePayment({ amount: '12500', developerTrackingId: 'order-1' });
    const settlement = await sandbox.completePayment(paymentId);
    expect(settlement.webhook?.status).toBe(200);
    expect(orders.paid).toEqual([paymentId]);
    // A duplicate delivery answers 200 and runs nothing.
    expect(await hook(`${WEBHOOK_TOKEN_PARAM}=${tokenOf(paymentId)}`, { payment_id: paymentId })).toBe(200);
    logger.log(inspect(payments, { depth: 10, showHidden: true }));
    logger.log(JSON.stringify(payments));
  });

  it('a failing handler: 500, logged, redelivered; then it succeeds', async () => {
    const { paymentId } = await payments.generatePayment({ amount: '100' });
    orders.failing = true;
    const settlement = await sandbox.completePayment(paymentId);
    expect(settlement.webhook).toMatchObject({ delivered: false, status: 500 });
    orders.failing = false;
    expect(await hook(`${WEBHOOK_TOKEN_PARAM}=${tokenOf(paymentId)}`, { payment_id: paymentId })).toBe(200);
    expect(orders.paid).toContain(paymentId);
  });

  it('401s: missing, forged, foreign and doubled tokens; 400 and 413 bodies; 404 methods', async () => {
    const a = await payments.generatePayment({ amount: '100' });
    const b = await payments.generatePayment({ amount: '200' });
    const token = tokenOf(a.paymentId);
    const statuses = [
      await hook('', { payment_id: a.paymentId }),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token.slice(0, -3)}AAA`, { payment_id: a.paymentId }),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, { payment_id: b.paymentId }),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token}&${WEBHOOK_TOKEN_PARAM}=${token}`, { payment_id: a.paymentId }),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, '{"payment_id": '),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, { payment_id: a.paymentId, padding: 'x'.repeat(70_000) }),
      await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, undefined, 'PUT'),
    ];
    expect(statuses).toEqual([401, 401, 401, 401, 400, 413, 404]);
  });

  it('store errors: while saving a binding, reading a token, claiming and marking done', async () => {
    store.fail.add('saveBinding');
    const storeError = (await attempt(() => payments.generatePayment({ amount: '300' }))) as PaymentsError;
    expect(storeError.code).toBe('STORE_UNAVAILABLE');
    store.fail.clear();

    const { paymentId } = await payments.generatePayment({ amount: '400' });
    const token = tokenOf(paymentId);
    for (const op of ['findBinding', 'claim'] as const) {
      store.fail = new Set([op]);
      expect(await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, { payment_id: paymentId })).toBe(503);
    }
    store.fail = new Set(['markDone']);
    expect(await hook(`${WEBHOOK_TOKEN_PARAM}=${token}`, { payment_id: paymentId })).toBe(200);
    store.fail.clear();

    orders.failing = true;
    const other = await payments.generatePayment({ amount: '500' });
    store.fail = new Set(['release']);
    expect(await hook(`${WEBHOOK_TOKEN_PARAM}=${tokenOf(other.paymentId)}`, { payment_id: other.paymentId })).toBe(500);
    store.fail.clear();
    orders.failing = false;
  });

  it('API errors, authentication failures, timeouts, retries and validation errors', async () => {
    sandbox.fault('/api/v2/generate_payment', { status: 502, body: '<html><h1>502 Bad Gateway</h1></html>', times: 1 });
    await attempt(() => payments.generatePayment({ amount: '600' }));
    const { paymentId } = await payments.generatePayment({ amount: '700' });
    await attempt(() => payments.refundPayment(paymentId)); // not paid yet: REFUND_NOT_ALLOWED
    await attempt(() => payments.cancelPayment(paymentId)); // not pre-authorized: CANCELLATION_FAILED
    await attempt(() => payments.listBindings('bad client id with spaces'));
    sandbox.fault('/api/v2/cancel_payment', { delayMs: 700, times: 1 });
    await attempt(() => payments.cancelPayment(paymentId)); // TIMEOUT
    sandbox.fault('/api/v2/bindings/list', { status: 503, body: '', times: 1 });
    await payments.listBindings('client-1'); // retried once (logged), then fine
    sandbox.fault('/api/v2/refund_payment', { reset: true, times: 1 });
    await attempt(() => payments.refundPayment(paymentId)); // CONNECTION_FAILED
    // Secrets passed by mistake as input are not echoed by validation errors either.
    await attempt(() => payments.generatePayment({ amount: PRIVATE_KEY, successLink: WEBHOOK_SECRET, developerTrackingId: 42 as never, privateKey: PRIVATE_KEY, webhookSecret: WEBHOOK_SECRET } as never));

    // The same plugin with a key the service refuses.
    const moduleRef = await Test.createTestingModule({ imports: [PaymentsModule.forRoot({ ...otherSandbox.options(), privateKey: PRIVATE_KEY })] }).setLogger(logger).compile();
    const wrong = await moduleRef.createNestApplication({ logger }).init();
    try {
      const error = (await attempt(() => wrong.get(PaymentsService).generatePayment({ amount: '1' }))) as PaymentsError;
      expect(error.code).toBe('AUTHENTICATION_FAILED');
      await attempt(() => wrong.get(PaymentsService).listBindings('client-1'));
    } finally {
      await wrong.close();
    }
  });

  it('the objects a host can reach show no secret when logged', async () => {
    for (const object of [app.get(PaymentsService), app.get(PaymentsWebhookGuard), app.get(PaymentsWebhookController), store]) {
      logger.log(inspect(object, { depth: 10, showHidden: true }));
      logger.log(object);
    }
  });

  it('the plain Express router, with its default logger (stderr), through the same paths', async () => {
    const client = createPaymentsClient({ ...sandbox.options(), privateKey: PRIVATE_KEY, webhook: { publicUrl: 'http://127.0.0.1:1/hook', secret: WEBHOOK_SECRET }, timeoutMs: 400 });
    const expressApp = express();
    let fail = true;
    expressApp.use('/hook', createWebhookRouter({ client, onPaymentConfirmed: () => { if (fail) throw new Error('callback failed'); } }));
    const server = expressApp.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`;
      const { paymentId } = await client.generatePayment({ amount: '900' });
      const token = new URL(sandbox.getPayment(paymentId)!.webhook!).searchParams.get(WEBHOOK_TOKEN_PARAM)!;
      for (const query of [`${WEBHOOK_TOKEN_PARAM}=${token}`, `${WEBHOOK_TOKEN_PARAM}=forged`, '']) {
        const res = await fetch(`${url}?${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payment_id: paymentId }) });
        answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
      }
      fail = false;
      logger.log(inspect(client, { depth: 10, showHidden: true }));
      logger.log(inspect(client.webhooks, { depth: 10, showHidden: true }));
      logger.log(JSON.stringify(client.webhooks));
      sandbox.fault('/api/v2/generate_payment', { status: 500, body: 'oops', times: 1 });
      await attempt(() => client.generatePayment({ amount: '1' }));
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('after all that: the captured output is substantial, covers the error paths, and holds no secret', async () => {
    await app.close();
    const everything = [...lines, ...answers].join('\n');
    // The run did go through the paths that log (otherwise the check below proves nothing).
    for (const expected of [
      'handler failed', 'store unreachable', 'could not mark', 'could not release', 'retrying', 'STORE_UNAVAILABLE', 'AUTHENTICATION_FAILED',
      'REFUND_NOT_ALLOWED', 'TIMEOUT', 'VALIDATION_FAILED', 'privateKey', 'webhook.secret', 'callback failed', 'missing or invalid webhook token',
    ]) {
      expect(everything).toContain(expected);
    }
    expect(lines.some((l) => l.startsWith('[stderr]'))).toBe(true);
    const found = needles().filter((n) => everything.includes(n));
    const context = found.map((n) => everything.slice(Math.max(0, everything.indexOf(n) - 200), everything.indexOf(n) + 50));
    expect({ found, context }).toEqual({ found: [], context: [] });
  });
});
