import { randomUUID } from 'node:crypto';
import type { PaymentRefund } from '../api/index.js';
import { describe } from '../common/index.js';
import {
  refundLedgerOf,
  type DuplicateRefund,
  type PaymentsStore,
  type RefundLedger,
  type RefundRecord,
} from '../store/index.js';
import type { Clock } from '../time/index.js';
import { refundFailure, refundStart, refundStateAfter } from './settlement.orders.js';

/**
 * How long a payment's refund record is kept at least, ms (30 days): past any retry of a
 * platform's refund (an admin's second click, a job retried after the platform failed to record
 * the first), and past the records of a duplicate.
 */
export const REFUND_RECORD_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The key of a payment's refund record: one per payment and registration (merchant account),
 * whatever asks for the refund (the automatic refund of a duplicate, a platform's refund).
 */
export const refundKey = (registration: string | undefined, paymentId: string): string =>
  `${registration ?? ''}/${paymentId}`;

/** What {@link sendRefund} needs. */
export interface RefundSenderDeps {
  /** The store shared by every instance. */
  readonly store: PaymentsStore;
  /** The registration's name (merchant account), if any. */
  readonly registration: string | undefined;
  /** How long the record is kept, ms. */
  readonly ttlMs: number;
  /** The record times' clock. */
  readonly clock: Clock;
}

/**
 * What {@link sendRefund} did:
 * - `held`: nothing was sent; the record (as found) says why: refunded, on its way or its answer
 *   lost, or out of calls;
 * - `sent`: this call was sent; `record` is where it stands after it (written, unless `unrecorded`
 *   says why not: the record then says `sending`, and a later ask finds it unknown), with the
 *   service's refund when it answered one, or the call's error.
 */
export type RefundSent =
  | { kind: 'held'; record: RefundRecord }
  | { kind: 'sent'; record: RefundRecord; made?: PaymentRefund; error?: unknown; unrecorded?: string };

/** Compare-and-set rounds lost to concurrent writers before a sender gives up (another is sending). */
const SWAP_ROUNDS = 3;

/**
 * Sends a payment's refund at most once, by its refund record in the store: the record is read,
 * {@link refundStart} decides, and the call is sent only by the attempt whose compare-and-set
 * turned the record into `sending`; its answer is written after it. A call whose answer was lost
 * stays `unknown` (or `sending`, when the attempt stopped before writing it): never sent again.
 * A store that holds only an earlier version's refund markers is read through them
 * ({@link legacyRefund}), and their record is carried over.
 * @param deps the store, registration, TTL and clock
 * @param paymentId the payment to refund
 * @param call the service's refund of it
 * @param sending told of the record once it says `sending`, before the call (its failure is ignored)
 * @throws the store's error when the record cannot be read or written before the call (nothing sent)
 */
export async function sendRefund(
  deps: RefundSenderDeps,
  paymentId: string,
  call: () => Promise<PaymentRefund>,
  sending?: (record: RefundRecord) => Promise<void>,
): Promise<RefundSent> {
  const ledger = refundLedgerOf(deps.store);
  const key = refundKey(deps.registration, paymentId);
  const at = () => new Date(deps.clock.now()).toISOString();
  let held = (await ledger.findRefund(key)) ?? (await carriedOver(deps, ledger, key, paymentId));
  let started: RefundRecord | undefined;
  for (let round = 0; round < SWAP_ROUNDS && started === undefined; round++) {
    if (refundStart(held) === 'held') return { kind: 'held', record: held as RefundRecord };
    const next: RefundRecord = {
      paymentId,
      owner: randomUUID(),
      state: 'sending',
      tries: (held?.tries ?? 0) + 1,
      updatedAt: at(),
    };
    let swap;
    try {
      swap = await ledger.swapRefund(key, next, held?.owner, deps.ttlMs);
    } catch (error) {
      // The write may have landed after all: undone, so that the payment is not left `sending` by a call never sent.
      const undo: RefundRecord = { ...next, state: 'retry', tries: next.tries - 1, error: describe(error) };
      await ledger.swapRefund(key, undo, next.owner, deps.ttlMs).catch(() => undefined);
      throw error;
    }
    if (swap.swapped) started = next;
    else held = swap.held;
  }
  if (started === undefined)
    return {
      kind: 'held',
      record: held ?? {
        paymentId,
        owner: '',
        state: 'unknown',
        tries: 0,
        error: 'another attempt was writing this refund record',
        updatedAt: at(),
      },
    };
  await sending?.(started).catch(() => undefined);
  let made: PaymentRefund | undefined;
  let failure: unknown;
  let done: RefundRecord;
  try {
    made = await call();
    done = { ...started, state: 'refunded', refund: toRecorded(made), updatedAt: at() };
  } catch (error) {
    failure = error;
    const state = refundStateAfter(refundFailure(error), started.tries);
    done = { ...started, state, error: describe(error), updatedAt: at() };
  }
  const answer = { kind: 'sent', record: done, ...(made ? { made } : { error: failure }) } as const;
  try {
    const written = await ledger.swapRefund(key, done, started.owner, deps.ttlMs);
    if (!written.swapped) return { ...answer, unrecorded: 'the refund record was replaced meanwhile' };
  } catch (error) {
    return { ...answer, unrecorded: describe(error) };
  }
  return answer;
}

function toRecorded(refund: PaymentRefund): DuplicateRefund {
  return { refundId: refund.refundId, amount: refund.amount, status: refund.status, refundedAt: refund.refundedAt };
}

/** How long a look at an earlier version's marker holds it at most, ms (its claim's lease). */
const PROBE_LEASE_MS = 1_000;
/** Looks again at a marker found busy, spread over a probe's lease, before it is read as an earlier call's. */
const PROBE_LOOKS = 5;

/** The owner of a record carried over from an earlier version's markers. */
const LEGACY_OWNER = 'earlier-version';

/**
 * The refund an earlier version recorded for the payment, from its markers, as a record; written
 * as the payment's record (unless one was written meanwhile: that one is answered).
 */
async function carriedOver(
  deps: RefundSenderDeps,
  ledger: RefundLedger,
  key: string,
  paymentId: string,
): Promise<RefundRecord | undefined> {
  const found = await legacyRefund(deps.store, deps.registration, paymentId);
  if (found === undefined) return undefined;
  const record: RefundRecord = {
    paymentId,
    owner: LEGACY_OWNER,
    tries: 1,
    updatedAt: new Date(deps.clock.now()).toISOString(),
    ...found,
  };
  const swap = await ledger.swapRefund(key, record, undefined, deps.ttlMs);
  return swap.swapped ? record : swap.held;
}

/**
 * An earlier version's record of a payment's refund, read from its claim markers (which it kept
 * as long as records are kept): `refund-once:<registration>/<paymentId>` with the refund's details
 * in the binding `refund-once-details:<registration>/<paymentId>` (a platform's refund), and
 * `refund:<paymentId>` with the refund in the payment's outcome record (a duplicate's). A marker
 * done is a refund answered; one held is a call whose answer was lost (or an earlier version's
 * instance still sending it): never sent again. A marker that is free is taken for an instant
 * (the claims port has no plain read) and given back at once; one found busy is looked at again
 * until a look's lease has passed, since another first refund's look holds it too.
 * @returns the record's state (and refund, error), or `undefined` when no marker is there
 */
export async function legacyRefund(
  store: PaymentsStore,
  registration: string | undefined,
  paymentId: string,
): Promise<Pick<RefundRecord, 'state' | 'refund' | 'error'> | undefined> {
  const probe = `read-${randomUUID()}`;
  const lookOnce = async (marker: string) => {
    const claim = await store.claim(marker, probe, PROBE_LEASE_MS);
    if (claim === 'claimed') await store.release(marker, probe);
    return claim;
  };
  // A marker busy may be another first refund's look at it (held for an instant, at most its
  // lease): only one still busy after that lease is an earlier version's call.
  const look = async (marker: string) => {
    let claim = await lookOnce(marker);
    for (let again = 0; claim === 'busy' && again < PROBE_LOOKS; again++) {
      await new Promise((resolve) => setTimeout(resolve, PROBE_LEASE_MS / PROBE_LOOKS + 50));
      claim = await lookOnce(marker);
    }
    return claim;
  };
  const lost = 'sent by an earlier version, its answer not recorded; never sent again';
  const platform = await look(`refund-once:${registration ?? ''}/${paymentId}`);
  if (platform === 'busy') return { state: 'unknown', error: lost };
  if (platform === 'done') {
    const noted = await store.findBinding(`refund-once-details:${registration ?? ''}/${paymentId}`);
    return noted === undefined
      ? { state: 'refunded' }
      : {
          state: 'refunded',
          refund: {
            refundId: noted.developerTrackingId ?? '',
            amount: noted.amount,
            status: 'success',
            refundedAt: noted.createdAt,
          },
        };
  }
  const duplicate = await look(`refund:${paymentId}`);
  if (duplicate === 'busy') return { state: 'unknown', error: lost };
  if (duplicate === 'done') {
    const outcome = await store.getOutcome(paymentId);
    if (outcome?.refundState === 'refused') return { state: 'refused', error: outcome.refundError };
    return outcome?.refund ? { state: 'refunded', refund: { ...outcome.refund } } : { state: 'refunded' };
  }
  return undefined;
}
