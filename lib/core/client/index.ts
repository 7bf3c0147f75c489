// The top of the core's layers: nothing in the core imports client/. Internal, not public API
// (the package's names are in lib/core/index.ts).
export { PaymentsClient } from './payments.client.js';
export { PAYMENTS_DEFAULTS } from './payments.options.js';
export type { PaymentFieldDefaults, PaymentsOptions, PaymentsWebhookOptions } from './payments.options.js';
