import type { PaymentsStore } from '../store/index.js';
import type { TelemetryApiLoader } from './telemetry.loader.js';

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

/** The settings of telemetry that is off. */
export const TELEMETRY_OFF: Readonly<TelemetrySettings> = Object.freeze({ enabled: false, backlogIntervalMs: 30_000 });

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
  if (option === false) return { ...TELEMETRY_OFF };
  const o = typeof option === 'object' && option !== null ? option : {};
  const settings: TelemetrySettings = {
    enabled: o.enabled !== false,
    backlogIntervalMs: (o.backlogIntervalSecs ?? 30) * 1000,
  };
  if (o.tracerProvider) settings.tracerProvider = o.tracerProvider;
  if (o.meterProvider) settings.meterProvider = o.meterProvider;
  return settings;
}

/** What a telemetry instance is told of its client. */
export interface TelemetryContext {
  /** The registration's name (`payments.registration` on everything). */
  registration?: string;
  /** The service's base URL (host and port only are kept). */
  baseUrl?: string;
  /** Read by the backlog gauge. */
  store?: PaymentsStore;
  /** Finds `@opentelemetry/api`; default one of the instance's own. */
  loader?: TelemetryApiLoader;
}
