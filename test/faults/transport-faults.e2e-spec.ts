import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import type { INestApplicationContext } from '@nestjs/common';
import {
  PaymentsApiError,
  PaymentsClient,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsModule,
  PaymentsService,
} from '../../lib/index.js';
import type { PaymentsLogger, PaymentsOptions } from '../../lib/express/index.js';
import { PATHS } from '../support/fake-service.js';
import { collectUnhandledRejections, rejectionOf, settle } from './support/guards.js';
import { behave, RawHttpServer, type RawBehaviour } from './support/raw-server.js';

const TIMEOUT_MS = 250;
const MAX_RETRIES = 2;
// Worst case of one call: every attempt times out, plus the longest backoffs (100 + 200 ms).
const boundMs = (timeoutMs: number) => (MAX_RETRIES + 1) * timeoutMs + 300 + 2500;
// The over-cap answers test the size cap, not the clock: four 3 MiB bodies at once on a loaded
// machine can take longer than 250 ms to pass 1 MiB, which would end them as TIMEOUT instead.
const CAP_TIMEOUT_MS = 5000;
const MiB = 1024 * 1024;

type Operations = Pick<PaymentsClient, 'generatePayment' | 'refundPayment' | 'cancelPayment' | 'listBindings'>;
const OPS = [
  {
    name: 'generatePayment',
    method: 'POST',
    path: PATHS.generate,
    call: (c: Operations) => c.generatePayment({ amount: '12500' }),
  },
  { name: 'refundPayment', method: 'POST', path: PATHS.refund, call: (c: Operations) => c.refundPayment('pay_1') },
  { name: 'cancelPayment', method: 'POST', path: PATHS.cancel, call: (c: Operations) => c.cancelPayment('pay_1') },
  { name: 'listBindings', method: 'GET', path: PATHS.bindings, call: (c: Operations) => c.listBindings('client-1') },
] as const;

const GOOD: Record<string, RawBehaviour> = {
  [PATHS.generate]: behave.reply(200, {
    result: { success: true, payment_id: 'pay_ok', link: 'https://checkout.example/m/pay_ok' },
    name: 'Payment Service',
    code: 0,
    version: 'v2',
  }),
  [PATHS.refund]: behave.reply(200, {
    result: {
      refund_id: 'ref_1',
      payment_id: 'pay_1',
      amount: '12500',
      status: 'success',
      refunded_at: '2026-01-01T00:00:00Z',
    },
    status: 'success',
  }),
  [PATHS.cancel]: behave.reply(200, {
    result: { payment_id: 'pay_1', status: 'cancelled', cancelled_at: '2026-01-01T00:00:00Z' },
    status: 'success',
  }),
  [PATHS.bindings]: behave.reply(200, { result: { success: true, bindings: [] }, status: 'success' }),
};

type Expected =
  | { type: 'api'; code: string; httpStatus: number; bodyExcerpt?: string; serviceMessage?: string }
  | { type: 'connection'; code: 'TIMEOUT' | 'CONNECTION_FAILED'; reason?: RegExp };

interface Fault {
  name: string;
  behaviour: () => RawBehaviour;
  expected: Expected;
  /** Whether a GET is tried again after it (a POST never is). */
  getRetried: boolean;
  /** The client's `timeoutMs` for this fault; TIMEOUT_MS unless the fault is about something else than time. */
  timeoutMs?: number;
}

const HTML_500 =
  '<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server Error</h1></body></html>';
const HTML_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>';
const TRUNCATED = '{"result":{"success":true,"payment_id":"pay_1","link":"https://checkout.exa';
const SUCCESS_BODY = JSON.stringify({
  result: { success: true, payment_id: 'pay_1', link: 'https://checkout.example/m/pay_1' },
  status: 'success',
});
const flat = (s: string) => s.replace(/\s+/g, ' ').trim();

const FAULTS: Fault[] = [
  {
    name: '500 with an HTML error page',
    behaviour: () => behave.reply(500, HTML_500),
    expected: { type: 'api', code: 'API_ERROR', httpStatus: 500, bodyExcerpt: flat(HTML_500) },
    getRetried: true,
  },
  {
    name: '502 from a proxy (nginx page)',
    behaviour: () => behave.reply(502, HTML_502),
    expected: { type: 'api', code: 'API_ERROR', httpStatus: 502, bodyExcerpt: flat(HTML_502) },
    getRetried: true,
  },
  {
    name: '503 with the nested error shape',
    behaviour: () => behave.reply(503, { result: { status: 503, message: 'Service Unavailable' } }),
    expected: { type: 'api', code: 'API_ERROR', httpStatus: 503, serviceMessage: 'Service Unavailable' },
    getRetried: true,
  },
  {
    name: '504 with an empty body',
    behaviour: () => behave.reply(504, ''),
    expected: { type: 'api', code: 'API_ERROR', httpStatus: 504, bodyExcerpt: '' },
    getRetried: true,
  },
  {
    name: '429 with an empty body',
    behaviour: () => behave.reply(429, '', { 'retry-after': '0' }),
    expected: { type: 'api', code: 'RATE_LIMITED', httpStatus: 429, bodyExcerpt: '' },
    getRetried: true,
  },
  {
    name: '200 with truncated JSON',
    behaviour: () => behave.reply(200, TRUNCATED),
    expected: { type: 'api', code: 'INVALID_RESPONSE', httpStatus: 200, bodyExcerpt: TRUNCATED },
    getRetried: false,
  },
  {
    name: '200 with invalid JSON',
    behaviour: () => behave.reply(200, "{result: {success: true, payment_id: 'pay_1'}}"),
    expected: {
      type: 'api',
      code: 'INVALID_RESPONSE',
      httpStatus: 200,
      bodyExcerpt: "{result: {success: true, payment_id: 'pay_1'}}",
    },
    getRetried: false,
  },
  {
    name: '200 with an HTML page (captive portal)',
    behaviour: () => behave.reply(200, '<html><body>Please log in to the Wi-Fi</body></html>'),
    expected: {
      type: 'api',
      code: 'INVALID_RESPONSE',
      httpStatus: 200,
      bodyExcerpt: '<html><body>Please log in to the Wi-Fi</body></html>',
    },
    getRetried: false,
  },
  {
    name: 'no answer at all within timeoutMs',
    behaviour: () => behave.hang(),
    expected: { type: 'connection', code: 'TIMEOUT' },
    getRetried: true,
  },
  {
    name: 'headers, then silence past timeoutMs',
    behaviour: () => behave.headersThenHang(),
    expected: { type: 'connection', code: 'TIMEOUT' },
    getRetried: true,
  },
  {
    name: 'a body dripping one byte every 40 ms (each byte quick, the whole past timeoutMs)',
    behaviour: () => behave.drip(SUCCESS_BODY, 40),
    expected: { type: 'connection', code: 'TIMEOUT' },
    getRetried: true,
  },
  {
    name: 'the connection closed before any answer',
    behaviour: () => behave.destroy(),
    expected: { type: 'connection', code: 'CONNECTION_FAILED' },
    getRetried: true,
  },
  {
    name: 'a TCP reset before any answer',
    behaviour: () => behave.reset(),
    expected: { type: 'connection', code: 'CONNECTION_FAILED' },
    getRetried: true,
  },
  {
    name: 'headers and half a body (Content-Length), then the connection dies',
    behaviour: () => behave.halfThenDestroy(SUCCESS_BODY),
    expected: { type: 'connection', code: 'CONNECTION_FAILED' },
    getRetried: true,
  },
  {
    name: 'headers and half a chunked body, then the connection dies',
    behaviour: () => behave.halfThenDestroy(SUCCESS_BODY, true),
    expected: { type: 'connection', code: 'CONNECTION_FAILED' },
    getRetried: true,
  },
  {
    name: 'a 2 MiB answer with Content-Length (over the 1 MiB cap)',
    behaviour: () => behave.huge(200, 2 * MiB),
    expected: { type: 'connection', code: 'CONNECTION_FAILED', reason: /1 MiB/ },
    getRetried: false,
    timeoutMs: CAP_TIMEOUT_MS,
  },
  {
    name: 'a 3 MiB chunked answer (over the 1 MiB cap)',
    behaviour: () => behave.huge(200, 3 * MiB, true),
    expected: { type: 'connection', code: 'CONNECTION_FAILED', reason: /1 MiB/ },
    getRetried: false,
    timeoutMs: CAP_TIMEOUT_MS,
  },
  {
    name: 'a 2 MiB error page on 500 (over the 1 MiB cap)',
    behaviour: () => behave.huge(500, 2 * MiB),
    expected: { type: 'connection', code: 'CONNECTION_FAILED', reason: /1 MiB/ },
    getRetried: false,
    timeoutMs: CAP_TIMEOUT_MS,
  },
];

const PRIVATE_KEY = 'sk_faults_private_0123456789';

function quietLogger(lines: string[]): PaymentsLogger {
  return { log: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m) => void lines.push(m) };
}

/**
 * The client's timeout for a fault: a fault that answers at once (an error page, bad JSON) is not
 * about time, and on a loaded machine an attempt can pass TIMEOUT_MS on its own (a TIMEOUT, not the
 * error the answer documents), so those get the cap tests' patient bound.
 */
function timeoutOf(fault: Fault): number {
  return fault.timeoutMs ?? (fault.expected.type === 'api' ? CAP_TIMEOUT_MS : TIMEOUT_MS);
}

function clientOptions(server: RawHttpServer, logLines: string[], timeoutMs = TIMEOUT_MS): PaymentsOptions {
  return {
    publicKey: 'pk_faults',
    privateKey: PRIVATE_KEY,
    baseUrl: server.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    timeoutMs,
    maxRetries: MAX_RETRIES,
    logger: quietLogger(logLines),
  };
}

/** Checks one failed call against the fault's documented error. */
function expectDocumentedError(error: unknown, fault: Fault, op: (typeof OPS)[number], attempts: number) {
  expect(error).toBeInstanceOf(PaymentsError);
  const e = fault.expected;
  if (e.type === 'api') {
    expect(error).toBeInstanceOf(PaymentsApiError);
    const api = error as PaymentsApiError;
    expect({ code: api.code, httpStatus: api.httpStatus, operation: api.operation }).toEqual({
      code: e.code,
      httpStatus: e.httpStatus,
      operation: op.name,
    });
    if (e.bodyExcerpt !== undefined) expect(api.bodyExcerpt).toBe(e.bodyExcerpt);
    if (e.serviceMessage !== undefined) expect(api.serviceMessage).toBe(e.serviceMessage);
  } else {
    expect(error).toBeInstanceOf(PaymentsConnectionError);
    const conn = error as PaymentsConnectionError;
    // A POST that got this far reached the service; a GET is never "processed".
    expect({
      code: conn.code,
      mayHaveBeenProcessed: conn.mayHaveBeenProcessed,
      attempts: conn.attempts,
      operation: conn.operation,
    }).toEqual({
      code: e.code,
      mayHaveBeenProcessed: op.method === 'POST',
      attempts,
      operation: op.name,
    });
    if (e.reason) expect(conn.reason).toMatch(e.reason);
  }
  const text = `${String(error)} ${JSON.stringify(error)}`;
  expect(text).not.toContain(PRIVATE_KEY);
}

const rejections = collectUnhandledRejections();
let server: RawHttpServer;

beforeAll(async () => {
  server = await RawHttpServer.start();
});
afterEach(() => server.reset());
afterAll(async () => {
  await server.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

describe('every fault ends in the documented typed error, within a bounded time (core client)', () => {
  it.each(FAULTS.map((f) => [f.name, f] as const))('%s', async (_name, fault) => {
    const logLines: string[] = [];
    const client = new PaymentsClient(clientOptions(server, logLines, timeoutOf(fault)));
    try {
      for (const op of OPS) server.on(op.path, fault.behaviour());
      // The four operations at once: each on its own path, so the server's counts stay apart.
      const outcomes = await Promise.all(OPS.map((op) => rejectionOf(op.call(client))));
      OPS.forEach((op, i) => {
        const attempts = op.method === 'GET' && fault.getRetried ? MAX_RETRIES + 1 : 1;
        expectDocumentedError(outcomes[i].error, fault, op, attempts);
        expect(outcomes[i].ms).toBeLessThan(boundMs(timeoutOf(fault)));
        // The request count at the server: a POST that may have reached the service is never sent twice.
        expect(server.to(op.path).map((r) => r.method)).toEqual(Array(attempts).fill(op.method));
      });

      // The client is not poisoned: the next calls on the same client succeed.
      for (const [path, good] of Object.entries(GOOD)) server.on(path, good);
      await expect(client.generatePayment({ amount: '1' })).resolves.toEqual({
        paymentId: 'pay_ok',
        link: 'https://checkout.example/m/pay_ok',
      });
      await expect(client.listBindings('client-1')).resolves.toEqual([]);
    } finally {
      await client.close();
    }
    // No socket is left behind once the client is closed.
    expect(await server.settledConnections(2000)).toBe(0);
  });
});

describe('through a Nest app: the same faults, then app.close() leaves no socket open', () => {
  let app: INestApplicationContext;
  let payments: PaymentsService;
  // The over-cap faults' own app, with their longer timeout (see CAP_TIMEOUT_MS).
  let capApp: INestApplicationContext;
  const logLines: string[] = [];

  const startApp = async (timeoutMs: number) => {
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot(clientOptions(server, logLines, timeoutMs))],
    }).compile();
    return moduleRef.createNestApplication({ logger: false }).init();
  };

  beforeAll(async () => {
    app = await startApp(TIMEOUT_MS);
    capApp = await startApp(CAP_TIMEOUT_MS);
    payments = app.get(PaymentsService);
  });
  afterAll(() => capApp.close());

  it('every fault kind, on a POST and on a GET, ends in its typed error; POSTs are sent once', async () => {
    for (const fault of FAULTS) {
      server.reset();
      const post = OPS[0];
      const get = OPS[3];
      server.on(post.path, fault.behaviour()).on(get.path, fault.behaviour());
      const service = timeoutOf(fault) === TIMEOUT_MS ? payments : capApp.get(PaymentsService);
      const [p, g] = await Promise.all([rejectionOf(post.call(service)), rejectionOf(get.call(service))]);
      expectDocumentedError(p.error, fault, post, 1);
      expectDocumentedError(g.error, fault, get, fault.getRetried ? MAX_RETRIES + 1 : 1);
      expect(server.to(post.path)).toHaveLength(1);
      expect(server.to(get.path)).toHaveLength(fault.getRetried ? MAX_RETRIES + 1 : 1);
    }
  });

  it('a call in flight when the app closes settles, and the app leaves no socket open', async () => {
    server.on(PATHS.generate, behave.hang());
    const pending = rejectionOf(payments.generatePayment({ amount: '5' }));
    // Let the request reach the server before closing.
    for (let i = 0; i < 100 && server.to(PATHS.generate).length === 0; i++) await settle(10);
    expect(server.to(PATHS.generate)).toHaveLength(1);
    await app.close();
    const { error, ms } = await pending;
    expect(error).toBeInstanceOf(PaymentsConnectionError);
    expect((error as PaymentsConnectionError).mayHaveBeenProcessed).toBe(true);
    expect(ms).toBeLessThan(boundMs(TIMEOUT_MS));
    expect(server.to(PATHS.generate)).toHaveLength(1);
    expect(await server.settledConnections(2000)).toBe(0);
  });
});
