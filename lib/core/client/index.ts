// The top of the core's layers: nothing in the core imports client/; the plugin's folders outside
// the core import it through this file. Internal, not public API (the package's names are in
// lib/core/index.ts).
export { PaymentsClient } from './payments.client.js';
export { PAYMENTS_DEFAULTS } from './payments.options.js';
export { resolvePaymentsOptions } from './payments.resolver.js';
export type { PaymentFieldDefaults, PaymentsOptions, PaymentsWebhookOptions } from './payments.options.js';
