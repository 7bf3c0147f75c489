/**
 * Errors the sandbox throws at the test that drives it (never on the wire).
 */
import type { SandboxSettlement } from './sandbox.types.js';

/**
 * A payment was settled (`completePayment` / `failPayment`) but its webhook reached nobody: every
 * attempt failed or the sandbox closed first. The state change is kept (the customer did pay or
 * decline); `settlement` says what happened, so a test that expected this can still inspect it,
 * or pass `{ requireDelivery: false }` to get the settlement without the error.
 */
export class SandboxWebhookError extends Error {
  /** `'SandboxWebhookError'`. */
  override readonly name = 'SandboxWebhookError';
  /** The payment whose webhook was not delivered. */
  readonly paymentId: string;
  /** Attempts made. */
  readonly attempts: number;
  /** HTTP status of the last answer, when there was one. */
  readonly lastStatus?: number;
  /** The full settlement, state change included. */
  readonly settlement: SandboxSettlement;

  constructor(settlement: SandboxSettlement) {
    const outcome = settlement.webhook;
    const why =
      outcome?.error ??
      (settlement.lastStatus !== undefined ? `last answer HTTP ${settlement.lastStatus}` : 'no answer');
    super(
      `PaymentsSandbox: the ${settlement.status} webhook of payment ${settlement.payment.paymentId} was not delivered ` +
        `after ${settlement.attempts} attempt(s) (${why}); pass { requireDelivery: false } if that is expected`,
    );
    this.paymentId = settlement.payment.paymentId;
    this.attempts = settlement.attempts;
    if (settlement.lastStatus !== undefined) this.lastStatus = settlement.lastStatus;
    this.settlement = settlement;
  }
}
