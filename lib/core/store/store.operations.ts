import type { BindingClaim, OutcomeFinish, PaymentsStore } from './payments.store.js';

// TO BE REMOVED once settlement.runner.ts calls store.findBindingAndClaim(...) and
// store.finishOutcome(...) itself: both are required members of PaymentsStore now (a custom store
// inherits them from BasicPaymentsStore), so there is no fallback left here.

/** @deprecated call `store.findBindingAndClaim(...)`. */
export const findBindingAndClaim = (store: PaymentsStore, ...args: Parameters<PaymentsStore['findBindingAndClaim']>): Promise<BindingClaim> =>
  store.findBindingAndClaim(...args);

/** @deprecated call `store.finishOutcome(finish)`. */
export const finishOutcome = (store: PaymentsStore, finish: OutcomeFinish): Promise<boolean> => store.finishOutcome(finish);
