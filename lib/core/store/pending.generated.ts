import type { PaymentsStore } from './store.ports.js';
import type { PendingPayment } from './store.types.js';

/**
 * The queue entry of a generated payment that the queue already holds (pure): a webhook or a
 * return that found it pending before `generatePayment`'s write landed (a slow store, a customer
 * who paid at once) put it in the pending lane. Its place (`checks`, `rechecks`) and due time are
 * kept; what generation knows (the amount and tracking id sent, the generation and session-end
 * times, which a lane entry made from a webhook's token lacks) fills in the rest.
 * @param queued the entry in the queue
 * @param generated the entry as generated
 */
export function mergeGenerated(queued: PendingPayment, generated: PendingPayment): PendingPayment {
  const { rechecks: _generatedLane, ...merged } = { ...generated, checks: queued.checks };
  return queued.rechecks === undefined ? merged : { ...merged, rechecks: queued.rechecks };
}

/**
 * Queues a payment `generatePayment` just created, due at `dueAt` (its session's end and grace),
 * without ever replacing an entry of it already queued: that one is merged with it
 * ({@link mergeGenerated}), in one atomic step with a store that has
 * `queueGenerated` (every shipped store). A store without it keeps an entry it
 * finds as it is (two steps: a path's entry written between them is replaced, as before).
 * @param store the queue
 * @param entry the payment as generated (`checks` 0, no pending-lane place)
 * @param dueAt epoch ms of the shared clock
 */
export async function queueGenerated(store: PaymentsStore, entry: PendingPayment, dueAt: number): Promise<void> {
  if (store.queueGenerated) return store.queueGenerated(entry, dueAt);
  if (await store.findPending(entry.paymentId)) return;
  await store.schedulePending(entry, dueAt);
}
