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
 * The queue entry of a payment a path (a webhook, a return) found pending, when the queue holds
 * an entry of it already (pure): the path's place in the pending lane (`checks`, `rechecks`) and
 * due time are taken; what the queued entry knows of the payment (the session's end and the
 * generation time `generatePayment` recorded, which a path that found nothing queued can only
 * estimate) is kept. The mirror of {@link mergeGenerated}, for the other order of the two writes.
 * @param queued the entry in the queue
 * @param path the entry the path would queue
 */
export function mergeRecheck(queued: PendingPayment, path: PendingPayment): PendingPayment {
  const { checks: _queuedChecks, rechecks: _queuedLane, ...known } = queued;
  const { rechecks: lane, ...made } = path;
  const merged: PendingPayment = { ...made, ...known, checks: path.checks };
  return lane === undefined ? merged : { ...merged, rechecks: lane };
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

/**
 * Queues a payment a path found pending for a re-check, due at `dueAt`, without losing what an
 * entry of it queued meanwhile records ({@link mergeRecheck}): `generatePayment`'s write may land
 * between the path's read of the queue and this write. One atomic step with a store that has
 * `queueRecheck` (every shipped store); a store without it replaces the entry (as before).
 * @param store the queue
 * @param entry the entry the path made (its lane place set)
 * @param dueAt epoch ms of the shared clock
 */
export async function queueRecheck(store: PaymentsStore, entry: PendingPayment, dueAt: number): Promise<void> {
  if (store.queueRecheck) return store.queueRecheck(entry, dueAt);
  await store.schedulePending(entry, dueAt);
}
