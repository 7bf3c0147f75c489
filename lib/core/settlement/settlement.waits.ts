/**
 * Every wait of the settlement engine, in one place (the transport's own retry back-off is
 * `api/retry.policy.ts`). Webhook answers' `Retry-After`, the return page's patience and the
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
   * A payment verified as still pending this recently is answered from the record: a return page
   * that reloads every few seconds must not turn into a verify call per reload (the service
   * rate-limits verify).
   */
  pendingRecheckMs: 10_000,
  /** Longest wait between two reconciliation checks of one payment. */
  reconcileMaxBackoffMs: 3_600_000,
} as const;
