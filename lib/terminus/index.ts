// `nestjs-payments/terminus`: the plugin's health indicator for `@nestjs/terminus` (11 and 12).
export { PaymentsHealthIndicator, HEALTH_PROBE_CLIENT_ID } from './payments.health.js';
export type { PaymentsHealthCheckOptions } from './payments.health.js';
