import { describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { createPaymentsClient } from '../../lib/express/index.js';
import { PaymentsValidationError } from '../../lib/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { MemoryPaymentsStore, sqlInbox } from '../../lib/store/index.js';
import { commitPathOf, type CommitPathDecision } from '../../lib/core/settlement/index.js';

// The one rule of where an attempt's "done" lives (commitPathOf), and the client refusing the
// set-up it refuses before any payment is taken.

const OPTIONS = { publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://127.0.0.1:9' };
const inbox = sqlInbox({ dialect: 'postgres', transaction: () => Promise.reject(new Error('never opened')) });

describe('commitPathOf: where an attempt commits its handlers and its "done"', () => {
  it.each<[boolean, boolean, CommitPathDecision['kind'], string]>([
    [false, false, 'path', 'plain'],
    [true, false, 'path', 'store-transaction'],
    [false, true, 'path', 'inbox'],
    [true, true, 'refused', 'cannot be used with a transactional store'],
  ])('transactional store %s, inbox %s: %s %s', (transactionalStore, withInbox, kind, what) => {
    const decision = commitPathOf({ transactionalStore, inbox: withInbox });
    expect(decision.kind).toBe(kind);
    expect(decision.kind === 'path' ? decision.path : decision.reason).toContain(what);
  });
});

describe('the client option `inbox`', () => {
  it('is refused together with a transactional store, naming both', async () => {
    const db = await PGlite.create();
    try {
      const store = new PostgresPaymentsStore(db, { transactional: true });
      let error: unknown;
      try {
        createPaymentsClient({ ...OPTIONS, store, inbox });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect(String((error as Error).message)).toContain('inbox');
      expect(String((error as Error).message)).toContain('transactional: true');
    } finally {
      await db.close();
    }
  });

  it('is refused when it is no inbox', () => {
    expect(() => createPaymentsClient({ ...OPTIONS, inbox: {} as never })).toThrow(/inbox.*transaction\(run\)/);
  });

  it('is taken with any other store', async () => {
    const client = createPaymentsClient({ ...OPTIONS, store: new MemoryPaymentsStore(), inbox });
    await client.close();
  });
});
