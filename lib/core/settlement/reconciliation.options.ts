// Reconciliation's options live beside it, which reads them; the client's options take them in.

/** Reconciliation: re-checking payments whose outcome the plugin has not seen. */
export interface PaymentsReconciliationOptions {
  /** Run the periodic check in this process. Default true. (Every instance may run it: the store hands each payment to one.) */
  enabled?: boolean;
  /** Seconds between two runs. Default 60. */
  intervalSecs?: number;
  /** Seconds after a session's end before its first check (the webhook usually comes first). Default 60. */
  graceSecs?: number;
  /**
   * Checks of the fast lane: the first checks of a payment that stays unsettled, with waits that
   * double from `intervalSecs` (at most an hour apart). With the defaults they span about four
   * hours. A payment still unsettled after them is not dropped: it moves to the slow lane (see
   * `horizonDays`). Default 10.
   */
  maxChecks?: number;
  /** Payments checked per run, at most. Default 20 (each costs one call to the service). */
  batchSize?: number;
  /**
   * How long a payment whose outcome stays unknown is kept checked, in days from its generation.
   * After the fast lane (`maxChecks`) it is checked in the slow lane: hourly until it is a day
   * old, then daily, until this horizon; its outcome record then says so (`outcome: 'pending'`,
   * `lastError` starting with `overdue:`), and the Terminus health indicator reports it. Only
   * past the horizon is it given up: logged as an error, its record marked `abandoned:`, to be
   * reconciled by hand (`reconcilePayment`). Default 7.
   */
  horizonDays?: number;
}
