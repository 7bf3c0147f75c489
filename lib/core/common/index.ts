// What the other folders of the core, and the plugin's folders outside it, may import from common/
// (the logger and the description of a thrown value).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of common/ to this file.
export { assertNever, describe } from './describe.util.js';
export { boundedCache } from './bounded.cache.js';
export { defaultPaymentsLogger } from './payments.logger.js';
export type { PaymentsLogger } from './payments.logger.js';
