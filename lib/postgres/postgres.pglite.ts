import { AsyncLocalStorage } from 'node:async_hooks';

/** The PGlite methods that wait for an open transaction to end before they run. */
const WAITING_METHODS = ['query', 'sql', 'exec', 'transaction', 'describeQuery'] as const;

/**
 * What a handler is told when it sends a statement on the PGlite instance while its outcome's
 * transaction holds it: the statement would wait for the transaction, which waits for the handler.
 */
export const PGLITE_HELD_MESSAGE =
  'PostgresPaymentsStore: this PGlite instance is held by the outcome’s transaction until the handlers return, so a statement sent on it ' +
  'from a handler would wait for ever. Send it through event.transaction (event.transaction.query(), or an ORM on event.transaction.client).';

/**
 * Makes a statement sent on a PGlite instance from inside the outcome's handlers fail at once
 * instead of waiting for ever. One per store: it tells the handlers' calls (made in the async
 * context of {@link hold}'s work) from everyone else's, which still wait for the commit.
 */
export class PgliteHold {
  readonly #context = new AsyncLocalStorage<object>();

  /**
   * Runs `work` (the transaction's) with the instance's waiting methods refusing the calls made
   * from within it; they are the instance's own again once it settles.
   * @param db the PGlite instance, whose transaction is open
   * @param work what runs inside the transaction
   */
  async hold<T>(db: object, work: () => Promise<T>): Promise<T> {
    const token = {};
    const context = this.#context;
    const instance = db as Record<string, unknown>;
    const saved = new Map<string, PropertyDescriptor | undefined>();
    for (const name of WAITING_METHODS) {
      const method = instance[name];
      if (typeof method !== 'function') continue;
      saved.set(name, Object.getOwnPropertyDescriptor(instance, name));
      Object.defineProperty(instance, name, {
        configurable: true,
        writable: true,
        value: function held(this: unknown, ...args: unknown[]): unknown {
          if (context.getStore() === token) return Promise.reject(new Error(PGLITE_HELD_MESSAGE));
          return (method as (...a: unknown[]) => unknown).apply(this, args);
        },
      });
    }
    try {
      return await context.run(token, work);
    } finally {
      for (const [name, descriptor] of saved) {
        if (descriptor) Object.defineProperty(instance, name, descriptor);
        else delete instance[name];
      }
    }
  }
}
