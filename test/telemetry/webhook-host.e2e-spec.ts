/**
 * The settle a webhook delivery starts records onto the delivery's span, found in the active
 * OpenTelemetry context its `within()` set, not in state of the telemetry instance: concurrent
 * deliveries each keep their own span whatever the interleaving, a second settle (a handler's own)
 * gets a span of its own, and another client's settle never records onto this client's delivery.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { PaymentsTelemetry } from '../../lib/core/telemetry/telemetry.otel.js';
import { startSdk, type TestSdk } from './otel-sdk.js';

let sdk: TestSdk;
const tick = () => new Promise((resolve) => setImmediate(resolve));
const spanId = (s: ReadableSpan) => s.spanContext().spanId;
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;

beforeAll(() => {
  sdk = startSdk();
});
afterAll(async () => {
  await sdk.shutdown();
});

// What a settle's result says to telemetry (the engine's own results are summarised by settlement.runner.ts).
const summary = (result: { kind: string; outcome?: string }) => ({
  result: result.kind,
  outcome: result.outcome,
  failed: false,
});

it('concurrent deliveries: each settle records onto its own delivery span, whatever the interleaving', async () => {
  const telemetry = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 60_000 }, { registration: 'host' });
  expect(await telemetry.ready()).toBe(true);
  sdk.spans.reset();
  const active: Record<string, string | undefined> = {};
  const deliver = async (paymentId: string, waits: number) => {
    const delivery = telemetry.webhook('/payments/webhook/:token');
    // Authentication, then the settle started after awaits (as a store round trip would).
    await delivery.within(tick);
    const result = await delivery.within(async () => {
      for (let n = 0; n < waits; n++) await tick();
      return telemetry.settle(
        paymentId,
        'webhook',
        async (settle) => {
          await tick();
          await settle.handlers('payment.confirmed', async () => {
            active[paymentId] = trace.getActiveSpan()?.spanContext().spanId;
          });
          return { kind: 'handled', outcome: 'confirmed' };
        },
        summary,
      );
    });
    delivery.end(200, result.kind, paymentId);
  };
  // The second delivery starts first and settles last.
  await Promise.all([deliver('pay_a', 3), deliver('pay_b', 0), deliver('pay_c', 1)]);

  const spans = sdk.finished();
  expect(spans.filter((s) => s.name === 'payments settle')).toHaveLength(0);
  const webhooks = spans.filter((s) => s.name === 'payments webhook');
  expect(webhooks).toHaveLength(3);
  for (const span of webhooks) {
    const id = span.attributes['payments.payment_id'] as string;
    expect(span.attributes).toMatchObject({
      'payments.source': 'webhook',
      'payments.settle.result': 'handled',
      'payments.registration': 'host',
    });
    expect(typeof span.attributes['payments.handlers.duration_ms']).toBe('number');
    // The handlers ran in their own delivery's span.
    expect(active[id]).toBe(spanId(span));
  }
  expect(new Set(webhooks.map((s) => s.attributes['payments.payment_id']))).toEqual(
    new Set(['pay_a', 'pay_b', 'pay_c']),
  );
  telemetry.close();
});

it("another client's settle, and a handler's own, get spans of their own under the delivery", async () => {
  const telemetry = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 60_000 });
  const other = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 60_000 }, { registration: 'other' });
  expect(await telemetry.ready()).toBe(true);
  expect(await other.ready()).toBe(true);
  sdk.spans.reset();
  const handled = { kind: 'handled', outcome: 'confirmed' };
  const delivery = telemetry.webhook('/payments/webhook/:token');
  // Another client's settle inside this client's delivery (say, the authentication asked it).
  await delivery.within(() => other.settle('pay_other', 'return', async () => handled, summary));
  await delivery.within(() =>
    telemetry.settle(
      'pay_1',
      'webhook',
      async (settle) => {
        await settle.handlers('payment.confirmed', () =>
          telemetry.settle('pay_2', 'return', async () => handled, summary),
        );
        return handled;
      },
      summary,
    ),
  );
  delivery.end(200, 'handled', 'pay_1');

  const spans = sdk.finished();
  const [webhook] = spans.filter((s) => s.name === 'payments webhook');
  const settles = spans.filter((s) => s.name === 'payments settle');
  expect(settles.map((s) => [s.attributes['payments.payment_id'], s.attributes['payments.source']]).sort()).toEqual([
    ['pay_2', 'return'],
    ['pay_other', 'return'],
  ]);
  for (const settle of settles) expect(parentId(settle)).toBe(spanId(webhook));
  expect(
    settles.find((s) => s.attributes['payments.payment_id'] === 'pay_other')!.attributes['payments.registration'],
  ).toBe('other');
  // This client's own settle recorded onto its delivery.
  expect(webhook.attributes).toMatchObject({
    'payments.source': 'webhook',
    'payments.settle.result': 'handled',
    'payments.payment_id': 'pay_1',
  });
  telemetry.close();
  other.close();
});
