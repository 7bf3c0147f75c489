import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication, type LoggerService } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import express from 'express';
import http from 'node:http';
import net from 'node:net';
import { inspect } from 'node:util';
import {
  OnPaymentConfirmed,
  PaymentsError,
  PaymentsModule,
  PaymentsService,
  PaymentsWebhookController,
  PaymentsWebhookGuard,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { MemoryPaymentsStore } from '../../lib/store/index.js';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import { loadTelemetryApi } from '../../lib/core/telemetry/telemetry.loader.js';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { getPaymentsClientToken } from '../../lib/nest/payments.tokens.js';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentOutcomeEvent,
  type PaymentsClient,
} from '../../lib/express/index.js';
import { PaymentsSandbox, SandboxWebhookError } from '../../lib/testing/index.js';
import { DelegatingStore, tokenOf as tokenOfUrl } from '../support/outcome-kit.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';
import { freePort } from '../support/ports.js';
import { forgeSignature } from '../support/tokens.js';

// A full run of a Nest app (and a plain Express one) through every error path, with ALL output
// captured: the Nest logger, process.stdout/stderr, console.*, and every HTTP answer of the
// webhook routes. Neither the private key nor the webhook secret may appear anywhere.

const PRIVATE_KEY = 'sk_live_PRIVKEY-7f3b2c9d1e-ZQ';
const WEBHOOK_SECRET = 'whsec_WHSECRET-0a1b2c3d4e5f6a7b8c9d0e1f2a3b';
const SHORT_SECRET = 'whsec_SHORTSECRET-42';
/** A key with the characters JSON and URLs escape: `/` (PHP writes `\/`), `"`, `+` and `\`. */
const ESCAPED_KEY = 'sk_live/AbC+dEf/123=="q\\uote';

/** Every form in which a secret could show up in text. */
function needles(): string[] {
  const list: string[] = [];
  for (const secret of [PRIVATE_KEY, WEBHOOK_SECRET, SHORT_SECRET, ESCAPED_KEY]) {
    const b = Buffer.from(secret);
    list.push(
      secret,
      secret.slice(6, 20),
      b.toString('base64'),
      b.toString('base64url'),
      b.toString('hex'),
      encodeURIComponent(secret),
      JSON.stringify(secret).slice(1, -1),
      JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'),
      hexJson(secret).slice(1, -1),
    );
  }
  list.push(Buffer.from(`pk_live:${PRIVATE_KEY}`).toString('base64'));
  return list;
}

/** JSON as PHP's json_encode writes it by default: `/` escaped as `\/`. */
function phpJson(value: unknown): string {
  return JSON.stringify(value).replace(/\//g, '\\/');
}

/** JSON with every character of every string but letters and digits written as a \uXXXX escape. */
function hexJson(value: unknown): string {
  if (typeof value === 'string')
    return `"${[...value].map((c) => (/[A-Za-z0-9]/.test(c) ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)).join('')}"`;
  if (Array.isArray(value)) return `[${value.map(hexJson).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.entries(value)
      .map(([k, v]) => `${hexJson(k)}:${hexJson(v)}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** A LoggerService that keeps everything, every argument, rendered deeply. */
class CaptureLogger implements LoggerService {
  constructor(private readonly lines: string[]) {}
  private keep(level: string, message: unknown, rest: unknown[]) {
    this.lines.push(
      `[${level}] ${[message, ...rest].map((m) => (typeof m === 'string' ? m : inspect(m, { depth: 10, showHidden: true }))).join(' ')}`,
    );
  }
  log(message: unknown, ...rest: unknown[]) {
    this.keep('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.keep('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.keep('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.keep('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.keep('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]) {
    this.keep('fatal', message, rest);
  }
}

/** A memory store whose operations can be made to fail, like an unreachable database (every store method, the queue and the record included). */
class FlakyStore extends DelegatingStore {
  constructor() {
    super(new MemoryPaymentsStore());
  }
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

/**
 * A client of a service that echoes the Authorization header back in its answers: its log lines
 * into `lines` (tagged), its outcome events (confirmed, mismatch) into `seen`.
 */
function echoingClient(
  echo: http.Server,
  privateKey: string,
  tag: string,
  seen: PaymentOutcomeEvent[],
): PaymentsClient {
  const client = createPaymentsClient({
    publicKey: 'pk_live',
    privateKey,
    baseUrl: `http://127.0.0.1:${(echo.address() as net.AddressInfo).port}`,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    webhook: { publicUrl: 'https://shop.example/hook', secret: WEBHOOK_SECRET },
    maxRetries: 0,
    logger: {
      log: (m) => void lines.push(`[${tag} log] ${m}`),
      warn: (m) => void lines.push(`[${tag} warn] ${m}`),
      error: (m) => void lines.push(`[${tag} error] ${m}`),
    },
  });
  createWebhookRouter({
    client,
    onPaymentConfirmed: (e) => void seen.push(e),
    onPaymentMismatch: (e) => void seen.push(e),
  });
  return client;
}

/** Every operation against the echoing service, each failing with its own code: the errors. */
async function everyOperationFailing(client: PaymentsClient): Promise<unknown[]> {
  const errors = [
    await attempt(() => client.generatePayment({ amount: '900' })),
    await attempt(() => client.refundPayment('pay_1')),
    await attempt(() => client.cancelPayment('pay_1')),
    await attempt(() => client.listBindings('client-1')),
    await attempt(() => client.capturePayment('pay_1')),
  ];
  expect(errors.map((e) => (e as PaymentsError).code)).toEqual([
    'API_ERROR',
    'REFUND_NOT_ALLOWED',
    'AUTHENTICATION_FAILED',
    'INVALID_RESPONSE',
    'NOT_FOUND',
  ]);
  return errors;
}

beforeAll(() => {
  // Intercept every byte written to stdout and stderr, and console.* (which Jest routes elsewhere).
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write;
    stream.write = (chunk: unknown, ...rest: unknown[]) => {
      lines.push(
        `[${stream === process.stdout ? 'stdout' : 'stderr'}] ${Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk)}`,
      );
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
    restore.push(() => (stream.write = original));
  }
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    const original = console[method];
    console[method] = (...args: unknown[]) =>
      void lines.push(
        `[console.${method}] ${args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 10 }))).join(' ')}`,
      );
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

  /** A delivery to `/payments/webhook/<token>` (`token` '' = no token: `/payments/webhook`). */
  async function hook(token: string, body: unknown = {}, method = 'POST', query = '') {
    const res = await fetch(`${appUrl}/payments/webhook${token ? `/${token}` : ''}${query ? `?${query}` : ''}`, {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json' } : {},
      body: method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
    });
    const text = await res.text();
    answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
    return res.status;
  }

  const tokenOf = (paymentId: string) => tokenOfUrl(sandbox.getPayment(paymentId)!.webhook!);

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start({ publicKey: 'pk_live', privateKey: PRIVATE_KEY, webhookAttempts: 2 });
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
      { privateKey: undefined, webhook: { secret: WEBHOOK_SECRET } },
    ];
    for (const overrides of bad) {
      const error = await Test.createTestingModule({
        imports: [PaymentsModule.forRoot({ ...sandbox.options(), privateKey: PRIVATE_KEY, ...overrides })],
      })
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

  it('the happy path: a payment generated, paid in the sandbox, its webhook verified and confirmed', async () => {
    const { paymentId } = await payments.generatePayment({ amount: '12500', developerTrackingId: 'order-1' });
    const settlement = await sandbox.completePayment(paymentId);
    expect([settlement.delivered, settlement.lastStatus]).toEqual([true, 200]);
    expect(sandbox.verifyCalls(paymentId)).toBe(1);
    expect(orders.paid).toEqual([paymentId]);
    // A duplicate delivery answers 200, runs nothing and costs no verify call.
    expect(await hook(tokenOf(paymentId), { payment_id: paymentId })).toBe(200);
    expect(sandbox.verifyCalls(paymentId)).toBe(1);
    logger.log(inspect(await payments.getOutcome(paymentId), { depth: 10 }));
    logger.log(inspect(payments, { depth: 10, showHidden: true }));
    logger.log(JSON.stringify(payments));
  });

  it('a failing handler: 500, logged, redelivered; then it succeeds', async () => {
    const { paymentId } = await payments.generatePayment({ amount: '100' });
    orders.failing = true;
    const error = await sandbox.completePayment(paymentId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxWebhookError);
    expect([(error as SandboxWebhookError).settlement.delivered, (error as SandboxWebhookError).lastStatus]).toEqual([
      false,
      500,
    ]);
    hostLogs(error);
    orders.failing = false;
    expect(await hook(tokenOf(paymentId), { payment_id: paymentId })).toBe(200);
    expect(orders.paid).toContain(paymentId);
    logger.log(inspect(await payments.listOutcomes({ handlers: 'succeeded' }), { depth: 10 }));
  });

  it('401s: missing, forged, foreign and other-secret tokens (no verify call); 400 and 413 bodies; 404 methods', async () => {
    const a = await payments.generatePayment({ amount: '100' });
    const b = await payments.generatePayment({ amount: '200' });
    const token = tokenOf(a.paymentId);
    // Signed with a secret that differs from ours by one character: must be refused like any forgery.
    const otherSecret = new WebhookTokenSigner(`${WEBHOOK_SECRET.slice(0, -1)}X`).issue('100', undefined, 60_000).token;
    const verifiesBefore = sandbox.verifyCalls();
    const statuses = [
      await hook('', { payment_id: a.paymentId }),
      await hook(forgeSignature(token), { payment_id: a.paymentId }),
      await hook(token, { payment_id: b.paymentId }),
      await hook(otherSecret, { payment_id: a.paymentId }),
      await hook(token, '{"payment_id": '),
      await hook(token, { payment_id: a.paymentId, padding: 'x'.repeat(70_000) }),
      await hook(token, undefined, 'PUT'),
    ];
    expect(statuses).toEqual([401, 401, 401, 401, 400, 413, 404]);
    expect(sandbox.verifyCalls()).toBe(verifiesBefore);
  });

  it('store errors: while saving a binding, reading a token, claiming and marking done', async () => {
    // A created payment is never lost to the store: the customer gets the link, the write is
    // retried in the background, and what is logged of the failure carries no secret.
    store.fail.add('saveBinding');
    const created = (await attempt(() => payments.generatePayment({ amount: '300' }))) as { link?: string };
    expect(created.link).toEqual(expect.any(String));
    store.fail.clear();

    const { paymentId } = await payments.generatePayment({ amount: '400' });
    const token = tokenOf(paymentId);
    for (const op of ['findBinding', 'claim'] as const) {
      store.fail.clear();
      store.fail.add(op);
      expect(await hook(token, { payment_id: paymentId })).toBe(503);
    }
    // The service's own delivery: the handlers ran, marking done failed (logged): still 200.
    store.fail.clear();
    store.fail.add('markDone');
    expect((await sandbox.completePayment(paymentId)).lastStatus).toBe(200);
    store.fail.clear();

    // A failing handler whose claim cannot be released: 500 (the lease frees it later).
    orders.failing = true;
    store.fail.add('release');
    const other = await payments.generatePayment({ amount: '500' });
    await sandbox.completePayment(other.paymentId, { requireDelivery: false });
    expect(sandbox.deliveries.filter((d) => d.paymentId === other.paymentId).map((d) => d.status)[0]).toBe(500);
    store.fail.clear();
    orders.failing = false;

    // The record of outcomes and the reconciliation queue unreachable: reconcilePayment fails typed, nothing leaks.
    store.fail.add('claim');
    await attempt(() => payments.reconcilePayment(other.paymentId));
    store.fail.clear();
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
    await attempt(() =>
      payments.generatePayment({
        amount: PRIVATE_KEY,
        successLink: WEBHOOK_SECRET,
        developerTrackingId: 42 as never,
        privateKey: PRIVATE_KEY,
        webhookSecret: WEBHOOK_SECRET,
      } as never),
    );

    // The same plugin with a key the service refuses.
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot({ ...otherSandbox.options(), privateKey: PRIVATE_KEY })],
    })
      .setLogger(logger)
      .compile();
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
    // The webhook controller is a per-registration subclass: found among the app's controllers.
    const controllers = [...app.get(ModulesContainer).values()].flatMap((m) =>
      [...m.controllers.values()].map((w) => w.instance as unknown),
    );
    const controller = controllers.find((c) => c instanceof PaymentsWebhookController);
    expect(controller).toBeDefined();
    for (const object of [
      app.get(PaymentsService),
      app.get(PaymentsWebhookGuard),
      controller,
      store,
      app.get(getPaymentsClientToken()),
    ]) {
      logger.log(inspect(object, { depth: 10, showHidden: true }));
      logger.log(object);
    }
  });

  it('the plain Express router, with its default logger (stderr), through the same paths', async () => {
    const client = createPaymentsClient({
      ...sandbox.options(),
      privateKey: PRIVATE_KEY,
      webhook: { publicUrl: 'http://127.0.0.1:1/hook', secret: WEBHOOK_SECRET },
      timeoutMs: 400,
    });
    const expressApp = express();
    let fail = true;
    expressApp.use(
      '/hook',
      createWebhookRouter({
        client,
        onPaymentConfirmed: () => {
          if (fail) throw new Error('callback failed');
        },
      }),
    );
    const server = expressApp.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`;
      const { paymentId } = await client.generatePayment({ amount: '900' });
      await sandbox.completePayment(paymentId, { requireDelivery: false }); // its webhook URL (port 1) reaches nobody
      const token = tokenOfUrl(sandbox.getPayment(paymentId)!.webhook!);
      const statuses: number[] = [];
      for (const path of [`/${token}`, '/forged', '']) {
        const res = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ payment_id: paymentId }),
        });
        statuses.push(res.status);
        answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
      }
      expect(statuses).toEqual([500, 401, 401]);
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

  it('a service (or proxy) echoing the Authorization header back, in error bodies and in the verify answer, leaks nothing', async () => {
    // Echoes the request's Authorization header (raw, URL-encoded and as the whole header set) into every answer.
    const echo = http.createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      const path = new URL(req.url ?? '/', 'http://echo').pathname;
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (path.startsWith('/api/v2/verify_payment/')) {
        const id = decodeURIComponent(path.split('/').at(-1)!);
        const amount = id.endsWith('mismatch') ? 1 : 900;
        return json(200, {
          success: true,
          result: {
            type: 'card',
            amount,
            status: 'SUCCESS',
            developer_tracking_id: `t-${id}`,
            details: { echoed: auth, encoded: encodeURIComponent(auth), headers: req.headers },
          },
        });
      }
      if (path === '/api/v2/generate_payment')
        return json(500, { result: { status: 500, message: `rejected ${auth}` } });
      if (path === '/api/v2/refund_payment')
        return json(400, { status: 'error', message: `cannot refund for ${auth}`, code: 'REFUND_NOT_ALLOWED' });
      if (path === '/api/v2/cancel_payment')
        return json(401, { status: 'error', message: `bad credentials ${encodeURIComponent(auth)}`, code: 'AUTH' });
      if (path === '/api/v2/bindings/list') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<html><pre>${JSON.stringify(req.headers)}</pre></html>`);
      }
      return json(404, { result: { status: 404, message: `no ${path} for ${auth}` } });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const seen: PaymentOutcomeEvent[] = [];
    const client = echoingClient(echo, PRIVATE_KEY, 'echo', seen);
    try {
      const errors = await everyOperationFailing(client);
      // The echoed key was there, and was cut out: the redaction marker proves the echo happened.
      expect(errors.map((e) => JSON.stringify(e)).join('\n')).toContain('[redacted]');

      // Verified outcomes whose verify answer echoes the header: the event, the record, a direct verify.
      for (const id of ['pay_echo_ok', 'pay_echo_mismatch']) {
        const result = await client.reconcilePayment(id, {
          expected: { amount: '900', developerTrackingId: `t-${id}` },
        });
        expect(result.outcome).toBe(id.endsWith('mismatch') ? 'mismatch' : 'confirmed');
        logger.log(inspect(result, { depth: 10 }));
        logger.log(inspect(await client.getOutcome(id), { depth: 10 }));
      }
      const verified = await client.verifyPayment('pay_echo_ok');
      expect(JSON.stringify(verified.details)).toContain('[redacted]');
      logger.log(inspect(verified, { depth: 10, showHidden: true }));
      logger.log(JSON.stringify(verified));
      expect(seen.map((e) => [e.constructor.name, e.paymentId])).toEqual([
        ['PaymentConfirmedEvent', 'pay_echo_ok'],
        ['PaymentMismatchEvent', 'pay_echo_mismatch'],
      ]);
      for (const event of seen) {
        expect(JSON.stringify(event.verification)).toContain('[redacted]');
        logger.log(inspect(event, { depth: 10, showHidden: true }));
        logger.log(JSON.stringify(event));
        logger.log(JSON.stringify(event.verification));
      }
    } finally {
      await client.close();
      echo.closeAllConnections();
      await new Promise((r) => echo.close(r));
    }
  });

  it('a key with /, ", + and \\ echoed in escaped JSON (PHP-style \\/, \\uXXXX) is cut out of errors, verify details, events and records', async () => {
    expect(phpJson(ESCAPED_KEY)).toContain('\\/');
    // Every answer echoes the Authorization header, JSON-encoded two ways a real server might.
    const echo = http.createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      const path = new URL(req.url ?? '/', 'http://echo').pathname;
      const send = (status: number, text: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(text);
      };
      if (path.startsWith('/api/v2/verify_payment/')) {
        const id = decodeURIComponent(path.split('/').at(-1)!);
        const result = {
          type: 'card',
          amount: 900,
          status: 'SUCCESS',
          developer_tracking_id: `t-${id}`,
          details: { echoed: auth, [auth]: 'as a key', deep: [{ auth }] },
        };
        return send(200, (id.endsWith('hex') ? hexJson : phpJson)({ success: true, result }));
      }
      if (path === '/api/v2/generate_payment')
        return send(500, phpJson({ result: { status: 500, message: `rejected ${auth}` } }));
      if (path === '/api/v2/refund_payment')
        return send(
          400,
          hexJson({ status: 'error', message: `cannot refund for ${auth}`, code: 'REFUND_NOT_ALLOWED' }),
        );
      if (path === '/api/v2/cancel_payment')
        return send(401, phpJson({ status: 'error', message: `bad credentials ${auth}`, code: 'AUTH' }));
      // A 200 that is no success shape: its excerpt goes into the error.
      if (path === '/api/v2/bindings/list') return send(200, phpJson({ echoed: auth }));
      return send(404, hexJson({ result: { status: 404, message: `no ${path} for ${auth}` } }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const seen: PaymentOutcomeEvent[] = [];
    const client = echoingClient(echo, ESCAPED_KEY, 'escaped', seen);
    try {
      const errors = await everyOperationFailing(client);
      for (const error of errors) {
        const text = `${(error as Error).message}\n${JSON.stringify(error)}`;
        // The echo happened (the marker) and nothing of the key is left, in any spelling.
        expect(text).toContain('[redacted]');
        expect(needles().filter((n) => text.includes(n))).toEqual([]);
      }

      for (const id of ['pay_escaped_php', 'pay_escaped_hex']) {
        const result = await client.reconcilePayment(id, {
          expected: { amount: '900', developerTrackingId: `t-${id}` },
        });
        expect(result.outcome).toBe('confirmed');
        const verified = await client.verifyPayment(id);
        expect(verified.details).toEqual({
          echoed: 'Bearer pk_live:[redacted]',
          'Bearer pk_live:[redacted]': 'as a key',
          deep: [{ auth: 'Bearer pk_live:[redacted]' }],
        });
        for (const shown of [
          JSON.stringify(verified),
          inspect(verified, { depth: 10 }),
          inspect(await client.getOutcome(id), { depth: 10 }),
        ]) {
          expect(needles().filter((n) => shown.includes(n))).toEqual([]);
          logger.log(shown);
        }
      }
      expect(seen.map((e) => e.paymentId)).toEqual(['pay_escaped_php', 'pay_escaped_hex']);
      for (const event of seen) {
        const shown = `${JSON.stringify(event)}\n${inspect(event, { depth: 10, showHidden: true })}`;
        expect(shown).toContain('[redacted]');
        expect(needles().filter((n) => shown.includes(n))).toEqual([]);
        logger.log(shown);
      }
    } finally {
      await client.close();
      echo.closeAllConnections();
      await new Promise((r) => echo.close(r));
    }
  });

  it('the webhook secret, base64 of public:private, case variants, URL- and JSON-escaped forms echoed back are cut out of errors, excerpts, verify details and spans', async () => {
    await loadTelemetryApi();
    const basic = Buffer.from(`pk_live:${PRIVATE_KEY}`).toString('base64');
    const upper = PRIVATE_KEY.toUpperCase();
    // What the service echoes, one form per operation, and every form in the verify answer.
    const forms = {
      webhookSecret: WEBHOOK_SECRET,
      basic: `Basic ${basic}`,
      basicUrl: encodeURIComponent(basic),
      upper,
      lower: PRIVATE_KEY.toLowerCase(),
      upperUrl: encodeURIComponent(upper),
      secretUrl: encodeURIComponent(WEBHOOK_SECRET.toUpperCase()),
      secretBase64: Buffer.from(WEBHOOK_SECRET).toString('base64url'),
    };
    const echo = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://echo').pathname;
      const send = (status: number, text: string, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type });
        res.end(text);
      };
      if (path.startsWith('/api/v2/verify_payment/'))
        return send(
          200,
          JSON.stringify({
            success: true,
            result: { type: 'card', amount: 900, status: 'SUCCESS', developer_tracking_id: 't-1', details: forms },
          }),
        );
      if (path === '/api/v2/generate_payment')
        return send(500, JSON.stringify({ result: { status: 500, message: `rejected, secret ${WEBHOOK_SECRET}` } }));
      if (path === '/api/v2/refund_payment')
        return send(
          400,
          JSON.stringify({ status: 'error', message: `cannot refund for Basic ${basic}`, code: 'REFUND_NOT_ALLOWED' }),
        );
      if (path === '/api/v2/cancel_payment')
        return send(
          401,
          phpJson({ status: 'error', message: `bad credentials ${upper} / ${forms.upperUrl}`, code: upper }),
        );
      // A 200 that is no success shape: its excerpt goes into the error (JSON-escaped forms, \uXXXX).
      if (path === '/api/v2/bindings/list')
        return send(200, hexJson({ echoed: WEBHOOK_SECRET.toLowerCase(), again: upper, url: forms.secretUrl }));
      // An HTML page: the excerpt is the raw text, URL-encoded and JSON-escaped forms as written.
      return send(
        404,
        `<html>no page for ${forms.secretUrl} ${hexJson(WEBHOOK_SECRET)} ${phpJson(upper)} ${forms.basicUrl} ${forms.secretBase64}</html>`,
        'text/html',
      );
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const client = createPaymentsClient({
      publicKey: 'pk_live',
      privateKey: PRIVATE_KEY,
      baseUrl: `http://127.0.0.1:${(echo.address() as net.AddressInfo).port}`,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/hook', secret: WEBHOOK_SECRET },
      maxRetries: 0,
      telemetry: { tracerProvider },
      logger: {
        log: (m) => void lines.push(`[forms log] ${m}`),
        warn: (m) => void lines.push(`[forms warn] ${m}`),
        error: (m) => void lines.push(`[forms error] ${m}`),
      },
    });
    // Every spelling of either secret, compared without regard to case.
    const leaks = (text: string) => {
      const lower = text.toLowerCase();
      const list = [...needles(), ...Object.values(forms).filter((f) => !f.startsWith('Basic '))];
      return list.filter((n) => lower.includes(n.toLowerCase()));
    };
    await new Promise((r) => setImmediate(r)); // the client's own look for @opentelemetry/api settles
    try {
      const errors = await everyOperationFailing(client);
      for (const error of errors) {
        const text = `${(error as Error).message}\n${JSON.stringify(error)}\n${inspect(error, { depth: 10, showHidden: true })}`;
        expect(text).toContain('[redacted]');
        expect(leaks(text)).toEqual([]);
      }
      const verified = await client.verifyPayment('pay_forms');
      expect(verified.details).toEqual(
        Object.fromEntries(Object.keys(forms).map((k) => [k, k === 'basic' ? 'Basic [redacted]' : '[redacted]'])),
      );
      expect(leaks(JSON.stringify(verified))).toEqual([]);
      // The spans of the failed calls: their attributes (the cancel's code was the upper-cased key) and events.
      const shown = JSON.stringify(
        spans
          .getFinishedSpans()
          .map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      );
      expect(spans.getFinishedSpans().length).toBeGreaterThanOrEqual(6);
      expect(leaks(shown)).toEqual([]);
    } finally {
      await client.close();
      await tracerProvider.shutdown();
      echo.closeAllConnections();
      await new Promise((r) => echo.close(r));
    }
  });

  it('after all that: the captured output is substantial, covers the error paths, and holds no secret', async () => {
    await app.close();
    const everything = [...lines, ...answers].join('\n');
    // The run did go through the paths that log (otherwise the check below proves nothing).
    for (const expected of [
      'handler failed',
      'store unreachable',
      'could not mark',
      'could not release',
      'retrying',
      'STORE_UNAVAILABLE',
      'AUTHENTICATION_FAILED',
      'REFUND_NOT_ALLOWED',
      'TIMEOUT',
      'VALIDATION_FAILED',
      'privateKey',
      'webhook.secret',
      'callback failed',
      'missing or invalid webhook token',
      '[redacted]',
      'NOT confirmed',
      'PaymentMismatchEvent',
    ]) {
      expect(everything).toContain(expected);
    }
    expect(lines.some((l) => l.startsWith('[stderr]'))).toBe(true);
    const found = needles().filter((n) => everything.includes(n));
    const context = found.map((n) =>
      everything.slice(Math.max(0, everything.indexOf(n) - 200), everything.indexOf(n) + 50),
    );
    expect({ found, context }).toEqual({ found: [], context: [] });
  });
});
