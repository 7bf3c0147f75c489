import type { PaymentsError, VerifiedPayment } from '../api/index.js';
import type { DuplicateRefund, OrderSettlement, OutcomeSource } from '../store/index.js';
import type { SettleTrace } from '../telemetry/index.js';
import type { OutcomeDispatcher } from './outcome.handlers.js';
import type { HandledOutcome, OutcomeExpectation } from './settlement.decision.js';
import type { Clock } from '../time/index.js';

/*
 * What a path hands the settlement runner, and what it gets back. Every front end maps a
 * SettleResult exhaustively to its own answer: webhook.answer.ts (HTTP), settlement.reconciler.ts
 * (ReconcileResult), reconciliation.scheduler.ts (the sweep's bookkeeping).
 */

/** What {@link SettlementRunner.settle} did. Every front end maps it exhaustively to its own answer. */
export type SettleResult =
  | { kind: 'handled'; outcome: HandledOutcome; verification: VerifiedPayment }
  | { kind: 'duplicate' }
  | { kind: 'busy' }
  | { kind: 'pending'; verification: VerifiedPayment }
  | { kind: 'mismatch'; verification: VerifiedPayment; problems: string[] }
  | { kind: 'foreign'; problems: string[]; verification?: VerifiedPayment }
  | { kind: 'handlers-failed'; outcome: HandledOutcome; verification: VerifiedPayment; error: string }
  | {
      kind: 'verify-failed';
      error: PaymentsError;
      /** How long the caller should wait before the next attempt (a webhook's Retry-After). */
      retryAfterSecs?: number;
      /** Set when the service rate-limited verify (429): how long every path should pause. */
      rateLimitedSecs?: number;
    }
  | { kind: 'rate-limited'; retryAfterSecs: number }
  | {
      kind: 'deferred';
      /** The payment's last verify said "not yet" (rather than failing). */
      pending: boolean;
      /** Seconds until a verify may be tried again. */
      retryAfterSecs: number;
      /** The error of the last verify, when it failed. */
      error?: PaymentsError;
    }
  | { kind: 'store-unavailable'; error: string }
  | {
      /** Paid, but another payment settled the same order first: `payment.duplicate`, not `payment.confirmed`. */
      kind: 'order-duplicate';
      outcome: 'duplicate';
      verification: VerifiedPayment;
      /** The payment that settled the order. */
      settledBy: OrderSettlement;
      /** The refund made by `duplicates: { refund: true }`, when made. */
      refund?: DuplicateRefund;
      /** Set when the refund could not be made yet or a handler failed: the duplicate is handled again later. */
      error?: string;
    };

/** A webhook token to settle by: its stored binding, looked up with the claim, says what to expect. */
export interface TokenLookup {
  /** The token's nonce, under which its binding is stored. */
  id: string;
  /** What to do when the store has no binding of the token (a restart with the memory store, an eviction). */
  unbound: {
    /** What the token itself was signed for. */
    expected: OutcomeExpectation;
    /** Run once the payment is claimed, before the verify call: seconds to wait when over a rate limit, else undefined. */
    gate(): Promise<number | undefined>;
    /** Run with the result once the claim is finished (re-binding the token, freeing its rate-limit slot). */
    settled(result: SettleResult): Promise<void>;
  };
}

/** One settlement to run. */
export interface SettleRequest {
  /** The payment. */
  paymentId: string;
  /** The path that asks. */
  source: OutcomeSource;
  /** What to expect of the payment, when known before the claim (return, reconciliation, unsigned webhook). */
  expected?: OutcomeExpectation;
  /** A signed webhook's token: its binding is read in the claim's store round trip. */
  token?: TokenLookup;
  /** Called once the payment is verified and its handlers are about to run (the sweep then verifies the next one). */
  onHandlers?: () => void;
}

/** Settings of the runner. */
export interface SettlementRunnerOptions {
  /** How long one attempt may hold a payment's claim, in ms (renewed while handlers run). */
  leaseMs: number;
  /** How long a done outcome is remembered, in ms. */
  doneTtlMs: number;
  /** How long outcome records are kept, in ms. */
  recordTtlMs: number;
  /** The registration's name, put on every event. */
  registration?: string;
  /** The time shared with the other instances (record times are written with it). */
  clock: Clock;
  /**
   * Called when a webhook or a return left the payment unsettled (still pending at the service, a
   * handler failed, or the service gave no answer): the plugin's own re-checks take it from there
   * within seconds, not before `notBeforeMs` (a 429's Retry-After) (settlement.rechecks.ts).
   * Never awaited by the path.
   */
  recheckSoon?: (paymentId: string, expected: OutcomeExpectation | undefined, notBeforeMs?: number) => void;
  /** One confirmation per order (settlement.orders.ts); absent: every successful payment is confirmed. */
  orders?: OrderScreenPort;
}

/** What the runner hands the order screen when a payment is about to be confirmed (its claim held). */
export interface OrderScreenArgs {
  /** The service's answer (`SUCCESS`). */
  verification: VerifiedPayment;
  /** The path. */
  source: OutcomeSource;
  /** The payment's claim key. */
  key: string;
  /** The attempt that holds it. */
  owner: string;
  /** Who runs the handlers, if set yet. */
  dispatch: OutcomeDispatcher | undefined;
  /** The settle's trace, to time the handlers. */
  trace: SettleTrace;
}

/** The order screen as the runner sees it. */
export interface OrderScreenPort {
  /**
   * Settles the payment's order, or finds it settled by another payment. Resolves `undefined`
   * when the payment is the one that settles it (or has no tracking id): the runner confirms it.
   * Otherwise it handled the payment as a duplicate (or failed to) and its result is the settle's;
   * the claim is then finished.
   */
  screen(args: OrderScreenArgs): Promise<SettleResult | undefined>;
}

/** The claim key of a payment's outcome: one per payment, shared by every path and instance. */
export const outcomeKey = (paymentId: string): string => `outcome:${paymentId}`;
