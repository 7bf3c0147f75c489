import { Inject } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { PaymentEvents, type PaymentEventName } from '../core/payment.events.js';
import { PAYMENTS_MODULE_OPTIONS } from './payments.module-definition.js';

/** `@OnEvent`'s options, read from its signature: @nestjs/event-emitter 3.x (Nest 11) does not export `OnEventOptions`. */
type OnEventOptions = NonNullable<Parameters<typeof OnEvent>[1]>;

/** Listener options of the payment decorators; errors always propagate (that is the guarantee). */
export type PaymentEventHandlerOptions = Omit<OnEventOptions, 'suppressErrors' | 'async' | 'promisify'>;

/**
 * Marks a provider method as a handler of a payment event. Unlike a plain `@OnEvent`, errors are
 * not swallowed: a `payment.confirmed` handler that throws makes the webhook answer 500, and the
 * confirmation is delivered again later.
 *
 * @param event one of {@link PaymentEvents}
 * @param options eventemitter2 listener options (e.g. `prependListener`)
 */
export function OnPaymentEvent(event: PaymentEventName, options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnEvent(event, { ...options, suppressErrors: false, async: false });
}

/**
 * Marks a provider method as a handler of `payment.confirmed`; it receives a
 * `PaymentConfirmedEvent` and is awaited before the webhook answers.
 */
export function OnPaymentConfirmed(options: PaymentEventHandlerOptions = {}): MethodDecorator {
  return OnPaymentEvent(PaymentEvents.CONFIRMED, options);
}

/** Injects the options given to `PaymentsModule.forRoot()` / `forRootAsync()` as they were passed. */
export function InjectPaymentsOptions(): ParameterDecorator & PropertyDecorator {
  return Inject(PAYMENTS_MODULE_OPTIONS);
}
