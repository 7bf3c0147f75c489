import { Inject } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { PaymentEvents, type PaymentEventName } from '../core/settlement/index.js';
import { registrationEventName } from './payments.events-bridge.js';
import { getPaymentsServiceToken } from './payments.service.js';
import { getPaymentsClientToken, getPaymentsOptionsToken } from './payments.tokens.js';

// `@OnEvent`'s options are read from its signature: @nestjs/event-emitter 3.x (Nest 11) does not export `OnEventOptions`.
/**
 * Listener options of the payment decorators. Errors always propagate (that is the delivery
 * guarantee), and listeners are always awaited, so `suppressErrors`, `async` and `promisify` are
 * not options.
 */
export type PaymentEventHandlerOptions = Omit<
  NonNullable<Parameters<typeof OnEvent>[1]>,
  'suppressErrors' | 'async' | 'promisify'
> & {
  /**
   * Only events of this registration (`name` of `PaymentsModule.forRoot({ name })`), for apps with
   * several merchant accounts. Default: events of every registration (`event.registration` says which).
   */
  registration?: string;
};

/**
 * Marks a provider method as a handler of a payment event. Unlike a plain `@OnEvent`, errors are
 * not swallowed and the handler is awaited: an outcome handler that throws leaves the outcome
 * undone (the webhook answers 500) and it runs again on the next webhook, return or
 * reconciliation.
 *
 * @param event one of {@link PaymentEvents}
 * @param options eventemitter2 listener options (e.g. `prependListener`) and `registration`
 */
export function OnPaymentEvent(event: PaymentEventName, options: PaymentEventHandlerOptions = {}): MethodDecorator {
  const { registration, ...listener } = options;
  // A registration's own event name rather than a wrapper around the method: stacked decorators
  // and the method's other metadata stay untouched, and the dispatcher sees exactly the listeners
  // that concern the registration (so "no payment.confirmed handler" is still detected).
  return OnEvent(registration === undefined ? event : registrationEventName(event, registration), {
    ...listener,
    suppressErrors: false,
    async: false,
  });
}

/** Handles `payment.confirmed` (`PaymentConfirmedEvent`): the service verified the payment as paid. */
export function OnPaymentConfirmed(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.CONFIRMED, options);
}

/** Handles `payment.failed` (`PaymentFailedEvent`): verified as `FAILURE` or `SYSTEM_FAILURE`. */
export function OnPaymentFailed(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.FAILED, options);
}

/** Handles `payment.expired` (`PaymentExpiredEvent`): the session ended unpaid. */
export function OnPaymentExpired(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.EXPIRED, options);
}

/** Handles `payment.authorized` (`PaymentAuthorizedEvent`): a pre-authorization holds the amount; capture or cancel it. */
export function OnPaymentAuthorized(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.AUTHORIZED, options);
}

/**
 * Handles `payment.duplicate` (`PaymentDuplicateEvent`): a payment succeeded for an order another
 * payment already settled (a second charge, never `payment.confirmed`); `event.settledBy` names
 * the payment that paid the order. Refund it, or set `duplicates: { refund: true }`.
 */
export function OnPaymentDuplicate(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.DUPLICATE, options);
}

/**
 * Injects the options of a registration as they were passed to `forRoot()` / returned by the
 * async factory.
 * @param name the registration's `name`; omitted: the default registration
 */
export function InjectPaymentsOptions(name?: string): ParameterDecorator & PropertyDecorator {
  return Inject(getPaymentsOptionsToken(name));
}

/**
 * Injects a registration's `PaymentsService`.
 * @param name the registration's `name`; omitted: the default registration (same as injecting `PaymentsService` by type)
 */
export function InjectPayments(name?: string): ParameterDecorator & PropertyDecorator {
  return Inject(getPaymentsServiceToken(name));
}

/**
 * Injects a registration's framework-free `PaymentsClient` (what `PaymentsService` wraps; the
 * Express layer's client).
 * @param name the registration's `name`; omitted: the default registration (`PAYMENTS_CLIENT`)
 */
export function InjectPaymentsClient(name?: string): ParameterDecorator & PropertyDecorator {
  return Inject(getPaymentsClientToken(name));
}
