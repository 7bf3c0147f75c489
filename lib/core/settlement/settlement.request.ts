import type { PaymentsError, VerifiedPayment } from '../api/index.js';
import type { DuplicateRefund, OrderSettlement, OutcomeSource } from '../store/index.js';
import type { PathEvidence } from './settlement.evidence.js';
import type { HandledOutcome, OutcomeExpectation } from './settlement.decision.js';

/*
 * What a path hands the settlement runner, and what it gets back. Every front end maps a
 * SettleResult exhaustively to its own answer: webhook.processor.ts (HTTP), settlement.reconciler.ts
 * (ReconcileResult), reconciliation.scheduler.ts (reconciliation's bookkeeping).
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
      /** Set when a handler failed: the duplicate's handlers run again later. */
      error?: string;
      /**
       * Set when the duplicate is reported but its refund was not sent yet (nothing reached the
       * service, or a 429): it is tried again on a later attempt (at most 3 calls in all).
       */
      refundRetry?: string;
    };

/** A webhook token to settle by: its stored binding, looked up with the claim, says what to expect. */
export interface TokenLookup {
  /** The token's nonce, under which its binding is stored. */
  id: string;
  /** What the token itself was signed for: what to expect when the store has no binding of it. */
  expected: OutcomeExpectation;
  /** The amount in millimes the token was signed for (a re-made binding's). */
  amount: string;
  /** When the token expires, in ms since the epoch: a re-made binding lasts until then. */
  expiresAt: number;
}

/**
 * What the runner asks about a signed token whose binding the store no longer has (a restart with
 * the memory store, an eviction): `UnboundTokens` of the verify gate (settlement.gate.ts). The
 * runner holds it; nothing is passed in with a request.
 */
export interface UnboundTokenPolicy {
  /** Run once the payment is claimed, before the verify call: seconds to wait when over the token's limit, else undefined. */
  admit(token: TokenLookup): Promise<number | undefined>;
  /** Run with the result once the claim is finished (re-binding the token, freeing its rate-limit slot). */
  settled(paymentId: string, token: TokenLookup, result: SettleResult): Promise<void>;
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
  /**
   * What a PENDING answer earns (settlement.evidence.ts): the pending lane's fast checks (default),
   * the short lane (a return alone found it pending), or nothing (a return within the payment's allowance).
   */
  pendingLane?: PathEvidence;
  /** Called once the payment is verified and its handlers are about to run (reconciliation then verifies the next one). */
  onHandlers?: () => void;
  /** What watches the attempt's handlers (telemetry times them); default nothing. */
  observe?: SettleObserver;
}

/** What watches an attempt from outside: the handlers run through it (telemetry times them). */
export interface SettleObserver {
  /** Runs the handlers of the event `name`. */
  handlers<T>(name: string, run: () => Promise<T>): Promise<T>;
}

/**
 * What owns the payments' claims: the settlement runner, or the runner wrapped by what observes it
 * (TracedSettlements, in settlement.runner.ts). Nothing else claims.
 */
export interface Settlements {
  /** Runs one settlement; never throws: every result is a {@link SettleResult}. */
  settle(request: SettleRequest): Promise<SettleResult>;
  /**
   * Runs `work` while holding the payment's claim, then releases it (bookkeeping that must not race
   * a settle); nothing runs when the payment is done or busy.
   */
  hold(paymentId: string, source: OutcomeSource, work: () => Promise<void>): Promise<'held' | 'done' | 'busy'>;
}
