import { randomUUID } from 'node:crypto';
import type { PaymentsStore } from '../core/index.js';
import { describeCheckoutSteps } from './contract.checkouts.js';
import { describeClaims } from './contract.claims.js';
import { describeCombined } from './contract.combined.js';
import type { StoreContractHooks, StoreContractOptions, StoreFixture } from './contract.hooks.js';
import { describeRateLimiterContract } from './contract.limits.js';
import { describeOrders } from './contract.orders.js';
import { describeRecords } from './contract.records.js';
import { describeRefunds } from './contract.refunds.js';
import { describeStory } from './contract.story.js';

/**
 * Registers the behaviour every {@link PaymentsStore} must have as tests of the caller's runner
 * (Jest or Vitest): bindings, claims, the combined operations (also through
 * {@link BasicPaymentsStore}'s), rate limits, the order ledger, the reconciliation queue, the
 * outcome records and the refund records, and the order's checkout steps. The plugin's own stores pass it; a custom store should too before it guards
 * real payments. Keys and owners are random per test, so the stores of one suite may share a
 * backend. Some tests wait for TTLs of 60 ms to pass, on the real clock (the story's retention
 * tests, with `storyRetention`, for a few seconds).
 *
 * With Jest, `describe`, `it`, `beforeEach`, `afterEach` and `expect` as `@jest/globals` (or
 * Vitest) gives them:
 *
 * ```ts
 * describeStoreContract({ describe, it, beforeEach, afterEach, expect }, 'MyStore', async () => {
 *   const store = new MyStore(testConnection());
 *   return { store, cleanup: () => store.close() };
 * });
 * ```
 * @param hooks the runner's `describe`, `it`, `beforeEach`, `afterEach` and `expect`
 * @param name shown in the suite's title
 * @param makeStore creates the store for one test
 * @param options what the store promises beyond the contract; see {@link StoreContractOptions}
 */
export function describeStoreContract(
  hooks: StoreContractHooks,
  name: string,
  makeStore: () => Promise<StoreFixture>,
  options: StoreContractOptions = {},
): void {
  hooks.describe(`${name} satisfies the PaymentsStore contract`, () => {
    let store: PaymentsStore | undefined;
    let cleanup: (() => Promise<void>) | undefined;
    const current = (): PaymentsStore => {
      if (!store) throw new Error('the store contract read its store outside a test');
      return store;
    };
    const context = {
      hooks,
      name,
      options,
      store: current,
      key: () => `payment.confirmed:${randomUUID()}`,
      owner: () => `owner-${randomUUID()}`,
    };

    hooks.beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    hooks.afterEach(async () => {
      await cleanup?.();
      cleanup = undefined;
    });

    describeClaims(context);
    describeCombined(context);
    describeRateLimiterContract(hooks, () => current().rateLimits);
    describeOrders(context);
    describeCheckoutSteps(context);
    describeRecords(context);
    describeRefunds(context);
    describeStory(context);
  });
}
