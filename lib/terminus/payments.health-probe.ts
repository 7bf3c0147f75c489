import { HEALTH_PROBE_KEY, otelApiOf, type TelemetryApiLoader } from '../core/telemetry/index.js';

/**
 * Runs `work` as a health probe: its calls to the service are recorded like any other, with
 * `payments.probe=true` on their span and call metric, so that the probe's expected refusals
 * (`INVALID_CLIENT_ID`) can be told from real failures. The mark is {@link HEALTH_PROBE_KEY} in the
 * OpenTelemetry context, which the core's call hook reads (a context manager is needed, as every
 * Node SDK setup registers one); without `@opentelemetry/api` the work runs unmarked.
 * @param work the probe's calls
 * @param otel finds `@opentelemetry/api` (the indicator's own loader)
 */
export async function asHealthProbe<T>(work: () => Promise<T>, otel: TelemetryApiLoader): Promise<T> {
  // Waiting for the look costs nothing after the first probe, and marks even the first one under an ES-module loader.
  if (!(await otel.load())) return work();
  const api = otelApiOf(otel)!;
  return api.context.with(api.context.active().setValue(HEALTH_PROBE_KEY, true), work);
}
