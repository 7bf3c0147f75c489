import { PaymentsClient, type PaymentsOptions } from '../core/client/index.js';

/**
 * Creates the client of the service for apps without Nest: the same operations (generate, verify, capture, reconcile, refund, cancel, bindings),
 * validation, errors, retries and signed webhook URLs as `PaymentsService`.
 *
 * @param options the same options as `PaymentsModule.forRoot()` (`webhook.path` is unused:
 *   mount the router where you like)
 * @throws PaymentsValidationError naming each missing or invalid option
 */
export function createPaymentsClient(options: PaymentsOptions): PaymentsClient {
  return new PaymentsClient(options);
}
