import type * as OtelApi from '@opentelemetry/api';
import type { TelemetryApiLoader } from './telemetry.loader.js';

/** The `@opentelemetry/api` module. */
export type OtelApiModule = typeof OtelApi;

/**
 * The module a loader found, typed. The loader holds it untyped so that no declaration an entry
 * point reaches names the optional peer; this file is reached only from the telemetry code's own.
 * @param loader the telemetry instance's (or the health indicator's) loader
 * @returns the API, null when it is not installed, undefined while an ES-module import is under way
 */
export function otelApiOf(loader: TelemetryApiLoader): OtelApiModule | null | undefined {
  return loader.get() as OtelApiModule | null | undefined;
}
