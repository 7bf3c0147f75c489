import type { PaymentsStore } from '../core/index.js';

/**
 * The matchers the store contract asserts with: a subset of Jest's and Vitest's, so either
 * runner's `expect` can be passed as it is.
 */
export interface ContractAssertions {
  /** `Object.is` equality. */
  toBe(expected: unknown): unknown;
  /** Deep equality, `undefined` properties ignored. */
  toEqual(expected: unknown): unknown;
  /** Deep equality, `undefined` properties and classes included. */
  toStrictEqual(expected: unknown): unknown;
  /** The value is `undefined`. */
  toBeUndefined(): unknown;
  /** The value is not `undefined`. */
  toBeDefined(): unknown;
  /** The value is an instance of the class. */
  toBeInstanceOf(expected: unknown): unknown;
  /** The number is at most `expected`. */
  toBeLessThanOrEqual(expected: number): unknown;
  /** The array or string holds `expected`. */
  toContain(expected: unknown): unknown;
  /** The array or string has this length. */
  toHaveLength(expected: number): unknown;
  /** The object has at least these properties, with these values. */
  toMatchObject(expected: object): unknown;
  /** The function throws (or, after `rejects`, the promise rejects with) this kind of error. */
  toThrow(expected?: unknown): unknown;
}

/** What the contract's `expect(value)` returns: the assertions, negated or on a promise's result too. */
export interface ContractMatchers extends ContractAssertions {
  /** The same assertions, negated. */
  readonly not: ContractAssertions;
  /** The same assertions on the value a promise resolves to (awaited by the contract). */
  readonly resolves: ContractAssertions;
  /** The same assertions on the reason a promise rejects with (awaited by the contract). */
  readonly rejects: ContractAssertions;
}

/**
 * The test runner's functions the store contract registers its tests with. Jest's and Vitest's
 * fit as they are: `describeStoreContract({ describe, it, beforeEach, afterEach, expect }, ...)`.
 */
export interface StoreContractHooks {
  /** Groups tests under a title. */
  readonly describe: (title: string, body: () => void) => void;
  /** Registers one test. */
  readonly it: (title: string, test: () => Promise<void>) => void;
  /** Runs before each test of the current group and of its subgroups. */
  readonly beforeEach: (hook: () => Promise<void>) => void;
  /** Runs after each test of the current group and of its subgroups. */
  readonly afterEach: (hook: () => Promise<void>) => void;
  /** Starts an assertion on a value. */
  readonly expect: (actual: unknown) => ContractMatchers;
}

/** A store under test and how to dispose of it (close connections, delete its keys). */
export interface StoreFixture {
  /** A fresh store, or one whose keys cannot collide with other tests' (ids are random). */
  store: PaymentsStore;
  /** Called after each test. */
  cleanup: () => Promise<void>;
}

/** What a store promises beyond the contract every store meets. */
export interface StoreContractOptions {
  /**
   * Its combined operations are one atomic step each (every shipped store), so that even attempts
   * that do not hold the claim, finishing at once, are each counted. Default true; false for a
   * store whose combined operations are BasicPaymentsStore's, which count right the attempts
   * that hold the claim (tested for every store), as the core makes them.
   */
  atomicCombinedOperations?: boolean;
  /**
   * It keeps the payments' stories and the desk's tallies (a `story` property, see
   * `PaymentStoryLog`): true makes the contract fail a store without one. Default: the story's
   * tests run when the store has one, and pass a store that has none (it records nothing).
   */
  story?: boolean;

  /**
   * Makes a store whose story keeps `retentionSecs` (and counts in buckets of `bucketSecs`), for
   * the retention tests, which wait for it to pass on the real clock (a few seconds). Default: none,
   * and the retention tests pass at once.
   */
  storyRetention?: (limits: { retentionSecs: number; bucketSecs: number }) => Promise<StoreFixture>;
}
