import vm from 'node:vm';

/**
 * Collects unhandled promise rejections of the whole process during a suite.
 *
 * Under Jest the `process` global of a test file is a copy whose listeners never fire; the real
 * process object is reached through the main context, where Node emits `unhandledRejection`.
 */
export function collectUnhandledRejections(): { readonly seen: unknown[]; stop(): void } {
  const realProcess = vm.runInThisContext('process') as NodeJS.Process;
  const seen: unknown[] = [];
  const listener = (reason: unknown) => void seen.push(reason);
  realProcess.on('unhandledRejection', listener);
  return { seen, stop: () => void realProcess.off('unhandledRejection', listener) };
}

/** Lets pending timers and promise callbacks run (e.g. late rejections surface). */
export function settle(ms = 50): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Awaits a promise expected to reject; returns the rejection and how long it took (ms). */
export async function rejectionOf(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  try {
    await promise;
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
  throw new Error('expected a rejection, got a result');
}
