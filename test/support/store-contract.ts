// The store contract as this repository's Jest suites run it: the runnable contract that
// `nestjs-payments/store` exports for store authors, given Jest's functions.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  describeStoreContract as describeWith,
  type StoreContractOptions,
  type StoreFixture,
} from '../../lib/store/index.js';

export type { StoreContractOptions, StoreFixture };

/** Resolves after `ms` milliseconds; the expiry tests need real time to pass. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The behaviour every PaymentsStore must have, as Jest tests. Keys and owners are random per
 * test, so stores may share a backend between tests.
 * @param name shown in the suite's title
 * @param makeStore creates the store for one test
 * @param options see {@link StoreContractOptions}
 */
export function describeStoreContract(
  name: string,
  makeStore: () => Promise<StoreFixture>,
  options: StoreContractOptions = {},
): void {
  describeWith({ describe, it, beforeEach, afterEach, expect }, name, makeStore, options);
}
