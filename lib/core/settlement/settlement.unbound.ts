import { SYSTEM_CLOCK, type Clock } from '../time/index.js';
import { type PaymentsLogger, assertNever, describe } from '../common/index.js';
import type { PaymentBinding, PaymentsStore } from '../store/index.js';
import type { SettleResult, TokenLookup, UnboundTokenPolicy } from './settlement.request.js';

/**
 * Signed tokens whose binding the store no longer has (a restart with the memory store, an
 * eviction). Such a token costs a verify call whatever payment id comes with it, so a replay of
 * one genuine URL with other ids could spend the merchant's verify budget without limit: one
 * verify per token per `unsignedIntervalSecs`, checked once the payment is claimed (a done or busy
 * payment costs no verify and answers as usual); over it, 429 with Retry-After. The runner holds
 * it (its `unbound` option) and asks it about every token it finds without a binding.
 */
export class UnboundTokens implements UnboundTokenPolicy {
  /**
   * @param store where bindings are re-made and rate limits kept
   * @param intervalSecs one verify per token per this many seconds (`webhook.unsignedIntervalSecs`)
   * @param logger where failures are reported
   * @param clock what a re-made binding's age is read from
   */
  constructor(
    private readonly store: PaymentsStore,
    private readonly intervalSecs: number,
    private readonly logger: PaymentsLogger,
    private readonly clock: Clock = SYSTEM_CLOCK,
  ) {}

  /** @inheritdoc */
  async admit(token: TokenLookup): Promise<number | undefined> {
    return (await this.store.rateLimits.take(slotOf(token), this.intervalSecs * 1000)) ? undefined : this.intervalSecs;
  }

  // What a settle of an unbound token leaves behind. Exhaustive: a new kind of result must say here
  // whether it frees the token's slot and re-binds it, or the compiler refuses it.
  /** @inheritdoc */
  async settled(paymentId: string, token: TokenLookup, result: SettleResult): Promise<void> {
    switch (result.kind) {
      case 'handled':
        // A verify that settled a payment was spent well (and a payment is settled once): the next
        // delivery of this token need not wait for the interval.
        await this.store.rateLimits.free(slotOf(token)).catch(() => undefined);
        return this.#rebind(paymentId, token, result.verification.developerTrackingId);
      case 'pending':
        return this.#rebind(paymentId, token, result.verification.developerTrackingId);
      case 'duplicate':
      case 'busy':
      case 'mismatch':
      case 'foreign':
      case 'handlers-failed':
      case 'verify-failed':
      case 'rate-limited':
      case 'deferred':
      case 'store-unavailable':
      case 'order-duplicate':
        // Nothing settled by this token's verify, or not the payment it was signed for: it stays unbound and gated.
        return;
      default:
        return assertNever(result);
    }
  }

  // Once the service confirmed the payment the token was signed for, bind the token to it, so that
  // a replay of the URL naming another payment is refused without a call to the service. Only a
  // token with a tracking id (which the verified one matched) pins its payment down: without one,
  // any payment of the same amount and no tracking id verifies alike, and binding the token to a
  // replay's payment would turn the genuine delivery away (401). First binding wins.
  async #rebind(paymentId: string, token: TokenLookup, trackingId: string | undefined): Promise<void> {
    if (token.expected.identifiesPayment !== true) return;
    try {
      const ttl = token.expiresAt - this.clock.now();
      if (ttl <= 0 || (await this.store.findBinding(token.id))) return;
      const binding: PaymentBinding = {
        paymentId,
        amount: token.amount,
        createdAt: new Date(this.clock.now()).toISOString(),
      };
      if (trackingId !== undefined) binding.developerTrackingId = trackingId;
      await this.store.saveBinding(token.id, binding, ttl);
    } catch (error) {
      this.logger.warn(`webhook: could not re-bind a token to ${paymentId}: ${describe(error)}`);
    }
  }
}

/** A token's rate-limit slot: one per token (its nonce), whatever payment id comes with it. */
const slotOf = (token: TokenLookup): string => `token:${token.id}`;
