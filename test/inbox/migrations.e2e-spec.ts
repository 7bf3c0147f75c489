import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DataSource, type MigrationInterface } from 'typeorm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzleMysql } from 'drizzle-orm/mysql2';
import type { PgTableWithColumns } from 'drizzle-orm/pg-core';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { inboxMigration } from '../../lib/cli/cli.migrations.js';
import { sqlInbox, type InboxDialect } from '../../lib/store/index.js';
import {
  MARIADB_URL,
  POSTGRES_URL,
  describeWithService,
  mariadbAvailable,
  postgresAvailable,
} from '../support/services.js';
import { hostDb, type HostDb } from './support/hosts.js';

// What `nestjs-payments inbox-ddl --format typeorm|prisma|drizzle` prints, run: the TypeORM
// migration class, saved as a file, creates through TypeORM's migration runner a table the inbox
// works on (and its down() drops it); the Prisma model, in a schema of its own, generates a client
// that writes and reads a row of the table its migration's SQL created; the Drizzle table, saved as
// a file, inserts and reads back a row of the table the DDL created. On PostgreSQL and MariaDB.

const GENERATED = path.join(import.meta.dirname, 'generated');
const NOW = Date.parse('2026-11-28T14:30:05.123Z');
const written: string[] = [];

afterAll(() => {
  for (const file of written) rmSync(file, { force: true, recursive: true });
});

/** Saves the CLI's output as a module of its own and imports it. */
async function load<T>(format: 'typeorm' | 'drizzle', dialect: InboxDialect): Promise<T> {
  mkdirSync(GENERATED, { recursive: true });
  const file = path.join(GENERATED, `inbox-${format}-${dialect}-${process.pid}.ts`);
  writeFileSync(file, inboxMigration(format, dialect, 'payments_inbox', NOW));
  written.push(file);
  return (await import(file)) as T;
}

const HOSTS = [
  ['postgres', await postgresAvailable(), `PostgreSQL not reachable at ${POSTGRES_URL}`],
  ['mysql', await mariadbAvailable(), `MariaDB not reachable at ${MARIADB_URL}`],
] as const;

describe.each(HOSTS)('inbox-ddl --format on %s', (dialect, up, reason) => {
  describeWithService(up, reason)('', () => {
    const dbs: HostDb[] = [];
    afterAll(async () => {
      for (const db of dbs) await db.drop();
    });

    it("typeorm: TypeORM's migration runner creates the table, the inbox marks a payment done once on it, and undoing the migration drops it", async () => {
      const db = await hostDb(dialect, false);
      dbs.push(db);
      const migrations = await load<Record<string, new () => MigrationInterface>>('typeorm', dialect);
      expect(Object.keys(migrations)).toEqual([`PaymentsInbox${NOW}`]);
      const source = new DataSource(
        dialect === 'postgres'
          ? {
              type: 'postgres',
              url: POSTGRES_URL,
              schema: db.location,
              extra: { options: `-c search_path=${db.location}` },
              migrations: Object.values(migrations),
            }
          : { type: 'mariadb', url: db.url, migrations: Object.values(migrations) },
      );
      await source.initialize();
      db.closeAtDrop(() => source.destroy());
      expect((await source.runMigrations()).map((m) => m.name)).toEqual([`PaymentsInbox${NOW}`]);

      const inbox = sqlInbox({
        dialect,
        transaction: (run) =>
          source.transaction((manager) => run({ client: manager, query: (sql, params) => manager.query(sql, params) })),
      });
      const mark = (attempt: string) =>
        inbox.transaction((tx) =>
          tx.markDone({
            paymentId: 'pay_migrated',
            event: 'payment.confirmed',
            orderId: 'ord_1',
            handledAt: new Date(NOW),
            attempt,
          }),
        );
      expect([await mark('a1'), await mark('a2')]).toEqual(['inserted', 'exists']);
      expect(await db.query('SELECT payment_id, event, order_id, attempt FROM payments_inbox')).toEqual([
        { payment_id: 'pay_migrated', event: 'payment.confirmed', order_id: 'ord_1', attempt: 'a1' },
      ]);

      await source.undoLastMigration();
      await expect(db.query('SELECT 1 FROM payments_inbox')).rejects.toThrow(/payments_inbox/);
    });

    it('prisma: the model generates a client that writes and reads a row of the table its migration SQL created', async () => {
      const db = await hostDb(dialect, false);
      dbs.push(db);
      const printed = inboxMigration('prisma', dialect, 'payments_inbox', NOW);
      const [model, migration] = printed.split(/^\/\/ prisma\/migrations\/.*\n/m);
      for (const statement of migration.split(';').filter((text) => text.trim())) await db.query(statement);
      const folder = path.join(GENERATED, `inbox-model-${dialect}-${process.pid}`);
      mkdirSync(folder, { recursive: true });
      written.push(folder);
      const provider = dialect === 'postgres' ? 'postgresql' : 'mysql';
      writeFileSync(
        path.join(folder, 'schema.prisma'),
        `generator client {\n  provider = "prisma-client"\n  output   = "client"\n}\n\ndatasource db {\n  provider = "${provider}"\n}\n\n${model}`,
      );
      execFileSync(
        path.join(import.meta.dirname, '../../node_modules/.bin/prisma'),
        ['generate', '--schema', path.join(folder, 'schema.prisma')],
        {
          stdio: 'pipe',
          env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false', PRISMA_HIDE_UPDATE_MESSAGE: '1' },
        },
      );
      const { PrismaClient } = (await import(path.join(folder, 'client/client.ts'))) as {
        PrismaClient: new (options: { adapter: unknown }) => {
          paymentsInbox: { create(args: unknown): Promise<unknown>; findMany(): Promise<unknown[]> };
          $disconnect(): Promise<void>;
        };
      };
      const url = new URL(db.url);
      const prisma = new PrismaClient({
        adapter:
          dialect === 'postgres'
            ? new PrismaPg({ connectionString: db.url }, { schema: db.location })
            : new PrismaMariaDb({
                host: url.hostname,
                port: Number(url.port || 3306),
                user: decodeURIComponent(url.username),
                database: url.pathname.slice(1),
              }),
      });
      db.closeAtDrop(() => prisma.$disconnect());
      const row = {
        paymentId: 'pay_prisma',
        event: 'payment.confirmed',
        orderId: 'ord_1',
        handledAt: new Date(NOW),
        attempt: 'a1',
      };
      await prisma.paymentsInbox.create({ data: row });
      expect(await prisma.paymentsInbox.findMany()).toEqual([row]);
      expect(await db.query('SELECT payment_id, event, order_id, attempt FROM payments_inbox')).toEqual([
        { payment_id: 'pay_prisma', event: 'payment.confirmed', order_id: 'ord_1', attempt: 'a1' },
      ]);
    });

    it("drizzle: the table inserts and reads back a row of the DDL's table, the time to the millisecond", async () => {
      const db = await hostDb(dialect, true);
      dbs.push(db);
      const { paymentsInbox } = await load<{ paymentsInbox: PgTableWithColumns<never> }>('drizzle', dialect);
      const row = {
        paymentId: 'pay_drizzle',
        event: 'payment.confirmed',
        orderId: null,
        handledAt: new Date(NOW),
        attempt: 'a1',
      };
      if (dialect === 'postgres') {
        const orm = drizzlePg({ client: db.pgPool! });
        await orm.insert(paymentsInbox).values(row as never);
        expect(await orm.select().from(paymentsInbox)).toEqual([row]);
      } else {
        const orm = drizzleMysql({ client: db.mysqlPool! });
        await orm.insert(paymentsInbox as never).values(row as never);
        expect(await orm.select().from(paymentsInbox as never)).toEqual([row]);
      }
      expect(await db.query('SELECT payment_id, event, order_id, attempt FROM payments_inbox')).toEqual([
        { payment_id: 'pay_drizzle', event: 'payment.confirmed', order_id: null, attempt: 'a1' },
      ]);
    });
  });
});
