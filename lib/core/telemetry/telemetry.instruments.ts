/**
 * The tracer, meter and instruments one telemetry instance records with, built on first use
 * (after the SDK has registered its providers) and again when the global providers change, and
 * the backlog gauge's throttled store read.
 */
import type * as OtelApi from '@opentelemetry/api';
import type { PaymentsStore } from '../store/index.js';
import { otelApiOf, type OtelApiModule } from './telemetry.api.js';
import type { TelemetryApiLoader } from './telemetry.loader.js';
import { METRIC_NAMES, TELEMETRY_SCOPE } from './telemetry.names.js';
import type { TelemetrySettings } from './telemetry.settings.js';

/** Attribute values are strings, numbers or booleans. */
export type Attributes = Record<string, string | number | boolean>;

/** What a telemetry instance records with. */
export interface Instruments {
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
export class TelemetryInstruments {
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
