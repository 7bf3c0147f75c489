// What the other folders of the core may import from webhook/ (the front door of deliveries and the webhook token).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of webhook/ to this file.
export type { ResolvedWebhookOptions } from './webhook.options.js';
export { WebhookProcessor } from './webhook.processor.js';
export { WebhookTokenSigner } from './webhook.token.js';
