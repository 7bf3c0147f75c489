/**
 * Tracing and metrics (lib/core/telemetry/) with the OpenTelemetry SDK's in-memory
 * exporters, against a real loopback fake of the service: span names, kinds, attributes and
 * parents; the handler running inside the settle span; metrics by operation, status, source and
 * result; the backlog gauge; and no secret in any span or metric.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { context, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { loadTelemetryApi } from '../../lib/core/telemetry/telemetry.loader.js';
import { METRIC_NAMES } from '../../lib/core/telemetry/telemetry.names.js';
import { PaymentsTelemetry } from '../../lib/core/telemetry/telemetry.otel.js';
import { webhookProbeUrl } from '../../lib/core/webhook/webhook.probe.js';
import { FakeService, PATHS } from '../support/fake-service.js';
import { generateAnswer, verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { startSdk, total, type TestSdk } from './otel-sdk.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const PUBLIC_KEY = 'pk_telemetry';
const PRIVATE_KEY = 'sk_telemetry_private_9876543210';
const SECRET = 'telemetry-webhook-secret-0123456789abcdef';

describe('telemetry with @opentelemetry/api and the SDK registered', () => {
  let fake: FakeService;
  let sdk: TestSdk;
  let client: PaymentsClient;
  const tokens: string[] = [];
  const handlerSpans: Array<string | undefined> = [];

  const spanId = (s: ReadableSpan) => s.spanContext().spanId;
  const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
  const named = (name: string) => sdk.finished().filter((s) => s.name === name);

  /** Generates a payment through the client and returns the token of its signed webhook URL. */
  async function generate(paymentId: string, trackingId: string): Promise<string> {
    fake.reply(PATHS.generate, { status: 200, body: generateAnswer(paymentId, { trackingId }) });
    await client.generatePayment({ amount: '12500', developerTrackingId: trackingId });
    const sent = JSON.parse(fake.requests.at(-1)!.body) as { webhook: string };
    const token = sent.webhook.split('/').pop()!;
    tokens.push(token);
    return token;
  }

  beforeAll(async () => {
    expect(await loadTelemetryApi()).toBe(true);
    sdk = startSdk();
    fake = await FakeService.start();
    client = new PaymentsClient({
      publicKey: PUBLIC_KEY,
      privateKey: PRIVATE_KEY,
      baseUrl: fake.url,
      maxRetries: 1,
      name: 'shop',
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
      reconciliation: { enabled: false },
      telemetry: { backlogIntervalSecs: 3600 },
    });
    client.setHandlers(
      outcomeHandlers(async () => {
        handlerSpans.push(trace.getActiveSpan()?.spanContext().spanId);
      }),
    );
  });
  afterEach(() => fake.reset());
  afterAll(async () => {
    await client.close();
    await fake.close();
    await sdk.shutdown();
    // No secret in any span name or attribute, nor in any metric attribute, of the whole suite.
    const everything = JSON.stringify(
      sdk.finished().map((s) => ({ name: s.name, attributes: s.attributes, status: s.status, events: s.events })),
    );
    for (const secret of [PRIVATE_KEY, SECRET, 'Bearer', ...tokens]) expect(everything).not.toContain(secret);
  });

  it('a webhook delivery: one webhook span (also its settle) -> verify CLIENT span; the handler runs in the webhook span', async () => {
    const token = await generate('pay_w1', 'order-w1');
    sdk.spans.reset();
    fake.reply(verifyPath('pay_w1'), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount: 12500, trackingId: 'order-w1' }),
    });
    const answer = await client.webhooks.handle({ query: {}, body: { payment_id: 'pay_w1' }, pathToken: token });
    expect(answer.status).toBe(200);

    expect(sdk.finished().map((s) => s.name)).toEqual(['payments verifyPayment', 'payments webhook']);
    const [webhook] = named('payments webhook');
    const [verify] = named('payments verifyPayment');
    expect(webhook.kind).toBe(SpanKind.SERVER);
    expect(webhook.attributes).toMatchObject({
      'http.route': '/payments/webhook/:token',
      'http.response.status_code': 200,
      'payments.webhook.result': 'handled',
      'payments.payment_id': 'pay_w1',
      'payments.registration': 'shop',
      // The settle it started recorded onto it.
      'payments.source': 'webhook',
      'payments.outcome': 'confirmed',
      'payments.settle.result': 'handled',
    });
    expect(typeof webhook.attributes['payments.handlers.duration_ms']).toBe('number');
    expect(verify.kind).toBe(SpanKind.CLIENT);
    expect(parentId(verify)).toBe(spanId(webhook));
    expect(verify.attributes).toEqual({
      'payments.registration': 'shop',
      'payments.operation': 'verifyPayment',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'payments.attempts': 1,
      'url.template': '/api/v2/verify_payment/{payment_id}',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(fake.url).port),
    });
    expect(verify.status.code).not.toBe(SpanStatusCode.ERROR);
    // The handler saw the delivery's span as the active one.
    expect(handlerSpans.at(-1)).toBe(spanId(webhook));
  });

  it('a forged delivery: a 401 webhook span, no settle, no call to the service', async () => {
    sdk.spans.reset();
    const answer = await client.webhooks.handle({
      query: {},
      body: { payment_id: 'pay_forged' },
      pathToken: 'x'.repeat(40),
    });
    expect(answer.status).toBe(401);
    expect(fake.requests).toHaveLength(0);
    expect(sdk.finished().map((s) => s.name)).toEqual(['payments webhook']);
    expect(named('payments webhook')[0].attributes).toMatchObject({
      'http.response.status_code': 401,
      'payments.webhook.result': 'rejected',
    });
    expect(named('payments webhook')[0].attributes['payments.payment_id']).toBeUndefined();
  });

  it('a duplicate delivery settles without a verify call', async () => {
    sdk.spans.reset();
    const answer = await client.webhooks.handle({ query: {}, body: { payment_id: 'pay_w1' }, pathToken: tokens[0] });
    expect(answer).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(named('payments verifyPayment')).toHaveLength(0);
    expect(named('payments settle')).toHaveLength(0);
    expect(named('payments webhook')[0].attributes).toMatchObject({ 'payments.settle.result': 'duplicate' });
  });

  it('the return path (reconcilePayment) and a failing handler: settle span in error, handler still in its context', async () => {
    await generate('pay_r1', 'order-r1');
    sdk.spans.reset();
    client.setHandlers(
      outcomeHandlers(async () => {
        handlerSpans.push(trace.getActiveSpan()?.spanContext().spanId);
        throw new Error('the shop database is down');
      }),
    );
    fake.reply(verifyPath('pay_r1'), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount: 12500, trackingId: 'order-r1' }),
    });
    const result = await client.reconcilePayment('pay_r1');
    expect(result).toMatchObject({ handled: false, error: expect.any(String) });
    const [settle] = named('payments settle');
    expect(settle.attributes).toMatchObject({
      'payments.source': 'return',
      'payments.settle.result': 'handlers-failed',
      'error.type': 'handlers-failed',
      'payments.outcome': 'confirmed',
    });
    expect(settle.status.code).toBe(SpanStatusCode.ERROR);
    expect(handlerSpans.at(-1)).toBe(spanId(settle));
    expect(parentId(named('payments verifyPayment')[0])).toBe(spanId(settle));

    // Then the handler works again: reconciliation settles it, under a reconciliation span.
    client.setHandlers(
      outcomeHandlers(async () => {
        handlerSpans.push(trace.getActiveSpan()?.spanContext().spanId);
      }),
    );
    sdk.spans.reset();
    fake.reply(verifyPath('pay_r1'), {
      status: 200,
      body: verifyAnswer({ status: 'SUCCESS', amount: 12500, trackingId: 'order-r1' }),
    });
    const run = await client.runReconciliation(Date.now() + 48 * 3600_000);
    expect(run.settled).toBeGreaterThanOrEqual(1);
    const [pass] = named('payments reconciliation');
    const settles = named('payments settle');
    expect(settles.length).toBeGreaterThanOrEqual(1);
    for (const s of settles) {
      expect(parentId(s)).toBe(spanId(pass));
      expect(s.attributes['payments.source']).toBe('reconciliation');
    }
    expect(pass.attributes).toMatchObject({
      'payments.reconciliation.settled': run.settled,
      'payments.reconciliation.checked': run.checked,
    });
  });

  it('calls to the service: retries counted, error codes, may-have-been-processed, nothing secret', async () => {
    sdk.spans.reset();
    fake.reply(
      verifyPath('pay_503'),
      { status: 503, body: 'busy' },
      { status: 200, body: verifyAnswer({ status: 'PENDING' }) },
    );
    await client.verifyPayment('pay_503');
    expect(named('payments verifyPayment')[0].attributes).toMatchObject({
      'payments.attempts': 2,
      'http.response.status_code': 200,
    });
    // One logical operation: semconv's per-request attribute is left to HTTP instrumentations.
    expect(named('payments verifyPayment')[0].attributes['http.request.resend_count']).toBeUndefined();

    fake.reply(PATHS.refund, { status: 401, body: { status: 'error', message: 'bad key', code: 'UNAUTHORIZED' } });
    await expect(client.refundPayment('pay_1')).rejects.toMatchObject({ code: 'AUTHENTICATION_FAILED' });
    const [refund] = named('payments refundPayment');
    expect(refund.kind).toBe(SpanKind.CLIENT);
    expect(refund.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 401,
      'error.type': 'AUTHENTICATION_FAILED',
      'url.template': '/api/v2/refund_payment',
    });
    expect(refund.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'AUTHENTICATION_FAILED' });

    fake.reply(PATHS.cancel, { destroy: true });
    await expect(client.cancelPayment('pay_1')).rejects.toMatchObject({
      code: 'CONNECTION_FAILED',
      mayHaveBeenProcessed: true,
    });
    expect(named('payments cancelPayment')[0].attributes).toMatchObject({
      'error.type': 'CONNECTION_FAILED',
      'payments.may_have_been_processed': true,
      'payments.attempts': 1,
    });
  });

  it('metrics: operations by result and attempts, webhook answers, outcomes by kind and path, verify calls per settled payment, backlog', async () => {
    const points = await sdk.points();
    expect(new Set(points.map((p) => p.name))).toEqual(
      new Set([
        METRIC_NAMES.clientDuration,
        METRIC_NAMES.webhookDuration,
        METRIC_NAMES.settleDuration,
        METRIC_NAMES.backlog,
      ]),
    );
    const calls = (match: Record<string, unknown>) => total(points, METRIC_NAMES.clientDuration, match);
    expect(calls({ 'payments.operation': 'verifyPayment', 'http.response.status_code': 200 })).toBe(4);
    // The retried verify: one operation, two attempts.
    expect(calls({ 'payments.operation': 'verifyPayment', 'payments.attempts': 2 })).toBe(1);
    expect(
      calls({
        'payments.operation': 'refundPayment',
        'error.type': 'AUTHENTICATION_FAILED',
        'http.response.status_code': 401,
      }),
    ).toBe(1);
    const ok = points.filter(
      (p) =>
        p.name === METRIC_NAMES.clientDuration &&
        p.attributes['payments.operation'] === 'generatePayment' &&
        p.attributes['error.type'] === undefined,
    );
    expect(ok.reduce((sum, p) => sum + p.value, 0)).toBe(2);
    expect(calls({ 'payments.operation': 'cancelPayment', 'error.type': 'CONNECTION_FAILED' })).toBe(1);
    // The span-only attributes stay off the metric (the SDK hashes every attribute on every record).
    for (const p of points.filter((x) => x.name === METRIC_NAMES.clientDuration)) {
      expect(
        Object.keys(p.attributes).filter(
          (k) =>
            ![
              'payments.registration',
              'payments.operation',
              'http.response.status_code',
              'error.type',
              'payments.attempts',
            ].includes(k),
        ),
      ).toEqual([]);
    }
    expect(total(points, METRIC_NAMES.webhookDuration, { 'http.response.status_code': 200 })).toBe(2);
    expect(
      total(points, METRIC_NAMES.webhookDuration, {
        'http.response.status_code': 401,
        'payments.webhook.result': 'rejected',
      }),
    ).toBe(1);
    const settles = (match: Record<string, unknown>) => total(points, METRIC_NAMES.settleDuration, match);
    expect(
      settles({ 'payments.source': 'webhook', 'payments.settle.result': 'handled', 'payments.outcome': 'confirmed' }),
    ).toBe(1);
    expect(settles({ 'payments.settle.result': 'duplicate' })).toBe(1);
    expect(settles({ 'payments.source': 'return', 'payments.settle.result': 'handlers-failed' })).toBe(1);
    // Verify calls per settled payment, from the histograms' counts: two payments settled (handled),
    // with one verify each plus one for the failed handler's attempt (3 requests), and the app's own
    // verifyPayment of pay_503, retried once (2 requests).
    const settled =
      settles({ 'payments.settle.result': 'handled' }) + settles({ 'payments.settle.result': 'mismatch' });
    expect(settled).toBe(2);
    const verifyRequests = points
      .filter((p) => p.name === METRIC_NAMES.clientDuration && p.attributes['payments.operation'] === 'verifyPayment')
      .reduce((sum, p) => sum + p.value * Number(p.attributes['payments.attempts'] ?? 1), 0);
    expect(verifyRequests).toBe(3 + 2);
    // Both payments are settled: the backlog is empty. Every metric carries the registration.
    expect(points.find((p) => p.name === METRIC_NAMES.backlog)).toMatchObject({
      value: 0,
      attributes: { 'payments.registration': 'shop' },
    });
    for (const p of points) expect(p.attributes['payments.registration']).toBe('shop');
    const attributes = JSON.stringify(points.map((p) => p.attributes));
    for (const secret of [PRIVATE_KEY, SECRET, ...tokens]) expect(attributes).not.toContain(secret);
  });

  it('reads the backlog at most once per interval, however often metrics are collected', async () => {
    let reads = 0;
    const counting = client.store;
    const original = counting.countPending.bind(counting);
    counting.countPending = async () => {
      reads++;
      return original();
    };
    await generate('pay_b1', 'order-b1');
    await sdk.points();
    await sdk.points();
    await sdk.points();
    counting.countPending = original;
    // The first collection of the suite read it; the interval (1 h) has not passed since.
    expect(reads).toBe(0);
  });

  it('a set-up probe: a 200 webhook span with the result probe, no settle, no call to the service', async () => {
    sdk.spans.reset();
    const probe = new URL(webhookProbeUrl('https://shop.example/payments/webhook', SECRET)).pathname.split('/').pop()!;
    tokens.push(probe);
    const answer = await client.webhooks.handle({ query: {}, body: {}, pathToken: probe });
    expect(answer).toEqual({ status: 200, body: { received: true, probe: true } });
    expect(fake.requests).toHaveLength(0);
    expect(sdk.finished().map((s) => s.name)).toEqual(['payments webhook']);
    expect(named('payments webhook')[0].attributes).toMatchObject({
      'http.response.status_code': 200,
      'payments.webhook.result': 'probe',
    });
  });
});

describe('telemetry off', () => {
  it('with the API but no SDK registered, is inactive (no no-op spans); an SDK registered later is picked up', async () => {
    expect(await loadTelemetryApi()).toBe(true);
    trace.disable();
    metrics.disable();
    context.disable();
    const telemetry = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 1000 });
    // Each instance looks for the API itself (asynchronously under this ES-module runner).
    expect(await telemetry.ready()).toBe(true);
    expect(telemetry.active).toBe(false);
    const sdk = startSdk();
    expect(telemetry.active).toBe(true);
    await sdk.shutdown();
    expect(telemetry.active).toBe(false);
  });

  it('telemetry: false records nothing, even with the SDK registered', async () => {
    expect(await loadTelemetryApi()).toBe(true);
    const sdk = startSdk();
    const fake = await FakeService.start();
    const client = new PaymentsClient({
      publicKey: PUBLIC_KEY,
      privateKey: PRIVATE_KEY,
      baseUrl: fake.url,
      reconciliation: { enabled: false },
      telemetry: false,
    });
    try {
      fake.reply(verifyPath('pay_off'), { status: 200, body: verifyAnswer({ status: 'PENDING' }) });
      await client.verifyPayment('pay_off');
      expect(sdk.finished()).toEqual([]);
      expect((await sdk.points()).filter((p) => p.name.startsWith('payments') || p.name.startsWith('http'))).toEqual(
        [],
      );
    } finally {
      await client.close();
      await fake.close();
      await sdk.shutdown();
    }
  });
});
