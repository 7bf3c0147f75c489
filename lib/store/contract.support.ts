import { randomUUID } from 'node:crypto';
import type { PaymentBinding, PaymentsStore } from '../core/index.js';
import type { StoreContractHooks, StoreContractOptions } from './contract.hooks.js';

/** What each part of the contract reads: the runner's hooks and the store of the current test. */
export interface ContractContext {
  /** The runner's functions. */
  readonly hooks: StoreContractHooks;
  /** The suite's title, naming the store. */
  readonly name: string;
  /** What the store promises beyond the contract. */
  readonly options: StoreContractOptions;
  /** The store of the current test (set before each test). */
  readonly store: () => PaymentsStore;
  /** A fresh delivery key. */
  readonly key: () => string;
  /** A fresh claim owner. */
  readonly owner: () => string;
}

/** Resolves after `ms` milliseconds; the expiry tests need real time to pass. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// Short TTLs against real waits: long enough that a round trip to a local Redis (well under a
// millisecond) cannot outlast them before the first check, short enough to keep the suite quick.
export const SHORT_MS = 60;
export const PAST_SHORT_MS = 160;
export const LONG_MS = 60_000;

/**
 * Runs `write-then-check` work whose check only proves something while the write is younger than
 * {@link SHORT_MS} ("the short-lived thing is still there"), and returns what it returns. A run
 * that failed after SHORT_MS proves nothing (a loaded machine, a pooler in between: the thing may
 * rightly be gone), so it is run again with the fresh keys `run` makes, up to 5 times; a run that
 * failed within SHORT_MS fails the test at once.
 *
 * @param now the clock a run's age is read on, in ms (default `performance.now()`)
 */
export async function whileFresh<T>(run: () => Promise<T>, now: () => number = () => performance.now()): Promise<T> {
  for (let tries = 1; ; tries++) {
    const started = now();
    try {
      return await run();
    } catch (error) {
      if (now() - started < SHORT_MS || tries >= 5) throw error;
    }
  }
}

/** A binding with random payment id, overridable field by field. */
export const binding = (overrides: Partial<PaymentBinding> = {}): PaymentBinding => ({
  paymentId: `pay_${randomUUID()}`,
  amount: '12500',
  developerTrackingId: 'order-42',
  createdAt: '2025-01-02T03:04:05.000Z',
  ...overrides,
});
