// The package's main entry (`nestjs-payments`): the framework-free core and the Nest module.
// Subpaths: `nestjs-payments/express`, `nestjs-payments/redis`, `nestjs-payments/postgres`,
// `nestjs-payments/testing`, `nestjs-payments/terminus`.
import 'reflect-metadata';
export * from './core/index.js';
export * from './nest/index.js';
// The names of the plugin's spans and metrics, for dashboards and alerts written in code.
export { SPAN_NAMES, METRIC_NAMES, TELEMETRY_SCOPE } from './core/telemetry/telemetry.names.js';
