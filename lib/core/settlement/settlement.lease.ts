import { type PaymentsLogger, describe } from '../common/index.js';
import type { PaymentsStore } from '../store/index.js';
import { every, SYSTEM_CLOCK, type Clock } from '../time/index.js';

/**
 * Keeps a claim alive while its handlers run. Handlers may outlast the lease (a slow email, a slow
 * database): the claim would then expire and a redelivery run them a second time, concurrently.
 * So the claim is renewed every third of the lease (a same-owner claim is a renewal in every
 * store). A renewal that finds the claim gone to someone else can only be reported: the handlers
 * are already running.
 * @returns `stop()`, which ends the renewals and waits for one in flight (it must land before the
 *   claim is marked done or released); `lost` tells whether a renewal found the claim taken
 */
export function renewWhileHandling(
  store: Pick<PaymentsStore, 'claim'>,
  key: string,
  owner: string,
  leaseMs: number,
  paymentId: string,
  logger: PaymentsLogger,
  clock: Clock = SYSTEM_CLOCK,
): { stop(): Promise<void>; readonly lost: boolean } {
  let renewing: Promise<void> | undefined;
  let lost = false;
  const renew = async () => {
    try {
      const claim = await store.claim(key, owner, leaseMs);
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
    stop: async () => {
      stopTimer();
      await renewing;
    },
  };
}
