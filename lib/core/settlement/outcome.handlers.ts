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

/**
 * Runs the handlers of one outcome event. It must run every handler, even when one fails, and
 * reject (with an AggregateError, say) only once all have settled: releasing the claim while one
 * still runs would let the next attempt run it a second time concurrently.
 */
export type OutcomeDispatcher = (name: PaymentEventName, event: PaymentOutcomeEvent) => Promise<void>;

/**
 * Runs the handlers of an operation's event (`payment.captured`, `payment.refunded`,
 * `payment.cancelled`), emitted after the service did it; a rejection is logged, never thrown to
 * the operation's caller.
 */
export type OperationDispatcher = (
  name: PaymentEventName,
  event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
) => Promise<void>;

/** A dispatcher of every event, outcomes and operations alike (what the Express router and the Nest event bridge register). */
export type EventDispatcher = (name: PaymentEventName, event: PaymentEvent) => Promise<void>;

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
  const results = await Promise.allSettled(handlers.map(async (handler) => handler(event)));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (failures.length > 0)
    throw new AggregateError(
      failures,
      `${failures.length} of ${handlers.length} ${event.constructor.name} handler(s) failed`,
    );
}

/** How {@link dispatcherOf} finds and waits for the handlers. */
export interface HandlerTableOptions {
  /** Resolves once the handlers are registered (Nest registers them at bootstrap); default at once. */
  ready?: () => Promise<unknown>;
  /** What to add to the error of a confirmation nobody handles (how to register a handler). */
  hint?: string;
}

/**
 * A dispatcher over a table of handlers per event name. A confirmation with no handler fails
 * (so it is retried, never marked done with nobody told); other outcomes without a handler are
 * simply done. Front ends register their handlers this way (the Express router's callbacks, the
 * Nest module's listeners): the handlers are invoked here, in the core.
 * @param handlersOf the handlers registered for an event name
 * @param options waiting for the registration, and the hint of the missing-handler error
 */
export function dispatcherOf(
  handlersOf: (name: PaymentEventName) => readonly AnyEventHandler[],
  options: HandlerTableOptions = {},
): EventDispatcher {
  return async (name, event) => {
    // An outcome settled before the front end registered its handlers must not find "no handler"
    // only because they are not registered yet.
    await options.ready?.();
    const handlers = handlersOf(name);
    if (handlers.length === 0 && name === PaymentEvents.CONFIRMED)
      throw new Error(`no ${PaymentEvents.CONFIRMED} handler is registered${options.hint ?? ''}`);
    await runAllHandlers(handlers, event);
  };
}

/**
 * The handlers the runner invokes: the dispatchers a front end set (`client.setOutcomeDispatcher`).
 * One per runner; nothing settles through anything else.
 */
export class OutcomeHandlers {
  #outcomes?: OutcomeDispatcher;
  #operations?: OperationDispatcher;

  /** Sets who runs the outcomes' handlers and, optionally, the operations'. */
  set(outcomes: OutcomeDispatcher | undefined, operations?: OperationDispatcher): void {
    this.#outcomes = outcomes;
    this.#operations = operations;
  }

  /** Whether the outcomes' handlers are set. */
  get ready(): boolean {
    return this.#outcomes !== undefined;
  }

  /** Runs an outcome's handlers; rejects when one failed, or when none are set yet (the outcome is then retried). */
  async run(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    const outcomes = this.#outcomes;
    if (!outcomes) throw new Error('no outcome handlers are registered yet');
    await outcomes(name, event);
  }

  /** Runs the handlers of an outcome nothing waits on (`payment.mismatch`); none set: nothing runs. */
  async notify(name: PaymentEventName, event: PaymentOutcomeEvent): Promise<void> {
    await this.#outcomes?.(name, event);
  }

  /** Runs an operation's handlers (none set: nothing runs). */
  async tell(
    name: PaymentEventName,
    event: PaymentCapturedEvent | PaymentRefundedEvent | PaymentCancelledEvent,
  ): Promise<void> {
    await this.#operations?.(name, event);
  }
}
