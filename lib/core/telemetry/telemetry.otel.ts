/**
 * The {@link TelemetryHooks} implemented with `@opentelemetry/api`, an optional peer dependency
 * (found by a {@link TelemetryApiLoader} each instance owns). Without the package, or with
 * `telemetry: false`, every hook is {@link NO_TELEMETRY}'s: a plain function call that runs the
 * wrapped work and nothing else (no span, no context switch, no clock read).
 *
 * No attribute ever holds a key, the webhook secret, a webhook token, a full URL or a header: only
 * operation names, HTTP methods and statuses, route templates, error codes, counts, durations, the
 * registration's name and payment ids (the service's ids, not secrets).
 *
 * Cost, when recording: one span and one metric record per call to the service, and per webhook
 * confirmation two spans (the delivery, which is also its settle's span, and the verify call) and
 * three metric records; one context switch per `within()` of a delivery and per settle that is
 * not a delivery's, so that the verify call and the handlers run in the span's context, and none
 * elsewhere. Metric attributes are the few that tell series apart (what the span alone needs stays
 * on the span), since the SDK hashes them on every record.
 */
import type * as OtelApi from '@opentelemetry/api';
import type { PaymentsOperation } from '../api/index.js';
import type { OutcomeSource, PaymentsStore } from '../store/index.js';
import { otelApiOf, type OtelApiModule } from './telemetry.api.js';
import {
  NO_TELEMETRY,
  type CallStats,
  type SettleSummary,
  type SettleTrace,
  type TelemetryHooks,
  type WebhookTrace,
} from './telemetry.hooks.js';
import { TelemetryApiLoader } from './telemetry.loader.js';
import { HEALTH_PROBE_KEY, METRIC_NAMES, SPAN_NAMES, TELEMETRY_SCOPE } from './telemetry.names.js';
import { TELEMETRY_OFF, type TelemetryContext, type TelemetrySettings } from './telemetry.settings.js';

// The tracer, meter and instruments one telemetry instance records with, built on first use (after the
// SDK has registered its providers) and again when the global providers change, and the backlog
// gauge's throttled store read.
/** Attribute values are strings, numbers or booleans. */
type Attributes = Record<string, string | number | boolean>;

/** What a telemetry instance records with. */
interface Instruments {
  /** The API they were built with. */
  api: OtelApiModule;
  /** The global providers these were built for (undefined when the options gave providers). */
  meterProvider?: OtelApi.MeterProvider;
  /** The global tracer provider's delegate these were built for. */
  tracerDelegate?: unknown;
  /** Built over the API's no-op providers: record nothing. */
  noop: boolean;
  /** The scope's tracer. */
  tracer: OtelApi.Tracer;
  /** {@link METRIC_NAMES}.clientDuration */
  clientDuration: OtelApi.Histogram;
  /** {@link METRIC_NAMES}.webhookDuration */
  webhookDuration: OtelApi.Histogram;
  /** {@link METRIC_NAMES}.settleDuration */
  settleDuration: OtelApi.Histogram;
  /** {@link METRIC_NAMES}.backlog */
  backlog: OtelApi.ObservableGauge;
  /** The gauge's callback (removed on close and when rebuilt). */
  observeBacklog: OtelApi.ObservableCallback;
}

/** The package's version, for the instrumentation scope (kept in step by hand, like CHANGELOG.md). */
const PACKAGE_VERSION = '0.1.0';
/** The bucket boundaries semconv advises for HTTP durations (s). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The instruments of one telemetry instance, and the backlog gauge's state. */
class TelemetryInstruments {
  readonly #settings: TelemetrySettings;
  readonly #loader: TelemetryApiLoader;
  readonly #common: Attributes;
  readonly #store?: PaymentsStore;
  /** undefined: not built yet; null: nothing can ever be recorded (telemetry off, no API). */
  #instruments?: Instruments | null;
  #backlog?: { value?: number; at: number; reading?: Promise<void> };
  #closed = false;

  /**
   * @param settings the resolved `telemetry` option
   * @param loader finds `@opentelemetry/api` (looked for now, when telemetry is on)
   * @param common the attributes of every data point (the registration's name)
   * @param store read by the backlog gauge
   */
  constructor(settings: TelemetrySettings, loader: TelemetryApiLoader, common: Attributes, store?: PaymentsStore) {
    this.#settings = settings;
    this.#loader = loader;
    this.#common = common;
    this.#store = store;
    if (settings.enabled) loader.get();
    else this.#instruments = null;
  }

  /** Resolves once the API has been looked for: true when telemetry is on and `@opentelemetry/api` was found. */
  async ready(): Promise<boolean> {
    if (this.#instruments === null) return false;
    return this.#loader.load();
  }

  /** Stops observing the backlog (the client is closing). */
  close(): void {
    this.#closed = true;
    if (this.#instruments) this.#instruments.backlog.removeCallback(this.#instruments.observeBacklog);
  }

  /**
   * The instruments; null while nothing can be recorded: no API (yet), telemetry off, or the
   * API's no-op providers only (no SDK registered: then a call costs two global lookups, not a
   * no-op span and context switch).
   */
  get(): Instruments | null {
    const cached = this.#instruments;
    if (cached === null) return null;
    const otel = cached?.api ?? otelApiOf(this.#loader.get());
    if (!otel) {
      if (otel === null) this.#instruments = null;
      return null;
    }
    if (this.#settings.meterProvider || this.#settings.tracerProvider)
      return (this.#instruments = cached ?? this.#build(otel, undefined, undefined));
    const meterProvider = otel.metrics.getMeterProvider();
    const tracerDelegate = (otel.trace.getTracerProvider() as { getDelegate?: () => unknown }).getDelegate?.();
    if (cached && cached.meterProvider === meterProvider && cached.tracerDelegate === tracerDelegate)
      return cached.noop ? null : cached;
    if (cached) cached.backlog.removeCallback(cached.observeBacklog);
    const built = this.#build(otel, meterProvider, tracerDelegate);
    this.#instruments = built;
    return built.noop ? null : built;
  }

  #build(otel: OtelApiModule, meterProvider: OtelApi.MeterProvider | undefined, tracerDelegate: unknown): Instruments {
    const version = PACKAGE_VERSION;
    const tracer = this.#settings.tracerProvider
      ? (this.#settings.tracerProvider.getTracer(TELEMETRY_SCOPE, version) as OtelApi.Tracer)
      : otel.trace.getTracer(TELEMETRY_SCOPE, version);
    const meter = (
      this.#settings.meterProvider
        ? this.#settings.meterProvider.getMeter(TELEMETRY_SCOPE, version)
        : (meterProvider ?? otel.metrics.getMeterProvider()).getMeter(TELEMETRY_SCOPE, version)
    ) as OtelApi.Meter;
    // The API's own no-op providers: a fresh ProxyTracerProvider delegates to the no-op one.
    const noop =
      !this.#settings.tracerProvider &&
      !this.#settings.meterProvider &&
      meter === otel.createNoopMeter() &&
      tracerDelegate === new otel.ProxyTracerProvider().getDelegate();
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: HTTP_BUCKETS } });
    const backlog = meter.createObservableGauge(METRIC_NAMES.backlog, {
      unit: '{payment}',
      description: 'Payments queued for reconciliation (store.countPending(), read at most once per backlog interval)',
    });
    const observeBacklog: OtelApi.ObservableCallback = async (result) => {
      const value = await this.#readBacklog();
      if (value !== undefined) result.observe(value, this.#common);
    };
    if (this.#store && !this.#closed && !noop) backlog.addCallback(observeBacklog);
    return {
      api: otel,
      meterProvider,
      tracerDelegate,
      noop,
      tracer,
      clientDuration: seconds(
        METRIC_NAMES.clientDuration,
        'Duration of operations on the payment service, retries and backoff included',
      ),
      webhookDuration: seconds(METRIC_NAMES.webhookDuration, 'Time to answer a webhook delivery, by status and result'),
      settleDuration: seconds(
        METRIC_NAMES.settleDuration,
        'Duration of one settle (claim, verify, handlers, done) by source, result and outcome',
      ),
      backlog,
      observeBacklog,
    };
  }

  // countPending() at most once per interval (collections may be frequent; the store may be remote).
  async #readBacklog(): Promise<number | undefined> {
    const state = (this.#backlog ??= { at: -Infinity });
    if (this.#closed || !this.#store) return state.value;
    if (performance.now() - state.at >= this.#settings.backlogIntervalMs) {
      state.reading ??= this.#store
        .countPending()
        .then(
          (n) => {
            state.value = n;
          },
          () => undefined, // keep the last value; the store's health is the health check's business
        )
        .finally(() => {
          state.at = performance.now();
          state.reading = undefined;
        });
      await state.reading;
    }
    return state.value;
  }
}

/** The work a settle wraps. */
type SettleRun<R> = (trace: SettleTrace) => Promise<R>;

/** Static attributes of one operation's calls, built once per client and operation. */
interface CallAttributes {
  span: Attributes;
  name: string;
}

/**
 * The plugin's hooks into tracing and metrics, with OpenTelemetry. One per client. Every hook costs
 * a function call when telemetry is off or `@opentelemetry/api` is missing.
 */
export class PaymentsTelemetry implements TelemetryHooks {
  readonly #instruments: TelemetryInstruments;
  readonly #common: Attributes;
  readonly #server: Attributes;
  readonly #calls = new Map<string, CallAttributes>();
  /**
   * Where a delivery's `within()` puts its {@link HostSpan} in the context: one key per instance,
   * so that a settle of another client run from a handler never records onto this one's span.
   */
  readonly #hostKey = Symbol('nestjs-payments.webhookHost');

  /**
   * @param settings the resolved `telemetry` option
   * @param context the registration's name, the service's base URL, the store (backlog gauge) and the API loader
   */
  constructor(settings: TelemetrySettings, context: TelemetryContext = {}) {
    this.#common = context.registration === undefined ? {} : { 'payments.registration': context.registration };
    this.#server = { ...this.#common };
    if (context.baseUrl) {
      try {
        const url = new URL(context.baseUrl);
        this.#server['server.address'] = url.hostname;
        this.#server['server.port'] = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
      } catch {
        // validated elsewhere
      }
    }
    this.#instruments = new TelemetryInstruments(
      settings,
      context.loader ?? new TelemetryApiLoader(),
      this.#common,
      context.store,
    );
  }

  /**
   * Telemetry that never records anything: every hook is {@link NO_TELEMETRY}'s. Typed as the
   * class while callers still name it; new code uses {@link NO_TELEMETRY}.
   */
  static readonly off: PaymentsTelemetry = new PaymentsTelemetry(TELEMETRY_OFF);

  /** Whether spans and metrics are being recorded (`@opentelemetry/api` loaded, an SDK registered, not turned off). */
  get active(): boolean {
    return this.#instruments.get() !== null;
  }

  /**
   * Resolves once this instance has looked for `@opentelemetry/api`: true when it was found and
   * telemetry is on. Immediate in the CommonJS build; under an ES-module loader the look starts
   * when the instance is built and hooks record nothing until it has settled.
   */
  ready(): Promise<boolean> {
    return this.#instruments.ready();
  }

  /**
   * A call to the service: a CLIENT span `payments <operation>` around `run`, and its duration
   * and result in the metrics. `run` fills in the attempts and the HTTP status. The span is not
   * made the active one (nothing of the plugin's runs under it): an HTTP instrumentation's spans
   * of the requests are its siblings. A call made under the health indicator's probe mark
   * ({@link HEALTH_PROBE_KEY} in the active context) carries `payments.probe=true`.
   */
  call<T>(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    urlTemplate: string,
    run: (stats: CallStats) => Promise<T>,
  ): Promise<T> {
    const i = this.#instruments.get();
    if (i === null) return NO_TELEMETRY.call(operation, method, urlTemplate, run);
    return this.#call(i, operation, method, urlTemplate, run);
  }

  #callAttributes(operation: PaymentsOperation, method: string, urlTemplate: string): CallAttributes {
    const key = `${operation} ${method} ${urlTemplate}`;
    let cached = this.#calls.get(key);
    if (!cached) {
      cached = {
        name: SPAN_NAMES.call(operation),
        span: {
          ...this.#server,
          'payments.operation': operation,
          'http.request.method': method,
          'url.template': urlTemplate,
        },
      };
      this.#calls.set(key, cached);
    }
    return cached;
  }

  async #call<T>(
    i: Instruments,
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    urlTemplate: string,
    run: (stats: CallStats) => Promise<T>,
  ): Promise<T> {
    const { api: otel } = i;
    const stats: CallStats = { attempts: 0 };
    const fixed = this.#callAttributes(operation, method, urlTemplate);
    const span = i.tracer.startSpan(fixed.name, { kind: otel.SpanKind.CLIENT, attributes: fixed.span });
    const probe = otel.context.active().getValue(HEALTH_PROBE_KEY) === true;
    const started = performance.now();
    let errorType: string | undefined;
    try {
      return await run(stats);
    } catch (error) {
      errorType = callFailure(error, stats, span);
      span.setAttribute('error.type', errorType);
      span.setStatus({ code: otel.SpanStatusCode.ERROR, message: errorType });
      throw error;
    } finally {
      const metric: Attributes = { ...this.#common, 'payments.operation': operation };
      if (stats.status !== undefined) {
        metric['http.response.status_code'] = stats.status;
        span.setAttribute('http.response.status_code', stats.status);
      }
      if (errorType !== undefined) metric['error.type'] = errorType;
      if (stats.attempts > 1) metric['payments.attempts'] = stats.attempts;
      if (probe) {
        metric['payments.probe'] = true;
        span.setAttribute('payments.probe', true);
      }
      span.setAttribute('payments.attempts', stats.attempts);
      i.clientDuration.record((performance.now() - started) / 1000, metric);
      span.end();
    }
  }

  /**
   * One settle (claim -> verify -> handlers -> done): an INTERNAL span `payments settle` whose
   * context the work, the verify call and the handlers run in; its result in the metrics. The
   * first settle run inside a webhook delivery's `within()` (its span found in the active context)
   * records onto the delivery's span instead of a span of its own (one span for the two: same
   * duration but for the authentication, same payment). The context, not the instance, carries
   * the delivery, so concurrent deliveries each keep their own.
   */
  settle<R>(
    paymentId: string,
    source: OutcomeSource,
    run: SettleRun<R>,
    summary: (result: R) => SettleSummary,
  ): Promise<R> {
    const i = this.#instruments.get();
    if (i === null) return NO_TELEMETRY.settle(paymentId, source, run, summary);
    return this.#settle(i, paymentId, source, run, summary);
  }

  async #settle<R>(
    i: Instruments,
    paymentId: string,
    source: OutcomeSource,
    run: SettleRun<R>,
    summary: (result: R) => SettleSummary,
  ): Promise<R> {
    const { api: otel } = i;
    const active = otel.context.active();
    // Only a settle started right in the delivery's context (its span the active one) takes it.
    const offered = active.getValue(this.#hostKey) as HostSpan | undefined;
    const host = offered && !offered.adopted && otel.trace.getSpan(active) === offered.span ? offered : undefined;
    if (host) host.adopted = true;
    const span =
      host?.span ??
      i.tracer.startSpan(
        SPAN_NAMES.settle,
        { kind: otel.SpanKind.INTERNAL, attributes: { ...this.#common, 'payments.payment_id': paymentId } },
        active,
      );
    span.setAttribute('payments.source', source);
    const started = performance.now();
    let handlerMs: number | undefined;
    const trace: SettleTrace = {
      handlers: async (_name, work) => {
        const t0 = performance.now();
        try {
          return await work();
        } finally {
          handlerMs = (handlerMs ?? 0) + performance.now() - t0;
        }
      },
    };
    // A settle that threw (it never should) is an error of its own.
    let said: SettleSummary = { result: 'error', failed: true };
    try {
      // A delivery's span is already the active one (its within() made it so).
      const result = await (host ? run(trace) : otel.context.with(otel.trace.setSpan(active, span), () => run(trace)));
      said = summary(result);
      return result;
    } finally {
      const { result: kind, outcome } = said;
      span.setAttribute('payments.settle.result', kind);
      if (outcome !== undefined) span.setAttribute('payments.outcome', outcome);
      if (handlerMs !== undefined)
        span.setAttribute('payments.handlers.duration_ms', Math.round(handlerMs * 1000) / 1000);
      if (said.failed) {
        span.setAttribute('error.type', kind);
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: kind });
      }
      if (!host) span.end();
      const metric: Attributes = { ...this.#common, 'payments.source': source, 'payments.settle.result': kind };
      if (outcome !== undefined) metric['payments.outcome'] = outcome;
      i.settleDuration.record((performance.now() - started) / 1000, metric);
    }
  }

  /**
   * Starts the span of one webhook delivery (`payments webhook`: SERVER, or INTERNAL inside an
   * HTTP server span of an instrumented framework). Ended by {@link WebhookTrace.end} with the
   * answer. `within(run)` runs `run` with the delivery's span active, marked in the context as
   * the host of the first settle `run` starts, which records onto it (see {@link settle}).
   * @param route the route template, e.g. `/payments/webhook/:token` (never the token itself)
   */
  webhook(route: string): WebhookTrace {
    const i = this.#instruments.get();
    return i === null ? NO_TELEMETRY.webhook(route) : startWebhookSpan(i, this.#common, this.#hostKey, route);
  }

  /** One reconciliation pass: an INTERNAL span `payments reconciliation` around it (its settles are children). */
  reconciliation<R extends { checked: number; settled: number }>(
    run: (due: (count: number) => void) => Promise<R>,
  ): Promise<R> {
    const i = this.#instruments.get();
    return i === null ? NO_TELEMETRY.reconciliation(run) : traceReconciliation(i, this.#common, run);
  }

  /** Stops observing the backlog (the client is closing). */
  close(): void {
    this.#instruments.close();
  }
}

/** A webhook delivery's span, in the context its `within()` makes active, for the settle it starts. */
interface HostSpan {
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
function startWebhookSpan(i: Instruments, common: Attributes, hostKey: symbol, route: string): WebhookTrace {
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
function traceReconciliation<R extends { checked: number; settled: number }>(
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
function callFailure(error: unknown, stats: CallStats, span: OtelApi.Span): string {
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
