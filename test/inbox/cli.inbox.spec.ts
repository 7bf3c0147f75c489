import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { CLI_USAGE, runCli } from '../../lib/cli/cli.commands.js';
import { INBOX_DDL_USAGE } from '../../lib/cli/cli.inbox.js';
import type { CliIo } from '../../lib/cli/cli.io.js';
import { inboxDdl } from '../../lib/store/index.js';
import { INBOX_COLUMNS } from '../../lib/core/index.js';

class CapturedIo implements CliIo {
  out = '';
  err = '';
  readonly env = {};
  readonly signals = new EventEmitter();
  readonly clock = { now: () => Date.parse('2026-11-28T14:30:05.123Z') };
  readonly stdout = { write: (text: string) => (this.out += text) };
  readonly stderr = { write: (text: string) => (this.err += text) };
}

describe('nestjs-payments inbox-ddl', () => {
  it.each([
    [[], inboxDdl('postgres')],
    [['--dialect', 'postgres'], inboxDdl('postgres')],
    [['--dialect', 'mysql'], inboxDdl('mysql')],
    [['--dialect=mysql', '--table', 'shop_inbox'], inboxDdl('mysql', 'shop_inbox')],
    [['--dialect', 'sqlite'], inboxDdl('sqlite')],
  ])('%j prints the DDL', async (args, ddl) => {
    const io = new CapturedIo();
    expect(await runCli(['inbox-ddl', ...args], io)).toBe(0);
    expect(io.out).toBe(ddl);
    expect(io.err).toBe('');
  });

  it.each([
    [['--dialect', 'oracle'], '--dialect must be postgres, mysql or sqlite, not oracle'],
    [['--table', 'a b'], 'plain SQL name'],
    [['--nope'], 'Unknown option'],
    [['--format', 'sequelize'], '--format must be sql, typeorm, prisma, drizzle, not sequelize'],
    [['--format', 'typeorm', '--table', 'shop.inbox'], '--format typeorm takes a table without a schema'],
  ])('%j is a usage error', async (args, message) => {
    const io = new CapturedIo();
    expect(await runCli(['inbox-ddl', ...args], io)).toBe(1);
    expect(io.err).toContain(message);
    expect(io.err).toContain(INBOX_DDL_USAGE);
  });

  it('is listed in the help, and help inbox-ddl prints its usage', async () => {
    expect(CLI_USAGE).toContain('  inbox-ddl [--dialect mysql] [--format typeorm|prisma|drizzle]');
    const io = new CapturedIo();
    expect(await runCli(['help', 'inbox-ddl'], io)).toBe(0);
    expect(io.out).toBe(INBOX_DDL_USAGE);
  });
});

// 2026-11-28T14:30:05.123Z, the captured io's clock.
const NOW = 1795876205123;

describe('nestjs-payments inbox-ddl --format', () => {
  const print = async (...args: string[]) => {
    const io = new CapturedIo();
    expect(await runCli(['inbox-ddl', ...args], io)).toBe(0);
    expect(io.err).toBe('');
    return io.out;
  };

  it('--format sql is the DDL', async () => {
    expect(await print('--format', 'sql', '--dialect', 'mysql')).toBe(inboxDdl('mysql'));
  });

  it('typeorm: a migration class named with the time, whose up() runs the DDL and down() drops the table', async () => {
    expect(await print('--format', 'typeorm')).toBe(`import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The payments inbox (nestjs-payments, docs/exactly-once.md): the table where the plugin notes, in
 * your handlers' transaction, that a payment's handlers ran.
 */
export class PaymentsInbox${NOW} implements MigrationInterface {
  name = 'PaymentsInbox${NOW}';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`${inboxDdl('postgres').replace(/;\n$/, '')}\`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`DROP TABLE IF EXISTS payments_inbox\`);
  }
}
`);
    const mysql = await print('--format', 'typeorm', '--dialect', 'mysql', '--table', 'shop_inbox');
    expect(mysql).toContain(`export class ShopInbox${NOW} implements MigrationInterface {`);
    expect(mysql).toContain(`await queryRunner.query(\`${inboxDdl('mysql', 'shop_inbox').replace(/;\n$/, '')}\`);`);
    expect(mysql).toContain('await queryRunner.query(`DROP TABLE IF EXISTS shop_inbox`);');
  });

  it.each([
    [
      'postgres',
      [
        '  paymentId String   @id @map("payment_id")',
        '  event     String',
        '  orderId   String?  @map("order_id")',
        '  handledAt DateTime @map("handled_at") @db.Timestamptz(6)',
        '  attempt   String',
      ],
    ],
    [
      'mysql',
      [
        '  paymentId String   @id @map("payment_id") @db.VarChar(191)',
        '  event     String   @db.VarChar(64)',
        '  orderId   String?  @map("order_id") @db.VarChar(191)',
        '  handledAt DateTime @map("handled_at") @db.DateTime(3)',
        '  attempt   String   @db.VarChar(64)',
      ],
    ],
    [
      'sqlite',
      [
        '  paymentId String  @id @map("payment_id")',
        '  event     String',
        '  orderId   String? @map("order_id")',
        '  handledAt String  @map("handled_at")',
        '  attempt   String',
      ],
    ],
  ] as const)('prisma (%s): the model, mapped to the table, then the SQL of its migration', async (dialect, fields) => {
    const out = await print('--format', 'prisma', '--dialect', dialect);
    expect(out).toContain(`model PaymentsInbox {\n${fields.join('\n')}\n\n  @@map("payments_inbox")\n}\n`);
    expect(out).toContain('// prisma/migrations/20261128143005_payments_inbox/migration.sql');
    expect(out.endsWith(`migration.sql (or \`prisma migrate dev --create-only\`)\n${inboxDdl(dialect)}`)).toBe(true);
  });

  it.each([
    [
      'postgres',
      "import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';",
      [
        "export const paymentsInbox = pgTable('payments_inbox', {",
        "  paymentId: text('payment_id').primaryKey(),",
        "  event: text('event').notNull(),",
        "  orderId: text('order_id'),",
        "  handledAt: timestamp('handled_at', { withTimezone: true, mode: 'date' }).notNull(),",
        "  attempt: text('attempt').notNull(),",
        '});',
      ],
    ],
    [
      'mysql',
      "import { datetime, mysqlTable, varchar } from 'drizzle-orm/mysql-core';",
      [
        "export const paymentsInbox = mysqlTable('payments_inbox', {",
        "  paymentId: varchar('payment_id', { length: 191 }).primaryKey(),",
        "  event: varchar('event', { length: 64 }).notNull(),",
        "  orderId: varchar('order_id', { length: 191 }),",
        "  handledAt: datetime('handled_at', { fsp: 3 }).notNull(),",
        "  attempt: varchar('attempt', { length: 64 }).notNull(),",
        '});',
      ],
    ],
    [
      'sqlite',
      "import { sqliteTable, text } from 'drizzle-orm/sqlite-core';",
      [
        "export const paymentsInbox = sqliteTable('payments_inbox', {",
        "  paymentId: text('payment_id').primaryKey(),",
        "  event: text('event').notNull(),",
        "  orderId: text('order_id'),",
        "  handledAt: text('handled_at').notNull(),",
        "  attempt: text('attempt').notNull(),",
        '});',
      ],
    ],
  ] as const)('drizzle (%s): the table of the same columns and types', async (dialect, imports, table) => {
    const out = await print('--format', 'drizzle', '--dialect', dialect);
    expect(out.startsWith(`${imports}\n`)).toBe(true);
    expect(out.endsWith(`${table.join('\n')}\n`)).toBe(true);
  });

  it.each(['typeorm', 'prisma', 'drizzle'])('%s names every column of the inbox, in order', async (format) => {
    for (const dialect of ['postgres', 'mysql', 'sqlite']) {
      const out = await print('--format', format, '--dialect', dialect);
      const at = INBOX_COLUMNS.map((column) => out.lastIndexOf(`${column.name}`));
      expect(at.every((i) => i > 0)).toBe(true);
      expect([...at].sort((a, b) => a - b)).toEqual(at);
    }
  });
});
