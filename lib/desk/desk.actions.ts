import type { PaymentsClient } from '../core/client/index.js';
import { describe, type PaymentsLogger } from '../core/common/index.js';
import { refundKey, refundOnce } from '../core/settlement/index.js';
import { refundLedgerOf } from '../core/store/index.js';
import { needsPerson, refundable } from './desk.data.js';
import type { DeskHistory } from './desk.history.js';
import type { DeskReviews } from './desk.reviews.js';

/**
 * What an action did, as the page after it tells (a fixed set: the redirect carries the code, never
 * a message, so nothing of the request or the service is echoed through a URL).
 */
export const DESK_RESULTS = {
  handled: 'The handlers ran and succeeded: the payment is settled.',
  'handlers-failed': 'The handlers ran and failed again: the error is below; the payment is retried later too.',
  'not-handled':
    'Nothing ran: the payment is settled already, still pending at the service, or another instance is on it.',
  'check-failed': 'The check could not be made (the service or the store did not answer): try again later.',
  refunded: 'The duplicate was refunded.',
  'refunded-earlier': 'The duplicate had been refunded already: no refund was sent.',
  'refund-unknown': 'A refund was sent earlier and its answer was lost: check at the service; none was sent now.',
  'refund-failed':
    'The refund was not made: see the refund record below; refund it by hand at the service if it must be.',
  'not-refundable': 'This payment is not a duplicate awaiting its refund: nothing was sent.',
  reviewed: 'Marked reviewed: the payment leaves its list until what it needs changes (a new attempt, a new failure).',
  'reviewed-earlier': 'Someone had marked it reviewed already, for what it needs now: nothing was recorded.',
  'not-reviewable': 'This payment needs no person now: nothing was recorded.',
} as const;

/** The code of an action's result. */
export type DeskResult = keyof typeof DESK_RESULTS;

/** The results of an action that did something: the payment's page lists them, with who. */
const DONE: ReadonlySet<DeskResult> = new Set<DeskResult>([
  'handled',
  'handlers-failed',
  'refunded',
  'refund-unknown',
  'refund-failed',
  'reviewed',
]);

/** Reads of a refund record found on its way (another instance sending it) before its answer is taken as lost. */
const REFUND_WAIT_READS = 50;
/** Ms between those reads: 50 of them last about a service call's default timeout (10 s). */
const REFUND_WAIT_MS = 200;

/** The actions a person takes from the desk. */
export type DeskAction = 'run-handlers' | 'refund' | 'review';

/**
 * The desk's actions, each safe to send twice: the engine's own rules make the second a no-op
 * (a claim for the handlers, the payment's refund record for a refund), and a second click on
 * the same instance while the first is running joins it rather than racing it.
 */
export class DeskActions {
  /** Actions running on this desk, by action and payment. */
  readonly #running = new Map<string, Promise<DeskResult>>();

  /**
   * @param client the registration's client
   * @param logger where every action is written, with who did it
   */
  constructor(
    private readonly client: PaymentsClient,
    private readonly logger: PaymentsLogger,
    private readonly reviews: DeskReviews,
    private readonly history: DeskHistory,
  ) {}

  /** Runs `action` on `paymentId` for `who` (a principal), once at a time per payment. */
  run(action: DeskAction, paymentId: string, who: { id: string; name: string }): Promise<DeskResult> {
    const key = `${action}\n${paymentId}`;
    const running = this.#running.get(key);
    if (running !== undefined) return running;
    const work =
      action === 'refund'
        ? this.#refund(paymentId)
        : action === 'review'
          ? this.#review(paymentId, who)
          : this.#runHandlers(paymentId);
    const started = work.then(async (result) => {
      this.#note(action, paymentId, who.id, result);
      // An action that did nothing (a second click, nothing to do) is logged, not kept.
      if (DONE.has(result))
        await this.history.add(paymentId, action, who, result).catch((error: unknown) => {
          this.logger.warn(
            this.#line(`desk: the action of ${JSON.stringify(who.id)} was not kept: ${describe(error)}`),
          );
        });
      return result;
    });
    const tracked = started.finally(() => this.#running.delete(key));
    this.#running.set(key, tracked);
    return tracked;
  }

  /** The return check, run now: verifies the payment and, when it is settled and unhandled, runs its handlers. */
  async #runHandlers(paymentId: string): Promise<DeskResult> {
    try {
      const result = await this.client.reconcilePayment(paymentId);
      if (result.error !== undefined) return 'handlers-failed';
      return result.handled ? 'handled' : 'not-handled';
    } catch (error) {
      this.logger.warn(
        this.#line(`desk: the check of payment ${JSON.stringify(paymentId)} failed: ${describe(error)}`),
      );
      return 'check-failed';
    }
  }

  /** The refund of a duplicate, at most once per payment (the refund record its automatic refund shares). */
  async #refund(paymentId: string): Promise<DeskResult> {
    const record = await this.client.getOutcome(paymentId);
    if (record === undefined || !refundable(record)) return 'not-refundable';
    try {
      const result = await refundOnce(
        { store: this.client.store, registration: this.client.name, refund: (id) => this.client.refundPayment(id) },
        paymentId,
      );
      if (result.kind === 'unknown')
        return (await this.#refundedMeanwhile(paymentId)) ? 'refunded-earlier' : 'refund-unknown';
      return result.earlier ? 'refunded-earlier' : 'refunded';
    } catch (error) {
      this.logger.warn(
        this.#line(`desk: the refund of payment ${JSON.stringify(paymentId)} failed: ${describe(error)}`),
      );
      return 'refund-failed';
    }
  }

  /**
   * Whether a refund found on its way ends refunded. Its record says `sending` while a call is out:
   * a second click that reached another instance (the same instance joins the first's run) must
   * not be told that the answer was lost. The record is read again until it leaves `sending`, for
   * about as long as the call may take; one left `unknown`, still `sending` then, or unreadable,
   * is not refunded as far as the desk knows.
   */
  async #refundedMeanwhile(paymentId: string): Promise<boolean> {
    const ledger = refundLedgerOf(this.client.store);
    const key = refundKey(this.client.name, paymentId);
    for (let read = 0; read < REFUND_WAIT_READS; read++) {
      const record = await ledger.findRefund(key).catch(() => undefined);
      if (record?.state !== 'sending') return record?.state === 'refunded';
      await new Promise((resolve) => setTimeout(resolve, REFUND_WAIT_MS));
    }
    return false;
  }

  /** The review of a payment that needs a person, once per payment and need (across instances). */
  async #review(paymentId: string, who: { id: string; name: string }): Promise<DeskResult> {
    const record = await this.client.getOutcome(paymentId);
    if (record === undefined) return 'not-reviewable';
    return this.reviews.mark(record, needsPerson, who);
  }

  #note(action: DeskAction, paymentId: string, who: string, result: DeskResult): void {
    const what =
      action === 'refund' ? 'refund of the duplicate' : action === 'review' ? 'review' : 'check and handlers run';
    this.logger.log(
      this.#line(
        `desk: ${JSON.stringify(who)} asked for the ${what} of payment ${JSON.stringify(paymentId)}: ${result}`,
      ),
    );
  }

  /** A log line without the client's secrets. */
  #line(text: string): string {
    return this.client.redactSecrets(text);
  }
}
