// What the other folders of the core may import from telemetry/ (the hooks the engine reports
// through and their OpenTelemetry implementation).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of telemetry/ to this file.
export { NO_TELEMETRY } from './telemetry.hooks.js';
export type { SettleSummary, SettleTrace, TelemetryHooks, WebhookTrace } from './telemetry.hooks.js';
export { PaymentsTelemetry } from './telemetry.otel.js';
export { telemetrySettings } from './telemetry.settings.js';
