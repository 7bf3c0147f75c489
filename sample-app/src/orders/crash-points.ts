/**
 * Test hook of the crash tests (test/sample-app/crash.e2e-spec.ts): with `SHOP_TEST_HOLD_AT` set
 * to one of {@link CRASH_POINTS}, the first payment outcome handler that reaches that point prints
 * `SHOP_HOLD <point> <orderId>` on stdout and never returns, so the test can SIGKILL the process
 * right there. Unset (always, outside those tests): every call returns at once.
 */

/**
 * Where an outcome handler can be held: before its update, inside the outcome's transaction,
 * after the commit (in its `afterCommit` callback, once the order and the done mark are committed).
 */
export const CRASH_POINTS = ['before-update', 'in-transaction', 'after-commit'] as const;

/** One of {@link CRASH_POINTS}. */
export type CrashPoint = (typeof CRASH_POINTS)[number];

// Read from the process environment on purpose, not from the shop's configuration: it belongs to
// the process a test spawned, never to a .env file a merchant could ship.
const holdAt = process.env.SHOP_TEST_HOLD_AT;

/** Holds forever at `point` when the crash tests asked for it; otherwise resolves immediately. */
export async function crashPoint(point: CrashPoint, orderId: string): Promise<void> {
  if (holdAt !== point) return;
  process.stdout.write(`SHOP_HOLD ${point} ${orderId}\n`);
  await new Promise<never>(() => undefined);
}
