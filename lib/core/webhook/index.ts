// What the other folders of the core, and the plugin's front ends outside it, may import from
// webhook/ (the front door of deliveries, its answers, and the webhook token).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of webhook/ to this file.
export type { ResolvedWebhookOptions } from './webhook.options.js';
export { WebhookProcessor } from './webhook.processor.js';
export type { AuthenticatedWebhook, WebhookAccepted } from './webhook.processor.js';
export type { WebhookAnswer } from './webhook.processor.js';
export type { WebhookRequest } from './webhook.payload.js';
export { WebhookTokenSigner } from './webhook.token.js';
