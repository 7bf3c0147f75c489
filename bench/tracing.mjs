// The OpenTelemetry SDK as an app would set it up for production, minus the network: a batch span
// processor and a periodic metric reader, both exporting to no-op exporters, and an
// AsyncLocalStorage context manager (what @opentelemetry/context-async-hooks provides). Used by the
// "tracing on" variants of the benchmarks.
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, metrics, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { MeterProvider, PeriodicExportingMetricReader, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

class AlsContextManager {
  #storage = new AsyncLocalStorage();
  active() {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with(ctx, fn, thisArg, ...args) {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind(_ctx, target) {
    return target;
  }
  enable() {
    return this;
  }
  disable() {
    this.#storage.disable();
    return this;
  }
}

/** Counts what would have been exported, and drops it. */
export const exported = { spans: 0, metricExports: 0 };
const spanExporter = {
  export(spans, done) {
    exported.spans += spans.length;
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
  forceFlush: () => Promise.resolve(),
};
const metricExporter = {
  export(_metrics, done) {
    exported.metricExports++;
    done({ code: 0 });
  },
  selectAggregationTemporality: () => AggregationTemporality.CUMULATIVE,
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

/**
 * Builds the providers. `global: true` registers them (and the context manager) as the app's SDK
 * would; otherwise only the context manager is registered and the providers are returned, to be
 * passed to one client through its `telemetry` option.
 */
export function startTracing({ global = true } = {}) {
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(spanExporter, { maxQueueSize: 8192, scheduledDelayMillis: 1000 })],
  });
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 5000 })],
  });
  context.setGlobalContextManager(new AlsContextManager());
  if (global) {
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
  }
  return {
    tracerProvider,
    meterProvider,
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
