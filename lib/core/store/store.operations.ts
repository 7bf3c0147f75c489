import type { BindingClaim, OutcomeFinish, OutcomeRecord, PaymentsStore } from './payments.store.js';

/**
 * The store's combined operations as the core uses them: the store's own when it has them (one
 * atomic round trip), else the separate calls they stand for. One place for the fallback, so a
 * custom store written against the required methods alone behaves the same, only with more
 * round trips (and, for {@link finishOutcome}, the record's attempts counted by a read then a
 * write, which two attempts at once can race: the count may then be one short).
 */

/** {@link PaymentsStore.findBindingAndClaim}, or findBinding then claim. */
export async function findBindingAndClaim(
  store: PaymentsStore,
  tokenId: string,
  paymentId: string,
  eventKey: string,
  owner: string,
  leaseMs: number,
): Promise<BindingClaim> {
  if (store.findBindingAndClaim) return store.findBindingAndClaim(tokenId, paymentId, eventKey, owner, leaseMs);
  const binding = await store.findBinding(tokenId);
  if (binding?.paymentId !== paymentId) return { binding };
  return { binding, claim: await store.claim(eventKey, owner, leaseMs) };
}

/** {@link PaymentsStore.finishOutcome}, or markDone/release, removePending, getOutcome and saveOutcome. */
export async function finishOutcome(store: PaymentsStore, finish: OutcomeFinish): Promise<boolean> {
  if (store.finishOutcome) return store.finishOutcome(finish);
  let marked = false;
  if (finish.claim === 'done') {
    marked = await store.markDone(finish.eventKey, finish.owner, finish.doneTtlMs);
    await store.removePending(finish.record.paymentId);
  } else {
    await store.release(finish.eventKey, finish.owner);
  }
  const previous = await store.getOutcome(finish.record.paymentId);
  const record: OutcomeRecord = { ...finish.record, attempts: (previous?.attempts ?? 0) + finish.attemptsAdded };
  await store.saveOutcome(record, finish.recordTtlMs);
  return marked;
}
