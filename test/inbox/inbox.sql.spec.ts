import { describe, expect, it } from '@jest/globals';
import { inboxDdl, sqlInbox } from '../../lib/store/index.js';
import { inboxFailureOf, markOf } from '../../lib/core/store/inbox.sql.js';

// The decisions of sqlInbox, as tables: what a failed statement means, whose row the insert found,
// and the DDL per dialect. recipes.e2e-spec.ts runs them on PostgreSQL and MariaDB.

describe('inboxFailureOf: a missing table, on the driver’s error or an ORM’s wrapper of it', () => {
  it.each<[string, unknown, 'table-missing' | 'other']>([
    ['pg: undefined_table', { code: '42P01' }, 'table-missing'],
    ['mysql2: ER_NO_SUCH_TABLE', { code: 'ER_NO_SUCH_TABLE', errno: 1146 }, 'table-missing'],
    ['sql.js: its message', new Error('no such table: payments_inbox'), 'table-missing'],
    [
      'sqlite3 under TypeORM',
      { name: 'QueryFailedError', driverError: new Error('SQLITE_ERROR: no such table: payments_inbox') },
      'table-missing',
    ],
    ['sqlite: another table named in a message', new Error('insert failed: no such table: x'), 'other'],
    ['an errno only', { errno: 1146 }, 'table-missing'],
    ['TypeORM QueryFailedError', { name: 'QueryFailedError', driverError: { code: '42P01' } }, 'table-missing'],
    ['a cause', new Error('wrapped', { cause: { code: 'ER_NO_SUCH_TABLE' } }), 'table-missing'],
    ['pg: unique violation', { code: '23505' }, 'other'],
    ['mysql: duplicate', { code: 'ER_DUP_ENTRY', errno: 1062 }, 'other'],
    ['a plain error', new Error('connection lost'), 'other'],
    ['nothing', undefined, 'other'],
  ])('%s', (_name, error, expected) => {
    expect(inboxFailureOf(error)).toBe(expected);
  });
});

describe('markOf: the row the insert found is this attempt’s, or an earlier one’s', () => {
  it.each<[string, unknown[], 'inserted' | 'exists']>([
    ['this attempt’s row', [{ attempt: 'a1' }], 'inserted'],
    ['another attempt’s row', [{ attempt: 'a0' }], 'exists'],
    ['no row (PostgreSQL: ON CONFLICT DO NOTHING)', [], 'exists'],
  ])('%s', (_name, rows, expected) => {
    expect(markOf(rows, 'a1')).toBe(expected);
  });
});

describe('inboxDdl', () => {
  it.each([
    ['postgres', 'payment_id text PRIMARY KEY'],
    ['mysql', 'payment_id varchar(191) NOT NULL PRIMARY KEY'],
    ['sqlite', 'payment_id text PRIMARY KEY'],
  ] as const)('%s: the payment is the unique key', (dialect, key) => {
    const ddl = inboxDdl(dialect);
    expect(ddl).toContain('CREATE TABLE IF NOT EXISTS payments_inbox (');
    expect(ddl).toContain(key);
    for (const column of ['event', 'order_id', 'handled_at', 'attempt']) expect(ddl).toContain(`  ${column} `);
  });

  it('refuses a table name that is not a plain SQL name, and an unknown dialect', () => {
    expect(() => inboxDdl('postgres', 'inbox; DROP TABLE orders')).toThrow(/plain SQL name/);
    expect(() =>
      sqlInbox({ dialect: 'oracle' as never, transaction: (run) => run({ client: undefined, query: async () => [] }) }),
    ).toThrow(/dialect must be 'postgres', 'mysql' or 'sqlite'/);
    expect(inboxDdl('postgres', 'shop.payments_inbox')).toContain('CREATE TABLE IF NOT EXISTS shop.payments_inbox (');
  });
});

describe('sqlInbox: the statements of each dialect, and what their rows mean', () => {
  const handledAt = new Date('2026-01-02T03:04:05.678Z');
  const entry = { paymentId: 'p1', event: 'payment.confirmed', orderId: 'o1', handledAt, attempt: 'a1' };
  it.each<[string, 'postgres' | 'mysql' | 'sqlite', RegExp[], unknown]>([
    [
      'postgres: one statement, RETURNING',
      'postgres',
      [/ON CONFLICT \(payment_id\) DO NOTHING RETURNING attempt/],
      handledAt,
    ],
    [
      'mysql: the insert, then a locking read',
      'mysql',
      [
        /ON DUPLICATE KEY UPDATE payment_id = payment_id/,
        /SELECT attempt FROM payments_inbox WHERE payment_id = \? FOR UPDATE/,
      ],
      handledAt,
    ],
    [
      'sqlite: the insert, then a plain read; the time as ISO text',
      'sqlite',
      [
        /VALUES \(\?, \?, \?, \?, \?\) ON CONFLICT \(payment_id\) DO NOTHING$/,
        /SELECT attempt FROM payments_inbox WHERE payment_id = \?$/,
      ],
      handledAt.toISOString(),
    ],
  ])('%s', async (_name, dialect, statements, time) => {
    for (const holder of ['a1', 'a0']) {
      const seen: Array<[string, unknown[]]> = [];
      const inbox = sqlInbox({
        dialect,
        transaction: (run) =>
          run({
            client: undefined,
            query: async (sql, params) => {
              seen.push([sql, params]);
              return sql.startsWith('SAVEPOINT') || sql.startsWith('RELEASE') ? [] : [{ attempt: holder }];
            },
          }),
      });
      const mark = await inbox.transaction((tx) => tx.markDone(entry));
      expect(mark).toBe(holder === 'a1' ? 'inserted' : 'exists');
      const reads = seen.filter(([sql]) => !sql.startsWith('SAVEPOINT'));
      expect(reads).toHaveLength(statements.length);
      statements.forEach((statement, i) => expect(reads[i][0]).toMatch(statement));
      expect(reads[0][1]).toEqual(['p1', 'payment.confirmed', 'o1', time, 'a1']);
      // Only this attempt's row opens the mark that beforeCommit checks.
      expect(seen.some(([sql]) => sql === 'SAVEPOINT payments_inbox_open')).toBe(holder === 'a1');
    }
  });
});
