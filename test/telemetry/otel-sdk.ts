/**
 * The OpenTelemetry SDK as an app would register it, with in-memory exporters: spans in an
 * InMemorySpanExporter, metrics collected on demand by a MetricReader, and an AsyncLocalStorage
 * context manager (what @opentelemetry/context-async-hooks does; not installed here) so that the
 * active span follows async calls into the handlers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, metrics, ROOT_CONTEXT, trace, type Context, type ContextManager } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

class AlsContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point, flattened. */
export interface Point {
  name: string;
  attributes: Record<string, unknown>;
  /** Sum of a counter, count of a histogram, value of a gauge. */
  value: number;
  /** Histogram sum. */
  sum?: number;
}

export interface TestSdk {
  spans: InMemorySpanExporter;
  reader: MetricReader;
  /** Finished spans so far. */
  finished(): ReadableSpan[];
  /** Collects the metrics now, as flat points. */
  points(): Promise<Point[]>;
  shutdown(): Promise<void>;
}

/** Registers global providers and a context manager (as the Node SDK would). */
export function startSdk(): TestSdk {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AlsContextManager();
  trace.disable();
  metrics.disable();
  context.disable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans,
    reader,
    finished: () => spans.getFinishedSpans(),
    points: async () => flatten((await reader.collect()).resourceMetrics),
    shutdown: async () => {
      trace.disable();
      metrics.disable();
      context.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

function flatten(resource: ResourceMetrics): Point[] {
  const out: Point[] = [];
  for (const scope of resource.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const dp of metric.dataPoints as Array<{ attributes: Record<string, unknown>; value: unknown }>) {
        const v = dp.value as number | { count: number; sum?: number };
        out.push(
          typeof v === 'number'
            ? { name: metric.descriptor.name, attributes: dp.attributes, value: v }
            : { name: metric.descriptor.name, attributes: dp.attributes, value: v.count, sum: v.sum },
        );
      }
    }
  }
  return out;
}

/** Sum of the points of a metric whose attributes include `match`. */
export function total(points: Point[], name: string, match: Record<string, unknown> = {}): number {
  return points
    .filter((p) => p.name === name && Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((s, p) => s + p.value, 0);
}
