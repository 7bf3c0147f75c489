import type * as OtelApi from '@opentelemetry/api';

/** The `@opentelemetry/api` module. */
export type OtelApiModule = typeof OtelApi;

/**
 * The module a loader found, typed. The loader holds it untyped so that no declaration an entry
 * point reaches names the optional peer; no declaration outside telemetry/ names this file (the
 * package's type check in a project without the peer fails otherwise).
 * @param loaded what a `TelemetryApiLoader`'s `get()` returned
 * @returns the API, null when it is not installed, undefined while an ES-module import is under way
 */
export function otelApiOf(loaded: unknown): OtelApiModule | null | undefined {
  return loaded as OtelApiModule | null | undefined;
}
