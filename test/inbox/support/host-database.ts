import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { inboxDdl } from 'nestjs-payments/store';
import { hostHandle, type HostHandle } from './host-handle.js';
import type { ServedDialect } from './served-dialect.js';

// The host's own database of the inbox recipes' runs: a PostgreSQL schema or a MariaDB database of
// its own per run, with the recipes' tables (`orders`, `order_events`, with the crash test's
// `paid_runs` and `pid` too) and, unless asked not to, the inbox table from the DDL
// `nestjs-payments inbox-ddl` prints. It imports the package by name and nothing of Jest's: the
// Nest 11 compatibility app (test/compat/apps/nest11-inbox) runs it as the repository's suites do.

/** One statement on the host's database, outside any outcome: the runs' own view of it. */
export type HostQuery = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** A host database of one run. */
export interface HostDb extends HostHandle {
  /** Runs a statement (placeholders of the dialect). */
  query: HostQuery;
  /** `$1` or `?`. */
  p(n: number): string;
  /** Creates the inbox table (again). */
  createInbox(): Promise<void>;
  /** Drops everything. */
  drop(): Promise<void>;
}

const ORDERS_DDL: Record<ServedDialect, string[]> = {
  postgres: [
    `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending', paid_runs integer NOT NULL DEFAULT 0)`,
    `CREATE TABLE order_events (id serial PRIMARY KEY, order_id text NOT NULL, kind text NOT NULL DEFAULT 'paid', pid integer)`,
  ],
  mysql: [
    `CREATE TABLE orders (id varchar(64) PRIMARY KEY, status varchar(16) NOT NULL DEFAULT 'pending', paid_runs int NOT NULL DEFAULT 0) ENGINE=InnoDB`,
    `CREATE TABLE order_events (id int AUTO_INCREMENT PRIMARY KEY, order_id varchar(64) NOT NULL, kind varchar(16) NOT NULL DEFAULT 'paid', pid int NULL) ENGINE=InnoDB`,
  ],
};

/**
 * A host database of its own (a schema named `inbox_<pid>_<random>`, or a database so named) on
 * the server at `serverUrl` (PostgreSQL or MariaDB, per `dialect`).
 * @param withInbox whether the inbox table is created (default true)
 */
export async function openHostDb(dialect: ServedDialect, serverUrl: string, withInbox = true): Promise<HostDb> {
  const name = `inbox_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  let db: HostDb;
  if (dialect === 'postgres') {
    const admin = new pg.Pool({ connectionString: serverUrl, max: 1 });
    await admin.query(`CREATE SCHEMA ${name}`);
    await admin.end();
    const handle = hostHandle(dialect, serverUrl, name);
    const pool = handle.pgPool!;
    db = {
      ...handle,
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      p: (n) => `$${n}`,
      createInbox: async () => void (await pool.query(inboxDdl('postgres'))),
      drop: async () => {
        await handle.close();
        const admin = new pg.Pool({ connectionString: serverUrl, max: 1 });
        await admin.query(`DROP SCHEMA ${name} CASCADE`);
        await admin.end();
      },
    };
  } else {
    const admin = await mysql.createConnection(serverUrl);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const handle = hostHandle(dialect, serverUrl, name);
    const pool = handle.mysqlPool!;
    db = {
      ...handle,
      query: async (sql, params) => (await pool.query(sql, params))[0] as Array<Record<string, unknown>>,
      p: () => '?',
      createInbox: async () => void (await pool.query(inboxDdl('mysql'))),
      drop: async () => {
        await handle.close();
        const admin = await mysql.createConnection(serverUrl);
        await admin.query(`DROP DATABASE ${name}`);
        await admin.end();
      },
    };
  }
  for (const statement of ORDERS_DDL[dialect]) await db.query(statement);
  if (withInbox) await db.createInbox();
  return db;
}

/** The order's status and its events' kinds. */
export async function orderState(db: HostDb, orderId: string): Promise<{ status: string; events: string[] }> {
  const [order] = await db.query(`SELECT status FROM orders WHERE id = ${db.p(1)}`, [orderId]);
  const events = await db.query(`SELECT kind FROM order_events WHERE order_id = ${db.p(1)} ORDER BY id`, [orderId]);
  return { status: String(order.status), events: events.map((e) => String(e.kind)) };
}
