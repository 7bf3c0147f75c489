import { randomUUID } from 'node:crypto';
import { parseRefundRecord, refundRecordText } from './refund.values.js';
import { REFUND_LEDGER_METHODS, type BindingStore, type ClaimStore, type RefundLedger } from './store.ports.js';
import { positiveMs } from './store.rules.js';
import type { RefundRecord, RefundSwap } from './store.types.js';

/** How long a swap holds its record's lock at most, and how long a swap waits for another's. */
const LOCK = { leaseMs: 15_000, attempts: 60, pollMs: 50 } as const;

/**
 * A {@link RefundLedger} built from a store's claims and bindings, for a custom store that has
 * none of its own (`BasicPaymentsStore`'s default): the record is kept as a binding under
 * `refund-record:<refundKey>` (its JSON in the binding's `developerTrackingId`), and each swap holds
 * the claim `refund-lock:<refundKey>` while it reads and writes it. Correct as long as a swap
 * finishes within the lock's lease (15 s); a store of its own does it in one atomic step.
 */
export class ClaimRefundLedger implements RefundLedger {
  /** @param store the claims and bindings it is built from */
  constructor(private readonly store: BindingStore & ClaimStore) {}

  /** @inheritdoc */
  async findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    const found = await this.store.findBinding(`refund-record:${refundKey}`);
    return found === undefined ? undefined : parseRefundRecord(found.developerTrackingId);
  }

  /** @inheritdoc */
  async swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap> {
    positiveMs('BasicPaymentsStore', ttlMs, 'ttlMs');
    const lock = `refund-lock:${refundKey}`;
    const owner = randomUUID();
    for (let attempt = 0; (await this.store.claim(lock, owner, LOCK.leaseMs)) !== 'claimed'; attempt++) {
      if (attempt >= LOCK.attempts)
        throw new Error(
          `BasicPaymentsStore: the refund record ${JSON.stringify(refundKey)} stays locked by another write`,
        );
      await new Promise((resolve) => setTimeout(resolve, LOCK.pollMs));
    }
    try {
      const held = await this.findRefund(refundKey);
      if (held?.owner !== expectedOwner) return { swapped: false, held };
      await this.store.saveBinding(
        `refund-record:${refundKey}`,
        {
          paymentId: record.paymentId,
          amount: record.refund?.amount ?? '',
          developerTrackingId: refundRecordText(record),
          createdAt: record.updatedAt,
        },
        ttlMs,
      );
      return { swapped: true, held: parseRefundRecord(refundRecordText(record)) };
    } finally {
      await this.store.release(lock, owner).catch(() => undefined);
    }
  }
}

/**
 * The store's {@link RefundLedger}: its own when it has one (every shipped store), else one built
 * from its claims and bindings ({@link ClaimRefundLedger}).
 */
export function refundLedgerOf(store: BindingStore & ClaimStore): RefundLedger {
  const candidate = store as unknown as Record<string, unknown>;
  return REFUND_LEDGER_METHODS.every((m) => typeof candidate[m] === 'function')
    ? (store as unknown as RefundLedger)
    : new ClaimRefundLedger(store);
}
