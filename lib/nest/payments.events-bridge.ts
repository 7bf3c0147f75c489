import type { EventEmitter2, EventEmitterReadinessWatcher } from '@nestjs/event-emitter';
import type { AnyEventHandler, HandlerLookup, PaymentEventName } from '../core/index.js';

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
export function listenersFor(
  emitter: EventEmitter2,
  name: string,
  registration: string | undefined,
): Array<(...args: unknown[]) => unknown> {
  const all = emitter.listeners(name) as Array<(...args: unknown[]) => unknown>;
  if (registration !== undefined)
    all.push(
      ...(emitter.listeners(registrationEventName(name, registration)) as Array<(...args: unknown[]) => unknown>),
    );
  return [...new Set(all)];
}

/**
 * The handlers of one registration, registered with the core as a lookup (`client.setHandlers`):
 * the listeners the `@OnPayment…` decorators put on the module's EventEmitter2. The core runs every
 * one and waits for all of them (`emitAsync` would reject at the first failure while the others
 * still run: the outcome would then be released, and the redelivery would run the slow ones a
 * second time, concurrently). A failure of any leaves the outcome undone (it runs again on the next
 * webhook, return or reconciliation). A `payment.confirmed` nobody listens to fails too (never
 * marked done with nobody told); other outcomes without listeners are done.
 *
 * @param emitter the module's emitter (where `@OnPayment…` listeners are registered)
 * @param registration the registration's name, for registration-filtered listeners
 * @param ready resolves once the listeners are registered (Nest registers them at bootstrap)
 */
export function nestHandlerLookup(
  emitter: EventEmitter2,
  registration: string | undefined,
  ready?: EventEmitterReadinessWatcher,
): HandlerLookup {
  return {
    handlersOf: (name: PaymentEventName): AnyEventHandler[] =>
      listenersFor(emitter, name, registration).map((listener) => (event) => listener.call(emitter, event)),
    ...(ready ? { ready: () => ready.waitUntilReady() } : {}),
    hint: `${registration === undefined ? '' : ` for registration '${registration}'`} (use @OnPaymentConfirmed())`,
  };
}
