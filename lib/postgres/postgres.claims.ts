// NUL cannot occur in a PostgreSQL text value, so the pair cannot collide.
const claimId = (eventKey: string, owner: string): string => `${eventKey}\u0000${owner}`;

/**
 * A store's claim statements not settled yet, by (key, owner). A claim statement is remembered
 * until it settles, whether or not its caller still waits: a claim that timed out on our side may
 * still be queued for a connection or in flight, and commit after the caller's release() ran on
 * another connection, blocking the payment for a whole lease. release() of the same (key, owner)
 * is sent only once it settled.
 */
export class ClaimsInFlight {
  readonly #claims = new Map<string, Promise<unknown>>();

  /** Remembers a claim statement until it settles. */
  track(eventKey: string, owner: string, sent: Promise<unknown[]>): void {
    const id = claimId(eventKey, owner);
    const previous = this.#claims.get(id);
    const tracked = previous ? Promise.allSettled([previous, sent]) : sent;
    this.#claims.set(id, tracked);
    const forget = () => {
      if (this.#claims.get(id) === tracked) this.#claims.delete(id);
    };
    tracked.then(forget, forget);
  }

  /** The claim statements of (key, owner) still unsettled, if any. */
  of(eventKey: string, owner: string): Promise<unknown> | undefined {
    return this.#claims.get(claimId(eventKey, owner));
  }
}
