import { describe, expect, it } from '@jest/globals';
import { inboxDdl, sqlInbox } from '../../lib/store/index.js';
import { inboxFailureOf, markOf } from '../../lib/core/store/inbox.sql.js';

// The decisions of sqlInbox, as tables: what a failed statement means, whose row the insert found,
// and the DDL per dialect. recipes.e2e-spec.ts runs them on PostgreSQL and MariaDB.

describe('inboxFailureOf: a missing table, on the driver’s error or an ORM’s wrapper of it', () => {
  it.each<[string, unknown, 'table-missing' | 'other']>([
    ['pg: undefined_table', { code: '42P01' }, 'table-missing'],
    ['mysql2: ER_NO_SUCH_TABLE', { code: 'ER_NO_SUCH_TABLE', errno: 1146 }, 'table-missing'],
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
    ).toThrow(/dialect must be 'postgres' or 'mysql'/);
    expect(inboxDdl('postgres', 'shop.payments_inbox')).toContain('CREATE TABLE IF NOT EXISTS shop.payments_inbox (');
  });
});
