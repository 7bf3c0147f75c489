import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsApiError, PaymentsClient, PaymentsConnectionError } from '../../lib/index.js';
import type { PaymentsOptions } from '../../lib/express/index.js';
import { backoff } from '../../lib/core/api/http.transport.js';
import { PATHS } from '../support/fake-service.js';
import { collectUnhandledRejections, rejectionOf, settle } from './support/guards.js';
import { behave, RawHttpServer } from './support/raw-server.js';

const BINDINGS = '/api/v2/bindings/list';
const OK_BINDINGS = { result: { success: true, bindings: [] }, status: 'success' };
const BASE_MS = 100; // first backoff step of the transport
const CAP_MS = 5000; // longest single backoff

const rejections = collectUnhandledRejections();
let server: RawHttpServer;
const clients: PaymentsClient[] = [];

function client(extra: Partial<PaymentsOptions>): PaymentsClient {
  const c = new PaymentsClient({
    publicKey: 'pk_retry',
    privateKey: 'sk_retry_0123456789',
    baseUrl: server.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    timeoutMs: 1000,
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    ...extra,
  });
  clients.push(c);
  return c;
}

/** Gaps between successive arrivals at the server, in ms. */
function gaps(path: string): number[] {
  const at = server.to(path).map((r) => r.at);
  return at.slice(1).map((t, i) => t - at[i]);
}

beforeAll(async () => {
  server = await RawHttpServer.start();
});
afterEach(async () => {
  server.reset();
  await Promise.all(clients.splice(0).map((c) => c.close()));
  expect(await server.settledConnections(2000)).toBe(0);
});
afterAll(async () => {
  await server.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

describe('GET retries: exponential backoff with jitter, stopping at maxRetries', () => {
  it('a GET answered 503 every time is tried maxRetries + 1 times, with gaps that grow about twofold', async () => {
    server.on(BINDINGS, behave.reply(503, { result: { status: 503, message: 'Service Unavailable' } }));
    const { error, ms } = await rejectionOf(client({ maxRetries: 4 }).listBindings('client-1'));
    expect(error).toBeInstanceOf(PaymentsApiError);
    expect([(error as PaymentsApiError).code, (error as PaymentsApiError).httpStatus]).toEqual(['API_ERROR', 503]);
    expect(server.to(BINDINGS)).toHaveLength(5);
    const g = gaps(BINDINGS);
    // Attempt n waits between half and all of BASE * 2^(n-1) ("equal jitter"); loopback and timer
    // slack are added on top, so only the lower bound is tight.
    g.forEach((gap, i) => {
      const step = BASE_MS * 2 ** i;
      expect(gap).toBeGreaterThanOrEqual(step / 2 - 2);
      expect(gap).toBeLessThan(step + 400);
    });
    expect(g[2]).toBeGreaterThan(g[0]);
    expect(g[3]).toBeGreaterThan(g[1]);
    expect(ms).toBeLessThan(10_000);
  });

  it.each([0, 1, 3])(
    'maxRetries %i: exactly maxRetries + 1 attempts for a GET that keeps failing',
    async (maxRetries) => {
      server.on(BINDINGS, behave.reset());
      const { error } = await rejectionOf(client({ maxRetries }).listBindings('client-1'));
      expect(error).toBeInstanceOf(PaymentsConnectionError);
      expect([
        (error as PaymentsConnectionError).attempts,
        (error as PaymentsConnectionError).mayHaveBeenProcessed,
      ]).toEqual([maxRetries + 1, false]);
      expect(server.to(BINDINGS)).toHaveLength(maxRetries + 1);
    },
  );

  it('stops retrying as soon as an attempt succeeds', async () => {
    server.on(
      BINDINGS,
      behave.sequence(behave.reply(500, '<html>oops</html>'), behave.reset(), behave.reply(200, OK_BINDINGS)),
    );
    await expect(client({ maxRetries: 5 }).listBindings('client-1')).resolves.toEqual([]);
    expect(server.to(BINDINGS)).toHaveLength(3);
  });

  it('a 429 with Retry-After waits at least that long before the next attempt', async () => {
    server.on(BINDINGS, behave.sequence(behave.reply(429, '', { 'retry-after': '1' }), behave.reply(200, OK_BINDINGS)));
    await expect(client({ maxRetries: 1 }).listBindings('client-1')).resolves.toEqual([]);
    const [gap] = gaps(BINDINGS);
    expect(gap).toBeGreaterThanOrEqual(995);
    expect(gap).toBeLessThan(3000);
  });

  it('a 429 whose Retry-After is longer than one wait (5 s) is not retried: RATE_LIMITED at once, with retryAfterSecs', async () => {
    server.on(
      BINDINGS,
      behave.sequence(behave.reply(429, '', { 'retry-after': '60' }), behave.reply(200, OK_BINDINGS)),
    );
    const { error, ms } = await rejectionOf(client({ maxRetries: 3 }).listBindings('client-1'));
    expect(error).toBeInstanceOf(PaymentsApiError);
    const e = error as PaymentsApiError;
    expect([e.code, e.httpStatus, e.retryAfterSecs]).toEqual(['RATE_LIMITED', 429, 60]);
    expect(server.to(BINDINGS)).toHaveLength(1);
    expect(ms).toBeLessThan(1000);
  });

  it('a 503 with a long Retry-After (HTTP date) is not retried either', async () => {
    const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
    server.on(
      BINDINGS,
      behave.sequence(behave.reply(503, '', { 'retry-after': inTwoMinutes }), behave.reply(200, OK_BINDINGS)),
    );
    const { error } = await rejectionOf(client({ maxRetries: 3 }).listBindings('client-1'));
    const e = error as PaymentsApiError;
    expect([e.code, e.httpStatus]).toEqual(['API_ERROR', 503]);
    expect(e.retryAfterSecs).toBeGreaterThanOrEqual(119);
    expect(e.retryAfterSecs).toBeLessThanOrEqual(121);
    expect(server.to(BINDINGS)).toHaveLength(1);
  });

  it('a GET answered 400 is not retried (a client error will not change)', async () => {
    server.on(BINDINGS, behave.reply(400, { result: { status: 400, message: 'Invalid client_id' } }));
    const { error } = await rejectionOf(client({ maxRetries: 3 }).listBindings('client-1'));
    expect((error as PaymentsApiError).code).toBe('INVALID_CLIENT_ID');
    expect(server.to(BINDINGS)).toHaveLength(1);
  });

  it('a POST is never retried on 5xx, 429, resets or timeouts, whatever maxRetries says', async () => {
    server.on(
      PATHS.generate,
      behave.sequence(behave.reply(503, ''), behave.reply(429, ''), behave.reset(), behave.hang()),
    );
    const c = client({ maxRetries: 5, timeoutMs: 200 });
    for (let i = 0; i < 4; i++) await rejectionOf(c.generatePayment({ amount: '100' }));
    expect(server.to(PATHS.generate)).toHaveLength(4);
  });
});

describe('close() ends retries: a closed client sends nothing more and holds no socket', () => {
  it('a GET waiting for its next attempt when the client closes rejects at once; no further attempt reaches the server', async () => {
    server.on(BINDINGS, behave.reply(503, ''));
    const c = client({ maxRetries: 6 });
    const pending = rejectionOf(c.listBindings('client-1'));
    for (let i = 0; i < 200 && server.to(BINDINGS).length < 2; i++) await settle(5);
    expect(server.to(BINDINGS)).toHaveLength(2); // now waiting 100-200 ms before attempt 3
    const closedAt = performance.now();
    await c.close();
    const { error } = await pending;
    expect(performance.now() - closedAt).toBeLessThan(50);
    expect(error).toBeInstanceOf(PaymentsConnectionError);
    const e = error as PaymentsConnectionError;
    expect([e.code, e.mayHaveBeenProcessed, e.reason]).toEqual(['CONNECTION_FAILED', false, 'the client was closed']);
    await settle(600); // longer than any backoff that would have been due
    expect(server.to(BINDINGS)).toHaveLength(2);
    expect(await server.settledConnections(1000)).toBe(0);
  });

  it('a GET in flight when the client closes is not retried on a new connection', async () => {
    server.on(BINDINGS, behave.hang());
    const c = client({ maxRetries: 6 });
    const pending = rejectionOf(c.listBindings('client-1'));
    for (let i = 0; i < 200 && server.to(BINDINGS).length < 1; i++) await settle(5);
    await c.close();
    const { error } = await pending;
    expect([(error as PaymentsConnectionError).code, (error as PaymentsConnectionError).attempts]).toEqual([
      'CONNECTION_FAILED',
      1,
    ]);
    await settle(300);
    expect(server.to(BINDINGS)).toHaveLength(1);
    expect(server.connectionsOpened).toBe(1);
    expect(await server.settledConnections(1000)).toBe(0);
  });

  it('a call made after close() fails without sending anything', async () => {
    const c = client({});
    await c.close();
    const { error } = await rejectionOf(c.generatePayment({ amount: '100' }));
    expect([
      (error as PaymentsConnectionError).code,
      (error as PaymentsConnectionError).mayHaveBeenProcessed,
      (error as PaymentsConnectionError).attempts,
    ]).toEqual(['CONNECTION_FAILED', false, 0]);
    expect(server.requests).toHaveLength(0);
    expect(server.connectionsOpened).toBe(0);
  });
});

describe('backoff()', () => {
  it('draws each delay between half and all of BASE * 2^(attempt-1), spread over that range (jitter)', () => {
    for (let attempt = 1; attempt <= 6; attempt++) {
      const step = Math.min(CAP_MS, BASE_MS * 2 ** (attempt - 1));
      const draws = Array.from({ length: 2000 }, () => backoff(attempt));
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(step / 2);
      expect(Math.max(...draws)).toBeLessThanOrEqual(step);
      // Spread over the range: with 2000 uniform draws, both quarters of it are hit.
      expect(draws.some((d) => d < step / 2 + step / 8)).toBe(true);
      expect(draws.some((d) => d > step - step / 8)).toBe(true);
      expect(new Set(draws.map((d) => Math.round(d))).size).toBeGreaterThan(Math.min(20, step / 4));
    }
  });

  it('never waits longer than 5 s', () => {
    for (let attempt = 1; attempt <= 20; attempt++) expect(backoff(attempt)).toBeLessThanOrEqual(CAP_MS);
  });
});
