import { type PaymentsLogger, describe } from '../common/index.js';
import type { PaymentsStore } from '../store/index.js';
import { every, monotonicNow, SYSTEM_CLOCK, type Clock } from '../time/index.js';

/**
 * Keeps a claim alive while its handlers run. Handlers may outlast the lease (a slow email, a slow
 * database): the claim would then expire and a redelivery run them a second time, concurrently.
 * So the claim is renewed every third of the lease (a same-owner claim is a renewal in every
 * store). A renewal that finds the claim gone to someone else can only be reported: the handlers
 * are already running.
 *
 * A process frozen past its lease (a stop-the-world pause, a suspended VM) cannot tell from its
 * renewals whether another attempt held the claim meanwhile: one that took it and let it go
 * leaves it free, and the late renewal takes it back. So the holder also counts its lease on its
 * own monotonic time: a gap of more than a lease between two holds (or before the end) is a
 * `lapse`, after which the outcome may have been written by someone else.
 * @param heldSince when the claim was sent (monotonic time of `clock`); the renewals' start by default
 * @returns `stop()`, which ends the renewals and waits for one in flight (it must land before the
 *   claim is marked done or released); `lost` tells whether a renewal found the claim taken;
 *   `lapsed` whether the lease ran out at some point (read after `stop()`)
 */
export function renewWhileHandling(
  store: Pick<PaymentsStore, 'claim'>,
  key: string,
  owner: string,
  leaseMs: number,
  paymentId: string,
  logger: PaymentsLogger,
  clock: Clock = SYSTEM_CLOCK,
  heldSince: number = monotonicNow(clock),
): { stop(): Promise<void>; readonly lost: boolean; readonly lapsed: boolean } {
  let renewing: Promise<void> | undefined;
  let lost = false;
  let lapsed = false;
  let heldAt = heldSince;
  const held = (at: number) => {
    if (at - heldAt > leaseMs) lapsed = true;
    heldAt = at;
  };
  const renew = async () => {
    const sent = monotonicNow(clock);
    try {
      const claim = await store.claim(key, owner, leaseMs);
      if (claim === 'claimed') held(sent);
      if (claim !== 'claimed' && !lost) {
        lost = true;
        logger.error(
          `the claim on ${paymentId} was lost while its handlers ran (${claim}: its lease of ${leaseMs} ms expired before a renewal); another delivery may run them concurrently`,
        );
      }
    } catch (error) {
      // Tried again at the next tick; the lease still runs meanwhile.
      logger.warn(`could not renew the claim on ${paymentId} while its handlers run: ${describe(error)}`);
    }
  };
  // A running handler keeps the process alive, not its renewals (the clock's timers are unref'd).
  const stopTimer = every(clock, Math.max(1, Math.floor(leaseMs / 3)), () => {
    if (lost || renewing) return;
    renewing = renew().finally(() => (renewing = undefined));
  });
  return {
    get lost() {
      return lost;
    },
    get lapsed() {
      return lapsed;
    },
    stop: async () => {
      stopTimer();
      await renewing;
      held(monotonicNow(clock));
    },
  };
}
