// What the other folders of the core, and the plugin's folders outside it, may import from
// telemetry/ (the hooks the engine reports through, their OpenTelemetry implementation, and the
// health probe's mark).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of telemetry/ to this file.
export { NO_TELEMETRY } from './telemetry.hooks.js';
export type { SettleSummary, SettleTrace, TelemetryHooks, WebhookTrace } from './telemetry.hooks.js';
export { PaymentsTelemetry } from './telemetry.otel.js';
export { telemetrySettings } from './telemetry.settings.js';
// No file whose declarations name `@opentelemetry/api` (an optional peer) is exported here: every
// entry point's declarations reach this file, and a project without the peer must type-check.
export { TelemetryApiLoader, asHealthProbe } from './telemetry.loader.js';
