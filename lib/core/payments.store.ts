/**
 * The store keeps what the plugin must remember between generating a payment and receiving its
 * confirmation, and makes webhook delivery effectively-once. The default is the in-memory store
 * (one process); `RedisPaymentsStore` (`nestjs-payments/redis`) shares it between app instances.
 */

/** What the plugin recorded about a payment when it generated it with a signed webhook URL. */
export interface PaymentBinding {
  /** The payment the webhook token was issued for. */
  paymentId: string;
  /** Amount in millimes, as sent at generation. */
  amount: string;
  /** Tracking id sent at generation, if any. */
  developerTrackingId?: string;
  /** ISO 8601 time of generation. */
  createdAt: string;
}

/**
 * Result of {@link PaymentsStore.claim}:
 * - `claimed`: the caller owns the event until it marks it done, releases it or the lease expires;
 * - `done`: the event was already handled;
 * - `busy`: another delivery holds an unexpired claim.
 */
export type ClaimOutcome = 'claimed' | 'done' | 'busy';

/** Storage used for webhook token bindings and delivery claims. All methods must be atomic. */
export interface PaymentsStore {
  /**
   * Remembers which payment a webhook token belongs to.
   * @param tokenId the token's public id (its nonce)
   * @param binding what is known of the payment
   * @param ttlMs how long to keep it
   */
  saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void>;

  /** Returns the binding saved for a token id, or `undefined` when unknown or expired. */
  findBinding(tokenId: string): Promise<PaymentBinding | undefined>;

  /**
   * Atomically claims an event for processing, unless it is done or claimed by someone else.
   * @param eventKey identifies the event, e.g. `payment.confirmed:<paymentId>`
   * @param owner a unique id of this attempt
   * @param leaseMs after this long the claim expires (so a crashed instance does not block it)
   */
  claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome>;

  /**
   * Marks a claimed event done, if `owner` still holds the claim.
   * @param ttlMs how long to remember that it is done (duplicates within it run nothing)
   * @returns false when the claim had expired and been taken over
   */
  markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean>;

  /** Gives a claim up (the handler failed), so that a redelivery runs the event again. */
  release(eventKey: string, owner: string): Promise<void>;

  /** Frees the store's own resources (connections it opened). Called on application shutdown. */
  close?(): Promise<void>;
}
