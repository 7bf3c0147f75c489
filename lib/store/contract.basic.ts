import { BasicPaymentsStore, type PaymentsStore } from '../core/index.js';

/**
 * The store as a custom one built on {@link BasicPaymentsStore} over the same backend would be:
 * its basic methods, and the base class's combined operations made of them.
 */
export class OverBasicMethods extends BasicPaymentsStore {
  constructor(private readonly store: PaymentsStore) {
    super();
  }
  saveBinding(...a: Parameters<PaymentsStore['saveBinding']>) {
    return this.store.saveBinding(...a);
  }
  findBinding(...a: Parameters<PaymentsStore['findBinding']>) {
    return this.store.findBinding(...a);
  }
  claim(...a: Parameters<PaymentsStore['claim']>) {
    return this.store.claim(...a);
  }
  markDone(...a: Parameters<PaymentsStore['markDone']>) {
    return this.store.markDone(...a);
  }
  release(...a: Parameters<PaymentsStore['release']>) {
    return this.store.release(...a);
  }
  schedulePending(...a: Parameters<PaymentsStore['schedulePending']>) {
    return this.store.schedulePending(...a);
  }
  takeDuePending(...a: Parameters<PaymentsStore['takeDuePending']>) {
    return this.store.takeDuePending(...a);
  }
  findPending(...a: Parameters<PaymentsStore['findPending']>) {
    return this.store.findPending(...a);
  }
  removePending(...a: Parameters<PaymentsStore['removePending']>) {
    return this.store.removePending(...a);
  }
  countPending() {
    return this.store.countPending();
  }
  saveOutcome(...a: Parameters<PaymentsStore['saveOutcome']>) {
    return this.store.saveOutcome(...a);
  }
  getOutcome(...a: Parameters<PaymentsStore['getOutcome']>) {
    return this.store.getOutcome(...a);
  }
  listOutcomes(...a: Parameters<PaymentsStore['listOutcomes']>) {
    return this.store.listOutcomes(...a);
  }
}
