import { PaymentEvents, type PaymentEventName, type PaymentOutcomeEvent } from './payment.events.js';
import type { OutcomeDispatcher } from './settlement.runner.js';

/** A handler of an outcome event; a rejection means "not handled: run it again later". */
export type OutcomeHandler<E extends PaymentOutcomeEvent = PaymentOutcomeEvent> = (event: E) => unknown;

/**
 * Runs every handler and waits for all of them, even when one fails early: releasing the
 * outcome while another handler still runs would let the next attempt run that one twice at
 * once. Rejects with an AggregateError of the failures, once all have settled.
 */
export async function runAllHandlers(handlers: readonly OutcomeHandler[], event: PaymentOutcomeEvent): Promise<void> {
  const results = await Promise.allSettled(handlers.map(async (handler) => handler(event)));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} of ${handlers.length} ${event.constructor.name} handler(s) failed`);
}

/**
 * A dispatcher over a table of handlers per event name. A confirmation with no handler fails
 * (so it is retried, never marked done with nobody told); other outcomes without a handler are
 * simply done.
 * @param handlersOf the handlers registered for an event name
 */
export function dispatcherOf(handlersOf: (name: PaymentEventName) => readonly OutcomeHandler[]): OutcomeDispatcher {
  return async (name, event) => {
    const handlers = handlersOf(name);
    if (handlers.length === 0 && name === PaymentEvents.CONFIRMED) throw new Error(`no ${PaymentEvents.CONFIRMED} handler is registered`);
    await runAllHandlers(handlers, event);
  };
}
