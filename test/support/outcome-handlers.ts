import type { HandlerLookup } from '../../lib/core/settlement/payment.events.js';
import {
  PaymentEvents,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
} from '../../lib/core/settlement/payment.events.js';

const OPERATIONS: readonly PaymentEventName[] = [
  PaymentEvents.CAPTURED,
  PaymentEvents.REFUNDED,
  PaymentEvents.CANCELLED,
];

/**
 * A test's handlers as the core looks them up (`client.setHandlers`): every outcome's event goes
 * to `handle` (its one handler), the operations' events to none.
 */
export function outcomeHandlers(
  handle: (name: PaymentEventName, event: PaymentOutcomeEvent) => unknown,
): HandlerLookup {
  return {
    handlersOf: (name) =>
      OPERATIONS.includes(name) ? [] : [(event: PaymentEvent) => handle(name, event as PaymentOutcomeEvent)],
  };
}
