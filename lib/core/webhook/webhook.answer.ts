import { assertNever } from '../common/index.js';
import { type SettleResult, SETTLEMENT_WAITS } from '../settlement/index.js';

/** The JSON body of a webhook answer. Never contains secrets or internal error details. */
export interface WebhookAnswerBody {
  /** Whether the delivery was taken (it may still be pending). */
  received: boolean;
  /** The payment was already settled: nothing ran. */
  duplicate?: boolean;
  /** The service says the payment is not settled yet: reconciliation checks it later. */
  pending?: boolean;
  /** Why it was refused. */
  error?: string;
  /**
   * The delivery was a set-up probe (`nestjs-payments doctor --probe`), signed with the webhook
   * secret: it reached this route, and nothing was looked up, verified or run.
   */
  probe?: boolean;
}

/** The HTTP answer a webhook front end (Nest controller, Express router) sends. */
export interface WebhookAnswer {
  /** HTTP status. */
  status: number;
  /** JSON body. */
  body: WebhookAnswerBody;
  /** Extra headers, e.g. `Retry-After`. */
  headers?: Record<string, string>;
}

/** A refusal: `received: false`, the reason, and extra headers. */
export const refusal = (status: number, error: string, headers?: Record<string, string>): WebhookAnswer => ({
  status,
  body: { received: false, error },
  headers,
});

/** 503 with a Retry-After: the store or the service could not be reached, or shutting down. */
export const unavailable = (
  seconds: number = SETTLEMENT_WAITS.unavailableRetrySecs,
  error = 'temporarily unavailable',
): WebhookAnswer => refusal(503, error, { 'Retry-After': String(seconds) });

/** The answer to a delivery that was already handled (also an unsigned delivery of a done payment). */
export const duplicate = (): WebhookAnswer => ({ status: 200, body: { received: true, duplicate: true } });

/**
 * The HTTP answer for what settling a delivery did: 200 handled, duplicate or a mismatch (logged
 * and recorded; also a duplicate charge of a paid order, handled); 202 still pending; 401 foreign; 409 + Retry-After busy; 429 + Retry-After over the
 * rate limit of a token without a binding; 500 a handler failed (delivered again later); 503 +
 * Retry-After the store or the service unavailable, or the payment verified moments ago (answered
 * from memory: delivered again later, and re-checked by the plugin meanwhile).
 */
export function answerFor(result: SettleResult): WebhookAnswer {
  switch (result.kind) {
    case 'handled':
    case 'mismatch':
      return { status: 200, body: { received: true } };
    case 'duplicate':
      return duplicate();
    case 'pending':
      return { status: 202, body: { received: true, pending: true } };
    case 'busy':
      return refusal(409, 'this payment is being handled', { 'Retry-After': String(SETTLEMENT_WAITS.busyRetrySecs) });
    case 'foreign':
      return refusal(401, 'webhook token was issued for another payment');
    case 'handlers-failed':
      return refusal(500, 'handler failed');
    case 'order-duplicate':
      // A second charge of a paid order: handled as such (200), or to run again (500: delivered again).
      return result.error === undefined ? { status: 200, body: { received: true } } : refusal(500, 'handler failed');
    case 'verify-failed':
      return unavailable(result.retryAfterSecs);
    case 'rate-limited':
      return refusal(429, 'too many deliveries for this webhook token', {
        'Retry-After': String(result.retryAfterSecs),
      });
    case 'store-unavailable':
      return unavailable();
    case 'deferred':
      // Verified moments ago without settling it, or the service is failing: no call now. Never
      // 2xx: a service that takes a 2xx as delivered would not send it again, and this delivery
      // may be the one saying the payment just settled (the plugin re-checks it on its own too).
      return result.pending
        ? refusal(503, 'this payment was checked moments ago; deliver again later', {
            'Retry-After': String(result.retryAfterSecs),
          })
        : unavailable(result.retryAfterSecs);
    default:
      return assertNever(result);
  }
}
