/**
 * Every wait of the settlement engine, in one place (the transport's own retry back-off is
 * `api/http.transport.ts`). Webhook answers' `Retry-After`, the return page's patience and the
 * reconciliation back-off all read these.
 */
export const SETTLEMENT_WAITS = {
  /** `Retry-After` of a webhook answered 409: another path holds the payment's claim. */
  busyRetrySecs: 5,
  /** `Retry-After` of a 503: the store or the service could not be reached, or shutting down. */
  unavailableRetrySecs: 5,
  /** How long `reconcilePayment` waits for another path that holds the same payment. */
  returnWaitMs: 3_000,
  /** How often it reads the outcome record meanwhile. */
  returnPollMs: 150,
  /**
   * The verify budget's interval: a payment verified this recently without being settled (still
   * pending, or the call failed) is answered from memory (and, on the return check, from its
   * outcome record) rather than verified again: a return page that reloads every few seconds, or
   * a service that redelivers, must not turn into a verify call each (the service rate-limits
   * verify). Also the circuit breaker's cooldown: recovery within one interval.
   */
  verifyIntervalMs: 10_000,
  /** Longest wait between two reconciliation checks of one payment. */
  reconcileMaxBackoffMs: 3_600_000,
} as const;
