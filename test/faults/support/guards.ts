import { afterAll, beforeAll, expect } from '@jest/globals';
import vm from 'node:vm';
import { FakeService } from '../../support/fake-service.js';

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

/**
 * Suite set-up shared by the shutdown suites: a loopback fake of the service for the whole file,
 * and a check, after everything closed, that no promise rejection went unhandled.
 * @returns a getter of the running fake
 */
export function useFakeServiceWithoutUnhandledRejections(): () => FakeService {
  const rejections = collectUnhandledRejections();
  let fake: FakeService | undefined;
  beforeAll(async () => {
    fake = await FakeService.start();
  });
  afterAll(async () => {
    await fake?.close();
    await settle();
    rejections.stop();
    expect(rejections.seen).toEqual([]);
  });
  return () => fake as FakeService;
}
