import type { PaymentOutcome, OutcomeSource } from '../store/index.js';
import type { VerifiedPayment } from '../api/index.js';
import {
  PaymentAuthorizedEvent,
  PaymentConfirmedEvent,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentRefundedEvent,
  PaymentEvents,
  PaymentExpiredEvent,
  PaymentFailedEvent,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
  type HandlerContext,
} from './payment.events.js';

type OutcomeEventClass = new (
  outcome: PaymentOutcome,
  verification: VerifiedPayment,
  source: OutcomeSource,
  registration: string | undefined,
  occurredAt?: Date,
  context?: HandlerContext,
) => PaymentOutcomeEvent;

/** The payload class of each outcome whose handlers run. */
export const OUTCOME_EVENT_CLASSES: Readonly<
  Record<'confirmed' | 'failed' | 'expired' | 'authorized', OutcomeEventClass>
> = {
  confirmed: PaymentConfirmedEvent,
  failed: PaymentFailedEvent,
  expired: PaymentExpiredEvent,
  authorized: PaymentAuthorizedEvent,
};

/** A handler of an outcome event; a rejection means "not handled: run it again later". */
export type OutcomeHandler<E extends PaymentEvent = PaymentOutcomeEvent> = (event: E) => unknown;

/**
 * A handler of any one event kind, as a table of handlers per event name holds them: each is only
 * ever called with the events of its own name (declared with method syntax so that a handler of
 * one event class fits).
 */
export type AnyEventHandler = { handle(event: PaymentEvent): unknown }['handle'];

/**
 * Runs every handler and waits for all of them, even when one fails early: releasing the
 * outcome while another handler still runs would let the next attempt run that one twice at
 * once. Rejects with an AggregateError of the failures, once all have settled.
 */
export async function runAllHandlers(handlers: readonly AnyEventHandler[], event: PaymentEvent): Promise<void> {
  // One handler (the common case) is all of them: the same result without Promise.allSettled's machinery.
  if (handlers.length === 1) {
    let failure: { reason: unknown } | undefined;
    try {
      await handlers[0](event);
    } catch (reason) {
      failure = { reason };
    }
    if (failure) throw new AggregateError([failure.reason], `1 of 1 ${event.constructor.name} handler(s) failed`);
    return;
  }
  const results = await Promise.allSettled(handlers.map(async (handler) => handler(event)));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (failures.length > 0)
    throw new AggregateError(
      failures,
      `${failures.length} of ${handlers.length} ${event.constructor.name} handler(s) failed`,
    );
}

/**
 * The handlers a front end registers with the core: a lookup, not a dispatcher. When an event
 * happens the core asks it for that event's handlers and runs them itself ({@link runAllHandlers}),
 * so control goes down into the front end only for the host's own handlers. The Express router's
 * callbacks, the Nest module's listeners, Vendure's and Medusa's settlement are each one.
 */
export interface HandlerLookup {
  /** The handlers registered for an event name (all are run and awaited). */
  handlersOf(name: PaymentEventName): readonly AnyEventHandler[];
  /** Resolves once the handlers are registered (Nest registers them at bootstrap); default: at once. */
  ready?(): Promise<unknown>;
  /** What to add to the error of a confirmation nobody handles (how to register a handler). */
  hint?: string;
}

/**
 * A lookup that hands every event to one function: for a front end that maps the event names
 * itself, exhaustively (Vendure's settlement, Medusa's reports). Its `handle` runs for the
 * operations' events too, so a `payment.confirmed` always has a handler.
 */
export function everyEventTo(handle: (name: PaymentEventName, event: PaymentEvent) => unknown): HandlerLookup {
  return { handlersOf: (name) => [(event: PaymentEvent) => handle(name, event)] };
}

/**
 * The handlers the runner invokes, from the lookup a front end registered
 * (`client.setHandlers`). One per runner; nothing settles through anything else. A confirmation
 * with no handler fails (so it is retried, never marked done with nobody told); other events
 * without a handler are simply done.
 */
export class OutcomeHandlers {
  #lookup?: HandlerLookup;

  /** Sets the front end's lookup (`undefined`: none, outcomes are left unsettled). */
  set(lookup: HandlerLookup | undefined): void {
    this.#lookup = lookup;
  }

  /** Whether a lookup is set. */
  get ready(): boolean {
    return this.#lookup !== undefined;
  }

  /** Runs an outcome's handlers; rejects when one failed, or when no lookup is set yet (the outcome is then retried). */
  async run(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    const lookup = this.#lookup;
    if (!lookup) throw new Error('no outcome handlers are registered yet');
    await runFrom(lookup, name, event);
  }

  /** Runs the handlers of an outcome nothing waits on (`payment.mismatch`); no lookup: nothing runs. */
  async notify(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    if (this.#lookup) await runFrom(this.#lookup, name, event);
  }

  /** Runs an operation's handlers (no lookup: nothing runs). */
  async tell(
    name: PaymentEventName,
    event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
  ): Promise<void> {
    if (this.#lookup) await runFrom(this.#lookup, name, event);
  }
}

async function runFrom(lookup: HandlerLookup, name: PaymentEventName, event: PaymentEvent): Promise<void> {
  // An outcome settled before the front end registered its handlers must not find "no handler"
  // only because they are not registered yet.
  const ready = lookup.ready?.();
  if (ready !== undefined) await ready;
  const handlers = lookup.handlersOf(name);
  if (handlers.length === 0 && name === PaymentEvents.CONFIRMED)
    throw new Error(`no ${PaymentEvents.CONFIRMED} handler is registered${lookup.hint ?? ''}`);
  await runAllHandlers(handlers, event);
}
