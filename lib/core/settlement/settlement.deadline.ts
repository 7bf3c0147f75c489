import { type PaymentsLogger, describe } from '../common/index.js';
import type { Clock, ClockTimer } from '../time/index.js';

/**
 * `handlers.timeoutMs` when none is given: the claim's default lease, so a handler holds a payment
 * at most as long as a crashed instance would block it. Generous on purpose: a run cut off may
 * still be running when the next one starts, which a slow but healthy handler must not suffer.
 */
export const DEFAULT_HANDLER_TIMEOUT_MS = 60_000;

/** What a run of handlers that outlived its deadline fails with. */
export class HandlerDeadlineError extends Error {
  /**
   * @param paymentId the payment whose handlers ran
   * @param timeoutMs the deadline they missed
   */
  constructor(paymentId: string, timeoutMs: number) {
    super(`the handlers of ${paymentId} did not finish within ${timeoutMs} ms (handlers.timeoutMs)`);
    this.name = 'HandlerDeadlineError';
  }
}

/**
 * Runs an attempt's handlers for at most `timeoutMs` of `clock`'s time. A handler that never
 * returns would otherwise keep the payment's claim renewed for ever (no other path could settle
 * it) and hold `close()` for ever. Past the deadline the run fails with {@link HandlerDeadlineError}
 * (the attempt then stops renewing and takes the usual failure path: released, re-checked later);
 * the handlers' promise is abandoned, not cancelled (JavaScript cannot), and how it ends later is
 * logged. A handler that outlives its deadline may thus still be running when the next attempt
 * runs it again: handlers must be idempotent, as for any failure.
 */
export function withinDeadline(
  work: () => Promise<void>,
  run: { paymentId: string; timeoutMs: number; clock: Clock; logger: PaymentsLogger },
): Promise<void> {
  const { paymentId, timeoutMs, clock, logger } = run;
  let timer: ClockTimer | undefined;
  let late = false;
  const running = work();
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = clock.setTimeout(() => {
      late = true;
      const error = new HandlerDeadlineError(paymentId, timeoutMs);
      logger.error(`${error.message}: abandoned, the claim released; the payment is checked again later`);
      reject(error);
    }, timeoutMs);
  });
  running.then(
    () => {
      if (late) logger.warn(`the abandoned handlers of ${paymentId} finished after their deadline of ${timeoutMs} ms`);
    },
    (error: unknown) => {
      if (late)
        logger.error(
          `the abandoned handlers of ${paymentId} failed after their deadline of ${timeoutMs} ms: ${describe(error)}`,
        );
    },
  );
  return Promise.race([running, deadline]).finally(() => clock.clearTimeout(timer));
}
