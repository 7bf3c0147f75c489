import type * as OtelApi from '@opentelemetry/api';
import type { CallStats, WebhookTrace } from './telemetry.hooks.js';
import type { Attributes, Instruments } from './telemetry.instruments.js';
import { SPAN_NAMES } from './telemetry.names.js';

/** A webhook delivery's span, in the context its `within()` makes active, for the settle it starts. */
export interface HostSpan {
  span: OtelApi.Span;
  /** A settle has recorded onto it: later settles (a handler's own) get spans of their own. */
  adopted: boolean;
}

/**
 * Starts the span of one webhook delivery (see {@link PaymentsTelemetry.webhook}).
 * @param i the instruments
 * @param common the attributes every record carries (the registration)
 * @param hostKey where the delivery's `within()` puts its {@link HostSpan} in the context
 * @param route the route template (never the token itself)
 */
export function startWebhookSpan(i: Instruments, common: Attributes, hostKey: symbol, route: string): WebhookTrace {
  const { api: otel } = i;
  const parent = otel.context.active();
  const span = i.tracer.startSpan(
    SPAN_NAMES.webhook,
    {
      kind: otel.trace.getSpan(parent) ? otel.SpanKind.INTERNAL : otel.SpanKind.SERVER,
      attributes: { ...common, 'http.route': route },
    },
    parent,
  );
  const host: HostSpan = { span, adopted: false };
  const inside = otel.trace.setSpan(parent, span).setValue(hostKey, host);
  const started = performance.now();
  let ended = false;
  return {
    within: (run) => otel.context.with(inside, run),
    end: (status, result, paymentId) => {
      if (ended) return;
      ended = true;
      span.setAttribute('http.response.status_code', status);
      span.setAttribute('payments.webhook.result', result);
      if (paymentId !== undefined) span.setAttribute('payments.payment_id', paymentId);
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: result });
      }
      span.end();
      i.webhookDuration.record((performance.now() - started) / 1000, {
        ...common,
        'http.response.status_code': status,
        'payments.webhook.result': result,
      });
    },
  };
}

/**
 * Runs one reconciliation pass inside its span (see {@link PaymentsTelemetry.reconciliation}).
 * @param i the instruments
 * @param common the attributes every record carries (the registration)
 * @param run the pass, told how many payments were due
 */
export function traceReconciliation<R extends { checked: number; settled: number }>(
  i: Instruments,
  common: Attributes,
  run: (due: (count: number) => void) => Promise<R>,
): Promise<R> {
  const { api: otel } = i;
  const span = i.tracer.startSpan(SPAN_NAMES.reconciliation, {
    kind: otel.SpanKind.INTERNAL,
    attributes: { ...common },
  });
  return otel.context
    .with(otel.trace.setSpan(otel.context.active(), span), () =>
      run((count) => span.setAttribute('payments.reconciliation.due', count)),
    )
    .then(
      (result) => {
        span.setAttributes({
          'payments.reconciliation.checked': result.checked,
          'payments.reconciliation.settled': result.settled,
        });
        span.end();
        return result;
      },
      (error: unknown) => {
        span.setStatus({ code: otel.SpanStatusCode.ERROR });
        span.end();
        throw error;
      },
    );
}

// What a failed call says, without its message (an excerpt of the service's answer has no place
// in telemetry): the error's stable code, returned, and on the span whether it may have been
// processed (connection errors) and the attempts the error counted.
export function callFailure(error: unknown, stats: CallStats, span: OtelApi.Span): string {
  const e = error as {
    code?: unknown;
    httpStatus?: unknown;
    mayHaveBeenProcessed?: unknown;
    attempts?: unknown;
  } | null;
  const type =
    typeof e?.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code)
      ? e.code
      : error instanceof Error
        ? error.name
        : 'unknown';
  if (typeof e?.mayHaveBeenProcessed === 'boolean')
    span.setAttribute('payments.may_have_been_processed', e.mayHaveBeenProcessed);
  if (typeof e?.attempts === 'number' && e.attempts > stats.attempts) stats.attempts = e.attempts;
  if (typeof e?.httpStatus === 'number' && stats.status === undefined) stats.status = e.httpStatus;
  return type;
}
