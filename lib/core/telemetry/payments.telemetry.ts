/**
 * The names this file used to define, while lib/core/settlement/, lib/core/webhook/,
 * lib/core/client/ and lib/nest/ still import them from here. Delete the file once they import
 * the role files (telemetry.hooks.ts, telemetry.otel.ts, telemetry.settings.ts) directly.
 * @deprecated import from the role files of lib/core/telemetry/
 * @internal
 */
export { PaymentsTelemetry } from './telemetry.otel.js';
export { telemetrySettings, type TelemetrySettings } from './telemetry.settings.js';
export { loadTelemetryApi } from './telemetry.loader.js';
export { METRIC_NAMES, SPAN_NAMES, TELEMETRY_SCOPE } from './telemetry.names.js';
export type { CallStats, SettleTrace, WebhookTrace } from './telemetry.hooks.js';

/**
 * Where the webhook processor leaves a delivery's trace on the authentication it returns, for its
 * deliver() and for the Nest guard. Goes away with the engine's rewrite, where the delivery's span
 * starts in deliver() and the trace is handed over by no object.
 * @deprecated no replacement: the engine no longer hands a trace over
 * @internal
 */
export const WEBHOOK_TRACE: unique symbol = Symbol('nestjs-payments.webhookTrace');
