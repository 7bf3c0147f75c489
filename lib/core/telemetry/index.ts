// What the other folders of the core, and the plugin's folders outside it, may import from
// telemetry/ (the hooks the engine reports through, their OpenTelemetry implementation, and the
// health probe's access to the OpenTelemetry API).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of telemetry/ to this file.
export { NO_TELEMETRY } from './telemetry.hooks.js';
export type { SettleSummary, SettleTrace, TelemetryHooks, WebhookTrace } from './telemetry.hooks.js';
export { PaymentsTelemetry } from './telemetry.otel.js';
export { telemetrySettings } from './telemetry.settings.js';
export { HEALTH_PROBE_KEY } from './telemetry.names.js';
export { TelemetryApiLoader } from './telemetry.loader.js';
export { otelApiOf } from './telemetry.api.js';
