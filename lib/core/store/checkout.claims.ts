import type { OrderLedger, PaymentsStore } from './store.ports.js';
import type { CheckoutOpen, CheckoutOpening, CheckoutSave, CheckoutStanding } from './store.types.js';

/** The claim key of an order's lock in the checkout steps built from claims: `checkout:<orderKey>`. */
export function checkoutLockKey(orderKey: string): string {
  return `checkout:${orderKey}`;
}

/**
 * What the store knows of a payment's fate, read with the store's basic methods: its outcome
 * record, and its cancellation note (the settlement of `cancellationPrefix + paymentId`, naming it).
 */
export async function readStanding(
  store: Pick<PaymentsStore, 'getOutcome'> & Pick<OrderLedger, 'findOrderSettlement'>,
  cancellationPrefix: string,
  paymentId: string,
): Promise<CheckoutStanding> {
  const [record, note] = await Promise.all([
    store.getOutcome(paymentId),
    store.findOrderSettlement(cancellationPrefix + paymentId),
  ]);
  return { outcome: record?.outcome, cancelled: note?.paymentId === paymentId };
}

/**
 * `OrderLedger.openCheckout` built from the basic methods: the claim of `checkout:<orderKey>`,
 * THEN the checkout's read (a checkout saved before the previous owner's release is seen), then
 * its payment's standing. Atomic where it matters: the claim is; a read that fails gives the
 * lock up again.
 */
export async function openCheckoutWith(
  store: Pick<PaymentsStore, 'claim' | 'release' | 'getOutcome'> & OrderLedger,
  open: CheckoutOpen,
): Promise<CheckoutOpening> {
  const lockKey = checkoutLockKey(open.orderKey);
  const lock = await store.claim(lockKey, open.owner, open.leaseMs);
  try {
    const checkout = await store.findCheckout(open.orderKey);
    if (!checkout) return { lock };
    return { lock, checkout, standing: await readStanding(store, open.cancellationPrefix, checkout.paymentId) };
  } catch (error) {
    if (lock === 'claimed') void store.release(lockKey, open.owner).catch(() => undefined);
    throw error;
  }
}

/** `OrderLedger.closeCheckout` built from the basic methods: `saveCheckout` (when asked), THEN the lock's `release`. */
export async function closeCheckoutWith(
  store: Pick<PaymentsStore, 'release'> & Pick<OrderLedger, 'saveCheckout'>,
  orderKey: string,
  owner: string,
  save?: CheckoutSave,
): Promise<void> {
  if (save) await store.saveCheckout(orderKey, save.checkout, save.ttlMs);
  await store.release(checkoutLockKey(orderKey), owner);
}

/** An order's checkout steps: the store's own single steps when it has them, else built from its basic methods. */
export interface CheckoutSteps {
  /** See `OrderLedger.openCheckout`. */
  open(open: CheckoutOpen): Promise<CheckoutOpening>;
  /** See `OrderLedger.closeCheckout`. */
  close(orderKey: string, owner: string, save?: CheckoutSave): Promise<void>;
}

/**
 * The checkout steps of a store with an order ledger: its `openCheckout` and `closeCheckout` when
 * it has them (each one atomic step), else {@link openCheckoutWith} and {@link closeCheckoutWith}
 * (a custom store written before them).
 */
export function checkoutStepsOf(store: PaymentsStore & OrderLedger): CheckoutSteps {
  return {
    open: (open) => (store.openCheckout ? store.openCheckout(open) : openCheckoutWith(store, open)),
    close: (orderKey, owner, save) =>
      store.closeCheckout
        ? store.closeCheckout(orderKey, owner, save)
        : closeCheckoutWith(store, orderKey, owner, save),
  };
}
