/**
 * Tracing and metrics through `@opentelemetry/api`, an optional peer dependency.
 *
 * Nothing here imports the API at load time. The first client built asks for it once per process:
 * in the published CommonJS build with a synchronous `require` inside a try/catch (so spans start
 * with the very first call), elsewhere (the ES-module sources under a test runner) with a dynamic
 * `import()` whose result is kept for every later call. Without the package, or with
 * `telemetry: false`, every hook is a plain function call that runs the wrapped work and nothing
 * else: no span, no context switch, no clock read.
 *
 * No attribute ever holds a key, the webhook secret, a webhook token, a full URL or a header: only
 * operation names, HTTP methods and statuses, route templates, error codes, counts, durations, the
 * registration's name and payment ids (the service's ids, not secrets).
 *
 * Cost, when recording: one span and one metric record per call to the service, and per webhook
 * confirmation two spans (the delivery, which is also its settle's span, and the verify call) and
 * three metric records; one context switch per settle, so that the handlers run in its span's
 * context, and none elsewhere. Metric attributes are the few that tell series apart (what the
 * span alone needs stays on the span), since the SDK hashes them on every record.
 */
import type * as OtelApi from '@opentelemetry/api';
import type { PaymentsOperation } from '../api/payments.errors.js';
import type { OutcomeSource, PaymentsStore } from '../store/payments.store.js';

/** Instrumentation scope of every tracer and meter. */
export const TELEMETRY_SCOPE = 'nestjs-payments';

/** Span names (the operation is appended to `payments ` for calls to the service). */
export const SPAN_NAMES = {
  /** CLIENT span of one call to the service, e.g. `payments verifyPayment`. */
  call: (operation: string) => `payments ${operation}`,
  /** One webhook delivery, authentication to answer; also the span of the settle it starts. */
  webhook: 'payments webhook',
  /** One settle on the return path or in reconciliation (claim, verify, handlers, done). */
  settle: 'payments settle',
  /** One reconciliation pass; the parent of its settles. */
  reconciliation: 'payments reconciliation',
} as const;

/**
 * Metric names. All are the plugin's own (`payments.*`): a call to the service is one logical
 * operation, retries and backoff included, which OpenTelemetry's `http.client.request.duration`
 * (one per physical request, recorded by `@opentelemetry/instrumentation-http` when installed)
 * does not describe; the two never count the same thing twice.
 */
export const METRIC_NAMES = {
  /**
   * Histogram (s): one per call to the service, retries and backoff included, by
   * `payments.operation`, `http.response.status_code` (the final answer's), `error.type` (the
   * error's code), `payments.attempts` (when more than one) and `payments.probe` (health probes).
   * Its count is the calls by operation and result; requests sent = count + the extra attempts.
   */
  clientDuration: 'payments.client.operation.duration',
  /** Histogram (s): time to answer a webhook delivery, by `http.response.status_code` and `payments.webhook.result`; its count is the deliveries. */
  webhookDuration: 'payments.webhook.duration',
  /**
   * Histogram (s): one per settle (claim, verify, handlers, done), by `payments.source`,
   * `payments.settle.result` and `payments.outcome`; its count is the outcomes by kind and path
   * (settled payments: results `handled` and `mismatch`).
   */
  settleDuration: 'payments.outcome.duration',
  /** Observable gauge: payments queued for reconciliation (`store.countPending()`, throttled). */
  backlog: 'payments.reconciliation.backlog',
} as const;

/** Attribute values are strings, numbers or booleans. */
type Attributes = Record<string, string | number | boolean>;

/** Telemetry settings (the `telemetry` option, after defaults). */
export interface TelemetrySettings {
  /** false: nothing is traced or counted even when `@opentelemetry/api` is installed. */
  enabled: boolean;
  /** A TracerProvider; default the global one. */
  tracerProvider?: { getTracer(name: string, version?: string): unknown };
  /** A MeterProvider; default the global one. */
  meterProvider?: { getMeter(name: string, version?: string): unknown };
  /** Least time between two `countPending()` reads for the backlog gauge, in ms. */
  backlogIntervalMs: number;
}

/** What a call to the service reports to its span, filled in by the transport. */
export interface CallStats {
  /** Attempts made (1 + retries). */
  attempts: number;
  /** HTTP status of the final answer, when one came. */
  status?: number;
}

/** The handle a settle gives to the work it wraps. */
export interface SettleTrace {
  /** Runs the outcome's handlers, timing them. */
  handlers<T>(event: string, run: () => Promise<T>): Promise<T>;
}

/**
 * Where the webhook processor leaves a delivery's {@link WebhookTrace} on the authentication it
 * returns (a symbol: it survives `{ ...auth }`, never serialised), for its deliver() and for a
 * front end that must end the trace of a delivery it will not deliver (payments.telemetry.ts is
 * its one definition).
 * @internal
 */
export const WEBHOOK_TRACE: unique symbol = Symbol('nestjs-payments.webhookTrace');

/** The handle of one webhook delivery, from authentication to the answer. */
export interface WebhookTrace {
  /** Runs the settling of the delivery inside the delivery's span. */
  within<T>(run: () => Promise<T>): Promise<T>;
  /** Ends the delivery with its answer. */
  end(status: number, result: string, paymentId?: string): void;
}

/** The minimal shape of a settle result the telemetry reads. */
interface SettleLike {
  kind: string;
  outcome?: string;
}

// ------------------------------------------------------------------ loading the API, once

/** undefined: not tried yet; null: not installed (or failed to load). */
let api: typeof OtelApi | null | undefined;
let loading: Promise<typeof OtelApi | null> | undefined;

/**
 * Loads `@opentelemetry/api` if it is installed, once per process. Synchronous in the CommonJS
 * build; elsewhere the first call starts a dynamic import and returns undefined until it settles.
 */
function loadApi(): typeof OtelApi | null | undefined {
  if (api !== undefined) return api;
  if (typeof require === 'function') {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer, loaded lazily and synchronously in the CommonJS build
      api = require('@opentelemetry/api') as typeof OtelApi;
    } catch {
      api = null;
    }
    return api;
  }
  void loadTelemetryApi();
  return undefined;
}

/**
 * Resolves once the optional `@opentelemetry/api` has been looked for: true when it is installed.
 * The CommonJS build finds it synchronously; under an ES-module loader (tests, `tsx`), await this
 * before the first call that should be traced.
 */
export function loadTelemetryApi(): Promise<boolean> {
  if (api !== undefined) return Promise.resolve(api !== null);
  loading ??= import('@opentelemetry/api').then(
    (m: unknown) => {
      // A CommonJS module imported from ES modules may come as its `default` export.
      const mod = m as typeof OtelApi & { default?: typeof OtelApi };
      return (api = mod.trace ? mod : (mod.default ?? null));
    },
    () => (api = null),
  );
  return loading.then((a) => a !== null);
}

// ------------------------------------------------------------------ the hooks

/**
 * The context key {@link asHealthProbe} sets (`Symbol.for`, as `createContextKey` makes it: the same
 * key whichever copy of this file asks).
 */
const PROBE_KEY = Symbol.for('nestjs-payments.probe');

/**
 * Runs `work` as a health probe: its calls to the service are recorded like any other, with
 * `payments.probe=true` on their span and call metric, so that the probe's expected refusals
 * (`INVALID_CLIENT_ID`) can be told from real failures. The mark travels in the OpenTelemetry
 * context (a context manager is needed, as every Node SDK setup registers one); nothing is
 * switched when telemetry cannot record.
 */
export function asHealthProbe<T>(work: () => Promise<T>): Promise<T> {
  if (!api) return work();
  return api.context.with(api.context.active().setValue(PROBE_KEY, true), work);
}

const NOOP_SETTLE: SettleTrace = { handlers: (_event, run) => run() };
const NOOP_WEBHOOK: WebhookTrace = { within: (run) => run(), end: () => undefined };

/** A webhook delivery's span, offered to the settle its `within()` starts (see `settle`). */
interface HostSpan {
  span: OtelApi.Span;
  /** The context the delivery's span was started in; the settle runs in it plus the span. */
  parent: OtelApi.Context;
}

/** Static attributes of one operation's calls, built once per client and operation. */
interface CallAttributes {
  span: Attributes;
  name: string;
}

/**
 * The plugin's hooks into tracing and metrics. One per client. Every hook costs a function call
 * when telemetry is off or `@opentelemetry/api` is missing.
 */
export class PaymentsTelemetry {
  readonly #settings: TelemetrySettings;
  readonly #common: Attributes;
  readonly #server: Attributes;
  readonly #store?: PaymentsStore;
  readonly #calls = new Map<string, CallAttributes>();
  #instruments?: Instruments | null;
  #backlog?: { value?: number; at: number; reading?: Promise<void> };
  /** Set by a webhook trace's `within()` for the settle it starts synchronously, then cleared. */
  #host?: HostSpan;
  #closed = false;

  /**
   * @param settings the resolved `telemetry` option
   * @param context the registration's name, the service's base URL (host and port only are kept) and the store (backlog gauge)
   */
  constructor(settings: TelemetrySettings, context: { registration?: string; baseUrl?: string; store?: PaymentsStore } = {}) {
    this.#settings = settings;
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
    this.#store = context.store;
    if (settings.enabled) loadApi();
    else this.#instruments = null;
  }

  /** Telemetry that never records anything. */
  static readonly off = new PaymentsTelemetry({ enabled: false, backlogIntervalMs: 30_000 });

  /** Whether spans and metrics are being recorded (`@opentelemetry/api` loaded and not turned off). */
  get active(): boolean {
    return this.#get() !== null;
  }

  /**
   * A call to the service: a CLIENT span `payments <operation>` around `run`, and its duration
   * and result in the metrics. `run` fills in the attempts and the HTTP status. The span is not
   * made the active one (nothing of the plugin's runs under it): an HTTP instrumentation's spans
   * of the requests are its siblings.
   */
  call<T>(operation: PaymentsOperation, method: 'GET' | 'POST', urlTemplate: string, run: (stats: CallStats) => Promise<T>): Promise<T> {
    const i = this.#get();
    if (i === null) return run({ attempts: 0 });
    return this.#call(i, operation, method, urlTemplate, run);
  }

  #callAttributes(operation: PaymentsOperation, method: string, urlTemplate: string): CallAttributes {
    const key = `${operation} ${method} ${urlTemplate}`;
    let cached = this.#calls.get(key);
    if (!cached) {
      cached = {
        name: SPAN_NAMES.call(operation),
        span: { ...this.#server, 'payments.operation': operation, 'http.request.method': method, 'url.template': urlTemplate },
      };
      this.#calls.set(key, cached);
    }
    return cached;
  }

  async #call<T>(i: Instruments, operation: PaymentsOperation, method: 'GET' | 'POST', urlTemplate: string, run: (stats: CallStats) => Promise<T>): Promise<T> {
    const { api: otel } = i;
    const stats: CallStats = { attempts: 0 };
    const fixed = this.#callAttributes(operation, method, urlTemplate);
    const span = i.tracer.startSpan(fixed.name, { kind: otel.SpanKind.CLIENT, attributes: fixed.span });
    const probe = otel.context.active().getValue(PROBE_KEY) === true;
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
   * context the work, the verify call and the handlers run in; its result in the metrics. A
   * settle that a webhook delivery starts records onto the delivery's span instead of a span of
   * its own (one span for the two: same duration but for the authentication, same payment).
   */
  settle<R extends SettleLike>(paymentId: string, source: OutcomeSource, run: (trace: SettleTrace) => Promise<R>): Promise<R> {
    const host = this.#host;
    this.#host = undefined;
    const i = this.#get();
    if (i === null) return run(NOOP_SETTLE);
    return this.#settle(i, paymentId, source, run, host);
  }

  async #settle<R extends SettleLike>(
    i: Instruments,
    paymentId: string,
    source: OutcomeSource,
    run: (trace: SettleTrace) => Promise<R>,
    host: HostSpan | undefined,
  ): Promise<R> {
    const { api: otel } = i;
    const parent = host?.parent ?? otel.context.active();
    const span =
      host?.span ??
      i.tracer.startSpan(SPAN_NAMES.settle, { kind: otel.SpanKind.INTERNAL, attributes: { ...this.#common, 'payments.payment_id': paymentId } }, parent);
    span.setAttribute('payments.source', source);
    const started = performance.now();
    let handlerMs: number | undefined;
    const trace: SettleTrace = {
      handlers: async (_event, work) => {
        const t0 = performance.now();
        try {
          return await work();
        } finally {
          handlerMs = (handlerMs ?? 0) + performance.now() - t0;
        }
      },
    };
    let kind = 'error';
    let outcome: string | undefined;
    try {
      const result = await otel.context.with(otel.trace.setSpan(parent, span), () => run(trace));
      kind = result.kind;
      outcome = result.outcome ?? (kind === 'pending' ? 'pending' : kind === 'mismatch' ? 'mismatch' : undefined);
      return result;
    } finally {
      span.setAttribute('payments.settle.result', kind);
      if (outcome !== undefined) span.setAttribute('payments.outcome', outcome);
      if (handlerMs !== undefined) span.setAttribute('payments.handlers.duration_ms', Math.round(handlerMs * 1000) / 1000);
      if (SETTLE_ERRORS.has(kind)) {
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
   * answer. `within(run)` offers the span to the settle `run` starts, which records onto it and
   * runs the handlers in its context; it switches no context itself.
   * @param route the route template, e.g. `/payments/webhook/:token` (never the token itself)
   */
  webhook(route: string): WebhookTrace {
    const i = this.#get();
    if (i === null) return NOOP_WEBHOOK;
    const { api: otel } = i;
    const parent = otel.context.active();
    const span = i.tracer.startSpan(
      SPAN_NAMES.webhook,
      { kind: otel.trace.getSpan(parent) ? otel.SpanKind.INTERNAL : otel.SpanKind.SERVER, attributes: { ...this.#common, 'http.route': route } },
      parent,
    );
    const host: HostSpan = { span, parent };
    const started = performance.now();
    let ended = false;
    return {
      within: (run) => {
        this.#host = host;
        try {
          return run();
        } finally {
          this.#host = undefined;
        }
      },
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
          ...this.#common,
          'http.response.status_code': status,
          'payments.webhook.result': result,
        });
      },
    };
  }

  /** One reconciliation pass: an INTERNAL span `payments reconciliation` around it (its settles are children). */
  reconciliation<R extends { checked: number; settled: number }>(run: (due: (count: number) => void) => Promise<R>): Promise<R> {
    const i = this.#get();
    if (i === null) return run(noop);
    const { api: otel } = i;
    const span = i.tracer.startSpan(SPAN_NAMES.reconciliation, { kind: otel.SpanKind.INTERNAL, attributes: { ...this.#common } });
    return otel.context
      .with(otel.trace.setSpan(otel.context.active(), span), () => run((count) => span.setAttribute('payments.reconciliation.due', count)))
      .then(
        (result) => {
          span.setAttributes({ 'payments.reconciliation.checked': result.checked, 'payments.reconciliation.settled': result.settled });
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

  /** Stops observing the backlog (the client is closing). */
  close(): void {
    this.#closed = true;
    if (this.#instruments) this.#instruments.backlog.removeCallback(this.#instruments.observeBacklog);
  }

  // The instruments, built on first use (after the SDK has registered its providers) and again
  // when the global meter or tracer provider changes; null while nothing can be recorded: no API,
  // telemetry off, or the API's no-op providers only (no SDK registered: then a call costs two
  // global lookups, not a no-op span and context switch).
  #get(): Instruments | null {
    const cached = this.#instruments;
    if (cached === null) return null;
    const otel = cached?.api ?? loadApi();
    if (!otel) {
      if (otel === null) this.#instruments = null;
      return null;
    }
    if (this.#settings.meterProvider || this.#settings.tracerProvider) return (this.#instruments = cached ?? this.#build(otel, undefined, undefined));
    const meterProvider = otel.metrics.getMeterProvider();
    const tracerDelegate = (otel.trace.getTracerProvider() as { getDelegate?: () => unknown }).getDelegate?.();
    if (cached && cached.meterProvider === meterProvider && cached.tracerDelegate === tracerDelegate) return cached.noop ? null : cached;
    if (cached) cached.backlog.removeCallback(cached.observeBacklog);
    const built = this.#build(otel, meterProvider, tracerDelegate);
    this.#instruments = built;
    return built.noop ? null : built;
  }

  #build(otel: typeof OtelApi, meterProvider: OtelApi.MeterProvider | undefined, tracerDelegate: unknown): Instruments {
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
    const seconds = (name: string, description: string, boundaries: number[]) =>
      meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: boundaries } });
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
      clientDuration: seconds(METRIC_NAMES.clientDuration, 'Duration of operations on the payment service, retries and backoff included', HTTP_BUCKETS),
      webhookDuration: seconds(METRIC_NAMES.webhookDuration, 'Time to answer a webhook delivery, by status and result', HTTP_BUCKETS),
      settleDuration: seconds(
        METRIC_NAMES.settleDuration,
        'Duration of one settle (claim, verify, handlers, done) by source, result and outcome',
        HTTP_BUCKETS,
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

interface Instruments {
  api: typeof OtelApi;
  /** The global providers these were built for (undefined when the options gave providers). */
  meterProvider?: OtelApi.MeterProvider;
  tracerDelegate?: unknown;
  /** Built over the API's no-op providers: record nothing. */
  noop: boolean;
  tracer: OtelApi.Tracer;
  clientDuration: OtelApi.Histogram;
  webhookDuration: OtelApi.Histogram;
  settleDuration: OtelApi.Histogram;
  backlog: OtelApi.ObservableGauge;
  observeBacklog: OtelApi.ObservableCallback;
}

/** The package's version, for the instrumentation scope (kept in step by hand, like CHANGELOG.md). */
const PACKAGE_VERSION = '0.1.0';
/** The bucket boundaries semconv advises for HTTP durations (s). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** Settle results that end the span in error. */
const SETTLE_ERRORS = new Set(['mismatch', 'handlers-failed', 'verify-failed', 'store-unavailable', 'error']);

function noop(): void {}

// What a failed call says, without its message (an excerpt of the service's answer has no place
// in telemetry): the error's stable code, returned, and on the span whether it may have been
// processed (connection errors) and the attempts the error counted.
function callFailure(error: unknown, stats: CallStats, span: OtelApi.Span): string {
  const e = error as { code?: unknown; httpStatus?: unknown; mayHaveBeenProcessed?: unknown; attempts?: unknown } | null;
  const type = typeof e?.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code) ? e.code : error instanceof Error ? error.name : 'unknown';
  if (typeof e?.mayHaveBeenProcessed === 'boolean') span.setAttribute('payments.may_have_been_processed', e.mayHaveBeenProcessed);
  if (typeof e?.attempts === 'number' && e.attempts > stats.attempts) stats.attempts = e.attempts;
  if (typeof e?.httpStatus === 'number' && stats.status === undefined) stats.status = e.httpStatus;
  return type;
}

/**
 * Resolves the `telemetry` option.
 * @param option `false` turns it off; an object may give providers and the backlog interval
 */
export function telemetrySettings(
  option:
    | boolean
    | {
        enabled?: boolean;
        tracerProvider?: TelemetrySettings['tracerProvider'];
        meterProvider?: TelemetrySettings['meterProvider'];
        backlogIntervalSecs?: number;
      }
    | undefined,
): TelemetrySettings {
  if (option === false) return { enabled: false, backlogIntervalMs: 30_000 };
  const o = typeof option === 'object' && option !== null ? option : {};
  const settings: TelemetrySettings = { enabled: o.enabled !== false, backlogIntervalMs: (o.backlogIntervalSecs ?? 30) * 1000 };
  if (o.tracerProvider) settings.tracerProvider = o.tracerProvider;
  if (o.meterProvider) settings.meterProvider = o.meterProvider;
  return settings;
}
