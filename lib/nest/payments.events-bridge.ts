import type { EventEmitter2, EventEmitterReadinessWatcher } from '@nestjs/event-emitter';
import { runAllHandlers, type AnyEventHandler } from '../core/settlement/outcome.handlers.js';
import { PaymentEvents, type PaymentEvent, type PaymentEventName } from '../core/settlement/payment.events.js';
import type { EventDispatcher } from '../core/settlement/outcome.handlers.js';

/**
 * The event name a registration-filtered listener subscribes to: `payment.confirmed:b` for
 * `@OnPaymentConfirmed({ registration: 'b' })`. It is not a wildcard segment of its own (the
 * emitter's delimiter is `.`), so `payment.*` listeners do not see it twice: listeners are
 * de-duplicated anyway.
 */
export function registrationEventName(name: string, registration: string): string {
  return `${name}:${registration}`;
}

/**
 * Every listener of an event for one registration: those of the plain name (every registration)
 * and those of the registration's own name, each once.
 */
export function listenersFor(emitter: EventEmitter2, name: string, registration: string | undefined): Array<(...args: unknown[]) => unknown> {
  const all = emitter.listeners(name) as Array<(...args: unknown[]) => unknown>;
  if (registration !== undefined) all.push(...(emitter.listeners(registrationEventName(name, registration)) as Array<(...args: unknown[]) => unknown>));
  return [...new Set(all)];
}

/**
 * Runs every listener of an event and waits for all of them, even when one fails early
 * (`emitAsync` rejects at the first failure while the others still run: the outcome would then be
 * released, and the redelivery would run the slow ones a second time, concurrently).
 * @throws AggregateError of the failures, once all listeners have settled
 */
export async function emitToAll(emitter: EventEmitter2, name: string, registration: string | undefined, event: object): Promise<number> {
  const listeners = listenersFor(emitter, name, registration);
  await runAllHandlers(
    listeners.map(
      (listener): AnyEventHandler =>
        (e) =>
          listener.call(emitter, e),
    ),
    event as PaymentEvent,
  );
  return listeners.length;
}

/**
 * The outcome dispatcher of one registration: outcomes become events on the module's
 * EventEmitter2, every listener is awaited, and a failure of any leaves the outcome undone (it runs
 * again on the next webhook, return or reconciliation). A `payment.confirmed` nobody listens to
 * fails too (never marked done with nobody told); other outcomes without listeners are done.
 *
 * @param emitter the module's emitter (where `@OnPayment…` listeners are registered)
 * @param registration the registration's name, for registration-filtered listeners
 * @param ready resolves once the listeners are registered (Nest registers them at bootstrap)
 */
export function nestOutcomeDispatcher(emitter: EventEmitter2, registration: string | undefined, ready?: EventEmitterReadinessWatcher): EventDispatcher {
  return async (name: PaymentEventName, event: PaymentEvent) => {
    // An outcome settled before bootstrap (reconciliation, an early return) must not find "no
    // listeners" only because they are not registered yet.
    await ready?.waitUntilReady();
    if (name === PaymentEvents.CONFIRMED && listenersFor(emitter, name, registration).length === 0) {
      throw new Error(`no ${name} handler is registered${registration === undefined ? '' : ` for registration '${registration}'`} (use @OnPaymentConfirmed())`);
    }
    await emitToAll(emitter, name, registration, event);
  };
}
