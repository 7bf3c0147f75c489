import { randomUUID } from 'node:crypto';
import { type PaymentsLogger, describe } from '../common/index.js';
import { sleep, within, type Clock, type SharedClock } from '../time/index.js';
import {
  checkoutStepsOf,
  orderLedgerOf,
  readStanding,
  type CheckoutSteps,
  type CheckoutStanding,
  type OrderLedger,
  type PaymentsStore,
  type OrderCheckout,
} from '../store/index.js';
import { cancellationKey } from './payments.cancellations.js';
import type { GeneratedPayment } from './payments.types.js';

/** The rules of checkout reuse. */
export const CHECKOUT_RULES = {
  /** An open payment is reused only while its session has at least this long left (time to pay), ms. */
  reuseMarginMs: 120_000,
  /** Earlier payments of an order remembered as superseded, at most. */
  maxSuperseded: 20,
  /** How long one store lookup before the payment is created may take before it is done without, ms. */
  lookupMs: 1_000,
  /** How long a second call for an order being opened waits for the first one's payment, ms. */
  waitMs: 5_000,
  /** How often it looks, ms. */
  pollMs: 100,
} as const;

/** What `generatePayment` asks of an order's checkout. */
export interface CheckoutRequest {
  /** The order: the idempotency key when given (prefixed `key:`), else the tracking id. */
  orderKey: string;
  /** The amount in millimes. */
  amount: string;
  /** The rest of the request as sent (links, session, card options), without the plugin's webhook token. */
  fingerprint: string;
  /** The request's tracking id, answered with a reused payment. */
  developerTrackingId?: string;
}

/** What to do for a checkout: answer its open payment, or open a new one (remembering those it replaces). */
export type CheckoutPlan = { kind: 'reuse'; checkout: OrderCheckout } | { kind: 'open'; superseded: string[] };

/**
 * What the store knows of an open payment's fate, read from the store shared by every instance
 * (never from one process's memory) before the payment is answered again; a cancellation is one
 * `cancelPayment` recorded.
 */
export type { CheckoutStanding } from '../store/index.js';

/** A payment nothing is known of yet: what a checkout's standing is when it is not looked up. */
export const UNKNOWN_STANDING: CheckoutStanding = Object.freeze({ outcome: undefined, cancelled: false });

/**
 * Whether an open payment may answer its order's next request, given what the store knows of it.
 * Pure. Never a payment that can no longer be paid: declined (`failed`), `expired`, or cancelled;
 * nor one the service answered differently from what was sent (`mismatch`). A payment still open
 * (no outcome, `pending`) is reused, and so is one that took the customer's money or holds it
 * (`confirmed`, `authorized`, `duplicate`): its link shows it paid, where a new one would be a
 * second charge.
 */
export function mayReuse(standing: CheckoutStanding): boolean {
  if (standing.cancelled) return false;
  const outcome = standing.outcome;
  switch (outcome) {
    case undefined:
    case 'pending':
    case 'confirmed':
    case 'authorized':
    case 'duplicate':
      return true;
    case 'failed':
    case 'expired':
    case 'mismatch':
      return false;
    default: {
      const unknown: never = outcome;
      return unknown;
    }
  }
}

/**
 * Whether an order's open payment answers a new request for it. Pure: the time is passed in.
 * Reused: same amount and request, session not about to end, and {@link mayReuse} by its
 * standing. A changed amount or request opens a new payment and the open one is remembered as
 * superseded; one whose session is (nearly) over, or that can no longer be paid, is simply replaced.
 * @param found the order's open checkout, if the store has one
 * @param request what is asked now
 * @param nowMs the current epoch time in ms
 * @param standing what the store knows of the open payment's fate (default: nothing)
 */
export function planCheckout(
  found: OrderCheckout | undefined,
  request: Pick<CheckoutRequest, 'amount' | 'fingerprint'>,
  nowMs: number,
  standing: CheckoutStanding = UNKNOWN_STANDING,
): CheckoutPlan {
  if (!found) return { kind: 'open', superseded: [] };
  const earlier = found.superseded ?? [];
  const endsAt = Date.parse(found.sessionEndsAt);
  if (!(endsAt - nowMs >= CHECKOUT_RULES.reuseMarginMs)) return { kind: 'open', superseded: earlier };
  if (!mayReuse(standing)) return { kind: 'open', superseded: earlier };
  if (found.amount !== request.amount || found.fingerprint !== request.fingerprint) {
    return {
      kind: 'open',
      superseded: [found.paymentId, ...earlier.filter((p) => p !== found.paymentId)].slice(
        0,
        CHECKOUT_RULES.maxSuperseded,
      ),
    };
  }
  return { kind: 'reuse', checkout: found };
}

/** After the payment is created: the writes that record the order's new checkout, and the lock's release. */
export interface CheckoutTicket {
  /** The write of the new checkout (then the lock's release), to be made with the payment's other store writes. */
  record(payment: GeneratedPayment, sessionEndsAt: string): () => Promise<void>;
  /** The payment could not be created: free the order for the next call. */
  abandon(): void;
}

/**
 * One payment per checkout: before `generatePayment` creates a payment for an order, it looks for
 * the order's open payment, holding the order meanwhile (a lock, so that a double click on two
 * instances opens one payment: the second call waits for the first's and answers it). The lock,
 * the lookup and the found payment's standing are one store step (`openCheckout`), the new
 * checkout and the lock's release one more (`closeCheckout`), made with the payment's other store
 * writes. A slow or absent store never blocks the checkout: each lookup is bounded, and without an
 * answer the payment is opened as if the order had none.
 */
export class CheckoutDesk {
  /** The store's order ledger (absent: every call opens a payment). */
  private readonly ledger: (PaymentsStore & OrderLedger) | undefined;
  /** The order's lock and lookup, and the checkout's write and the lock's release, each one step when the store can. */
  private readonly steps: CheckoutSteps | undefined;

  /**
   * @param store the store: its order ledger, when it has one (and its claims, when the ledger
   *   lacks the single steps)
   * @param settings `enabled` (`orders.reuseOpenPayment`), the lock's lease in ms, and the
   *   registration's name (whose cancellations are looked up)
   * @param logger where a store that does not answer is reported
   * @param clock the time shared with the other instances (session ends, written by whichever
   *   instance opened the payment), and its timers (waits)
   */
  constructor(
    private readonly store: PaymentsStore,
    private readonly settings: { enabled: boolean; leaseMs: number; registration?: string },
    private readonly logger: PaymentsLogger,
    private readonly clock: SharedClock,
  ) {
    const ledger = orderLedgerOf(store);
    this.ledger = ledger;
    this.steps = ledger && checkoutStepsOf(ledger);
  }

  /**
   * The order's open payment to answer, or a ticket to record the new one with (`undefined` when
   * the request has no order, or reuse is off).
   */
  async begin(
    request: CheckoutRequest | undefined,
  ): Promise<{ reuse: GeneratedPayment } | { ticket: CheckoutTicket | undefined }> {
    const { ledger, steps } = this;
    if (!request || !ledger || !steps || !this.settings.enabled) return { ticket: undefined };
    const { orderKey } = request;
    const owner = randomUUID();
    const cancellationPrefix = cancellationKey(this.settings.registration, '');
    const unanswered = (error: unknown) =>
      this.logger.warn(
        `generatePayment: the store did not answer the checkout lookup of an order in time; opening a payment without it: ${describe(error)}`,
      );
    const release = () => void steps.close(orderKey, owner).catch(() => undefined);
    // The open payment's session end was stamped with the shared time: it is compared with the
    // shared time as measured now, never with an instance clock stepped since (or never measured).
    const synced = this.clock.due ? bounded(this.clock.sync(), this.clock).catch(() => undefined) : undefined;
    const opening = await bounded(
      steps.open({ orderKey, owner, leaseMs: this.settings.leaseMs, cancellationPrefix }),
      this.clock,
    ).catch((error: unknown) => {
      unanswered(error);
      // The lock may still be taken after the answer was given up on: freed behind it.
      release();
      return undefined;
    });
    if (opening === undefined) return { ticket: undefined };
    const { lock } = opening;
    let found = opening.checkout;
    let standing = opening.standing;
    try {
      // Another call is opening this order's payment right now (a double click): wait for it.
      const before = found?.paymentId;
      for (
        let waited = 0;
        lock === 'busy' && waited < CHECKOUT_RULES.waitMs && found?.paymentId === before;
        waited += CHECKOUT_RULES.pollMs
      ) {
        await sleep(this.clock, CHECKOUT_RULES.pollMs);
        found = await bounded(ledger.findCheckout(orderKey), this.clock);
      }
      // The standing read with the lock is of the checkout found then; another one is looked up.
      if (found && (standing === undefined || found.paymentId !== before))
        standing = await bounded(readStanding(ledger, cancellationPrefix, found.paymentId), this.clock);
    } catch (error) {
      unanswered(error);
      if (lock === 'claimed') release();
      return { ticket: undefined };
    }
    if (synced) await synced;
    const plan = planCheckout(found, request, this.clock.now(), standing);
    if (plan.kind === 'reuse') {
      if (lock === 'claimed') release();
      const { paymentId, link } = plan.checkout;
      const tracking = request.developerTrackingId;
      return {
        reuse: tracking === undefined ? { paymentId, link } : { paymentId, link, developerTrackingId: tracking },
      };
    }
    return {
      ticket: {
        abandon: () => {
          if (lock === 'claimed') release();
        },
        record: (payment, sessionEndsAt) => async () => {
          const checkout: OrderCheckout = {
            paymentId: payment.paymentId,
            link: payment.link,
            amount: request.amount,
            fingerprint: request.fingerprint,
            sessionEndsAt,
          };
          if (plan.superseded.length > 0) checkout.superseded = plan.superseded;
          const ttlMs = Math.max(Date.parse(sessionEndsAt) - this.clock.now(), 0) + CHECKOUT_RULES.reuseMarginMs;
          // One step: the checkout saved and the lock freed (a lock this call does not hold is left as it is).
          await steps.close(orderKey, owner, { checkout, ttlMs });
        },
      },
    };
  }
}

/** `promise`, or a rejection once `ms` of `clock`'s time have passed without its answer (a slow store is done without). */
export function bounded<T>(promise: Promise<T>, clock: Clock, ms: number = CHECKOUT_RULES.lookupMs): Promise<T> {
  return within(
    promise,
    clock,
    ms,
    () => {
      throw new Error(`no answer within ${ms} ms`);
    },
    { keepAlive: true },
  );
}
