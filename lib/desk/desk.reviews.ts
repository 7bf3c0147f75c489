import { randomUUID } from 'node:crypto';
import type { PaymentsClient } from '../core/client/index.js';
import type { OutcomeRecord } from '../core/store/index.js';

/** Who reviewed a payment, when, and what it needed then. */
export interface DeskReview {
  /** The payment reviewed. */
  paymentId: string;
  /** The reviewer's id (the principal's id). */
  by: string;
  /** The reviewer's name, as the host named them. */
  name: string;
  /** ISO 8601 time of the review. */
  at: string;
  /** What the payment needed when it was reviewed ({@link needOf}). */
  need: string;
}

/** What marking a payment reviewed did. */
export type ReviewResult = 'reviewed' | 'reviewed-earlier' | 'not-reviewable';

/**
 * What a payment needs of a person, as one string: its outcome, its handlers' state, its refund
 * state and its attempts. A review holds for this value only: a new attempt (a new failure, a
 * check of an overdue payment that changed its outcome) or a refund state that moved changes it,
 * and the payment is back in its list. `undefined`: the payment needs nothing (it cannot be reviewed).
 */
export function needOf(record: OutcomeRecord, needsPerson: (record: OutcomeRecord) => boolean): string | undefined {
  if (!needsPerson(record)) return undefined;
  return [record.outcome, record.handlers, record.refundState ?? '-', String(record.attempts)].join('/');
}

/** The store keys of one payment's review (token ids in the binding port never hold a `:`). */
function reviewKey(registration: string | undefined, paymentId: string): string {
  return `desk-review:${registration ?? ''}:${paymentId}`;
}

/**
 * The reviews, kept through the store's binding port (every store has it, so no migration): one
 * binding per payment, its fields carrying the review (`amount`: what it needed, `createdAt`: when,
 * `developerTrackingId`: who, as JSON). A claim on the payment and its need makes a double submit,
 * on one instance or two, record one review.
 */
export class DeskReviews {
  /**
   * @param client the registration's client
   * @param retentionMs how long a review is kept
   * @param now the clock
   */
  constructor(
    private readonly client: PaymentsClient,
    private readonly retentionMs: number,
    private readonly now: () => number,
  ) {}

  /** The review of `paymentId`, if one is kept. */
  async find(paymentId: string): Promise<DeskReview | undefined> {
    const binding = await this.client.store.findBinding(reviewKey(this.client.name, paymentId));
    if (binding === undefined || binding.paymentId !== paymentId || binding.developerTrackingId === undefined)
      return undefined;
    try {
      const who = JSON.parse(binding.developerTrackingId) as { by?: unknown; name?: unknown };
      if (typeof who.by !== 'string' || typeof who.name !== 'string') return undefined;
      return { paymentId, by: who.by, name: who.name, at: binding.createdAt, need: binding.amount };
    } catch {
      return undefined;
    }
  }

  /** Whether `record` was reviewed for what it needs now (`review` is its kept review). */
  static holds(
    record: OutcomeRecord,
    review: DeskReview | undefined,
    needsPerson: (r: OutcomeRecord) => boolean,
  ): boolean {
    return review !== undefined && review.need === needOf(record, needsPerson);
  }

  /** Records that `by` reviewed `record` for what it needs now; once per payment and need. */
  async mark(
    record: OutcomeRecord,
    needsPerson: (record: OutcomeRecord) => boolean,
    by: { id: string; name: string },
  ): Promise<ReviewResult> {
    const need = needOf(record, needsPerson);
    if (need === undefined) return 'not-reviewable';
    const key = `${reviewKey(this.client.name, record.paymentId)}:${need}`;
    const store = this.client.store;
    const owner = randomUUID();
    const claim = await store.claim(key, owner, 30_000);
    if (claim !== 'claimed') return 'reviewed-earlier';
    try {
      await store.saveBinding(
        reviewKey(this.client.name, record.paymentId),
        {
          paymentId: record.paymentId,
          amount: need,
          developerTrackingId: JSON.stringify({ by: by.id, name: by.name }),
          createdAt: new Date(this.now()).toISOString(),
        },
        this.retentionMs,
      );
    } catch (error) {
      await store.release(key, owner);
      throw error;
    }
    await store.markDone(key, owner, this.retentionMs);
    return 'reviewed';
  }
}
