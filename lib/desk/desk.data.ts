import type { CardBinding } from '../core/api/index.js';
import type { PaymentsClient } from '../core/client/index.js';
import { isOverdueRecord, orderLedgerKey, refundKey } from '../core/settlement/index.js';
import {
  orderLedgerOf,
  refundLedgerOf,
  type OrderSettlement,
  type OutcomeQuery,
  type OutcomeRecord,
  type PendingPayment,
  type RefundRecord,
  type StoryEntry,
  storyLogOf,
} from '../core/store/index.js';
import type { DeskActionEntry, DeskHistory } from './desk.history.js';
import { type DeskReview, DeskReviews } from './desk.reviews.js';

/** One list of the overview: the first records and how many there are (counted up to a bound). */
export interface DeskList {
  /** The newest records, at most `listSize`. */
  items: OutcomeRecord[];
  /** How many records the list has, counted up to the scan limit. */
  count: number;
  /** Whether the count stopped at the scan limit (there may be more). */
  more: boolean;
}

/** What needs a person, and the latest outcomes. */
export interface DeskOverview {
  /** Handlers that threw on the latest attempt (the payment is not settled: run them again). */
  failing: DeskList;
  /** Payments whose outcome is still unknown past the fast checks (slow lane), or given up. */
  overdue: DeskList;
  /** Duplicates (second charges) whose refund was not made and may still be sent from here. */
  duplicates: DeskList;
  /** The service's amount, tracking id or currency differed from what the plugin sent. */
  mismatches: DeskList;
  /** Duplicates whose refund was refused, never reached the service, or whose answer was lost. */
  refundsFailed: DeskList;
  /** Payments of the lists above that a person marked reviewed for what they need now. */
  reviewed: DeskList;
  /** The kept reviews of the payments in `reviewed`, by payment id. */
  reviews: Record<string, DeskReview>;
  /** The latest outcome records, whatever they say. */
  latest: OutcomeRecord[];
}

/** Everything the store knows of one payment. */
export interface DeskPayment {
  /** The payment id asked about. */
  paymentId: string;
  /** Its outcome record, when one was written (and not expired). */
  record?: OutcomeRecord;
  /** Its reconciliation queue entry, while it is queued. */
  pending?: PendingPayment;
  /** Its refund record (the automatic refund of a duplicate, or a platform's or the desk's refund). */
  refund?: RefundRecord;
  /** The payment that settled its order (tracking id), when the store knows one. */
  orderSettledBy?: OrderSettlement;
  /** Its kept review, when a person marked it reviewed. */
  review?: DeskReview;
  /** Whether the review holds for what the payment needs now (it then is out of its list). */
  reviewHolds?: boolean;
  /** What people did to it from the desk, with who, oldest first. */
  actions: DeskActionEntry[];
  /** Its story as the store keeps it, oldest first; `undefined` when the store keeps no stories. */
  story?: StoryEntry[];
}

/** Refund states a person must look at: the desk sends no more refund calls for them. */
const REFUND_FAILED = new Set(['refused', 'failed', 'unknown']);

/** Whether a duplicate may be refunded from the desk: not refunded, and no failed or lost call. */
export function refundable(record: OutcomeRecord): boolean {
  return (
    record.outcome === 'duplicate' &&
    record.refund === undefined &&
    record.refundState !== 'refunded' &&
    record.refundState !== 'sending' &&
    !REFUND_FAILED.has(record.refundState ?? '')
  );
}

/** Whether a duplicate's refund needs a person at the service. */
export function refundFailed(record: OutcomeRecord): boolean {
  return record.outcome === 'duplicate' && record.refund === undefined && REFUND_FAILED.has(record.refundState ?? '');
}

/**
 * Whether a payment is in one of the lists of what needs a person (one rule for the lists and
 * for what a review is of): handlers failing, overdue, a duplicate to refund or whose refund
 * failed, a mismatch.
 */
export function needsPerson(record: OutcomeRecord): boolean {
  return (
    record.handlers === 'failed' ||
    (record.outcome === 'pending' && isOverdueRecord(record)) ||
    refundable(record) ||
    refundFailed(record) ||
    record.outcome === 'mismatch'
  );
}

/** The store's reads behind the desk's pages: bounded scans of the outcome records, and direct lookups. */
export class DeskData {
  /**
   * @param client the registration's client
   * @param listSize rows kept per list
   * @param scanLimit records read at most per list
   */
  constructor(
    private readonly client: PaymentsClient,
    private readonly listSize: number,
    private readonly scanLimit: number,
    private readonly reviews: DeskReviews,
    private readonly history: DeskHistory,
  ) {}

  /** The overview's lists, read concurrently; a payment reviewed for what it needs now is in `reviewed` only. */
  async overview(): Promise<DeskOverview> {
    const kept = new Map<string, DeskReview>();
    const reviewed = (record: OutcomeRecord) => DeskReviews.holds(record, kept.get(record.paymentId), needsPerson);
    const open = (test: (record: OutcomeRecord) => boolean) => (record: OutcomeRecord) =>
      test(record) && !reviewed(record);
    const fetchReviews = async (records: OutcomeRecord[]) => {
      const found = await Promise.all(records.filter(needsPerson).map((r) => this.reviews.find(r.paymentId)));
      for (const review of found) if (review !== undefined) kept.set(review.paymentId, review);
    };
    const [failing, overdue, duplicates, mismatches, latest] = await Promise.all([
      this.#lists({ handlers: 'failed' }, [open(() => true), reviewed], fetchReviews),
      this.#lists(
        { outcome: 'pending' },
        [open(isOverdueRecord), (r) => isOverdueRecord(r) && reviewed(r)],
        fetchReviews,
      ),
      this.#lists(
        { outcome: 'duplicate' },
        [open(refundable), open(refundFailed), (r) => needsPerson(r) && reviewed(r)],
        fetchReviews,
      ),
      this.#lists({ outcome: 'mismatch' }, [open(() => true), reviewed], fetchReviews),
      this.client.listOutcomes({ limit: this.listSize }),
    ]);
    const all = new Map<string, OutcomeRecord>();
    let more = false;
    for (const list of [failing[1], overdue[1], duplicates[2], mismatches[1]]) {
      for (const record of list.items) all.set(record.paymentId, record);
      more ||= list.more;
    }
    const reviewedItems = [...all.values()].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    const count = failing[1].count + overdue[1].count + duplicates[2].count + mismatches[1].count;
    return {
      failing: failing[0],
      overdue: overdue[0],
      duplicates: duplicates[0],
      mismatches: mismatches[0],
      refundsFailed: duplicates[1],
      reviewed: { items: reviewedItems.slice(0, this.listSize), count: Math.max(count, all.size), more },
      reviews: Object.fromEntries([...kept].filter(([id]) => all.has(id))),
      latest: latest.items,
    };
  }

  /** What the store knows of `paymentId`; `undefined` when it knows nothing. */
  async payment(paymentId: string): Promise<DeskPayment | undefined> {
    const store = this.client.store;
    // This instance's notes not yet written are part of the story asked for.
    await this.client.flushStories();
    const [record, pending, refund, review, actions, story] = await Promise.all([
      store.getOutcome(paymentId),
      store.findPending(paymentId),
      refundLedgerOf(store).findRefund(refundKey(this.client.name, paymentId)),
      this.reviews.find(paymentId),
      this.history.list(paymentId),
      storyLogOf(store)?.entries(this.client.name ?? '', paymentId),
    ]);
    if (
      record === undefined &&
      pending === undefined &&
      refund === undefined &&
      actions.length === 0 &&
      (story ?? []).length === 0
    )
      return undefined;
    const order = record?.developerTrackingId ?? pending?.developerTrackingId;
    const orderSettledBy =
      order === undefined
        ? undefined
        : await orderLedgerOf(store)?.findOrderSettlement(orderLedgerKey(this.client.name, order));
    const reviewHolds = record !== undefined && DeskReviews.holds(record, review, needsPerson);
    return { paymentId, record, pending, refund, orderSettledBy, review, reviewHolds, actions, story };
  }

  /** The payment a webhook token was issued for: one lookup of its binding by the token's nonce. */
  async byToken(nonce: string): Promise<string | undefined> {
    return (await this.client.store.findBinding(nonce))?.paymentId;
  }

  /**
   * A customer's card bindings (one `listBindings` call to the service); `undefined` when the
   * service did not answer.
   */
  async customer(clientId: string): Promise<CardBinding[] | undefined> {
    try {
      return await this.client.listBindings(clientId);
    } catch {
      return undefined;
    }
  }

  /**
   * Payments of an order (tracking id): the one that settled it (the order ledger), and every
   * outcome record among the latest `scanLimit` that carries the tracking id.
   */
  async order(trackingId: string): Promise<OutcomeRecord[]> {
    const found = new Map<string, OutcomeRecord>();
    const settled = await orderLedgerOf(this.client.store)?.findOrderSettlement(
      orderLedgerKey(this.client.name, trackingId),
    );
    if (settled !== undefined) {
      const record = await this.client.getOutcome(settled.paymentId);
      if (record !== undefined) found.set(record.paymentId, record);
    }
    await this.#scan({}, undefined, (record) => {
      if (record.developerTrackingId === trackingId) found.set(record.paymentId, record);
      return found.size < this.listSize;
    });
    return [...found.values()];
  }

  /** One scan of `query`'s records, split into one list per test; `prepare` reads what the tests need of a page first. */
  async #lists(
    query: OutcomeQuery,
    tests: Array<(record: OutcomeRecord) => boolean>,
    prepare?: (records: OutcomeRecord[]) => Promise<void>,
  ): Promise<DeskList[]> {
    const lists: DeskList[] = tests.map(() => ({ items: [], count: 0, more: false }));
    const complete = await this.#scan(query, prepare, (record) => {
      tests.forEach((test, i) => {
        if (!test(record)) return;
        lists[i].count++;
        if (lists[i].items.length < this.listSize) lists[i].items.push(record);
      });
      return true;
    });
    for (const list of lists) list.more = !complete;
    return lists;
  }

  /**
   * Reads `query`'s records, newest first, 500 a page, until `visit` answers false or
   * `scanLimit` records were read.
   * @returns whether every record was read
   */
  async #scan(
    query: OutcomeQuery,
    prepare: ((records: OutcomeRecord[]) => Promise<void>) | undefined,
    visit: (record: OutcomeRecord) => boolean,
  ): Promise<boolean> {
    let cursor: string | undefined;
    let read = 0;
    for (;;) {
      const limit = Math.min(500, this.scanLimit - read);
      if (limit <= 0) return false;
      const page = await this.client.listOutcomes({ ...query, limit, cursor });
      await prepare?.(page.items);
      for (const record of page.items) {
        read++;
        if (!visit(record)) return true;
      }
      if (page.nextCursor === undefined) return true;
      cursor = page.nextCursor;
    }
  }
}
