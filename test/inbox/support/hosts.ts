import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { inboxDdl, type InboxDialect } from '../../../lib/store/index.js';
import { MARIADB_URL, POSTGRES_URL } from '../../support/services.js';

// The host's own database of the inbox tests: a PostgreSQL schema or a MariaDB database of its
// own per suite, with the recipes' tables (`orders`, `order_events`, with the crash test's
// `paid_runs` and `pid` too) and, unless asked not to, the
// inbox table from the DDL `nestjs-payments inbox-ddl` prints.

/** One statement on the host's database, outside any outcome: the tests' own view of it. */
export type HostQuery = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** A host database of one suite. */
export interface HostDb {
  dialect: ServedDialect;
  /** Where it is: the PostgreSQL schema (on POSTGRES_URL), or the MariaDB URL of its database. */
  location: string;
  /** A connection string that lands on it (PostgreSQL: POSTGRES_URL with its schema as the `search_path`). */
  url: string;
  /** Runs a statement (placeholders of the dialect). */
  query: HostQuery;
  /** A `pg` Pool on it (postgres). */
  pgPool?: pg.Pool;
  /** A `mysql2` pool on it (mysql). */
  mysqlPool?: mysql.Pool;
  /** A TypeORM DataSource on it, initialised on first use. */
  dataSource(entities: unknown[]): Promise<DataSource>;
  /** Has {@link drop} call `close` first (an ORM's pool on it). */
  closeAtDrop(close: () => Promise<unknown>): void;
  /** `$1` or `?`. */
  p(n: number): string;
  /** Creates the inbox table (again). */
  createInbox(): Promise<void>;
  /** Drops everything. */
  drop(): Promise<void>;
}

/** The dialects with a test server (SQLite's inbox is run by the Vendure suite, on sql.js). */
export type ServedDialect = Exclude<InboxDialect, 'sqlite'>;

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
 * A host database of its own on the test server of `dialect`.
 * @param withInbox whether the inbox table is created (default true)
 */
export async function hostDb(dialect: ServedDialect, withInbox = true): Promise<HostDb> {
  const name = `inbox_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  const sources: DataSource[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0)) await close();
    for (const source of sources) if (source.isInitialized) await source.destroy();
  };
  let db: HostDb;
  if (dialect === 'postgres') {
    const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    await admin.query(`CREATE SCHEMA ${name}`);
    await admin.end();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 8, options: `-c search_path=${name}` });
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${name}`);
    db = {
      dialect,
      location: name,
      url: url.toString(),
      closeAtDrop: (close) => void closers.push(close),
      pgPool: pool,
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      p: (n) => `$${n}`,
      dataSource: async (entities) => {
        const source = new DataSource({
          type: 'postgres',
          url: POSTGRES_URL,
          schema: name,
          extra: { options: `-c search_path=${name}` },
          entities: entities as never,
        });
        sources.push(source);
        return source.initialize();
      },
      createInbox: async () => void (await pool.query(inboxDdl('postgres'))),
      drop: async () => {
        await closeAll();
        await pool.query(`DROP SCHEMA ${name} CASCADE`);
        await pool.end();
      },
    };
  } else {
    const admin = await mysql.createConnection(MARIADB_URL);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(MARIADB_URL);
    url.pathname = `/${name}`;
    const pool = mysql.createPool({ uri: url.toString(), connectionLimit: 8 });
    db = {
      dialect,
      location: url.toString(),
      url: url.toString(),
      closeAtDrop: (close) => void closers.push(close),
      mysqlPool: pool,
      query: async (sql, params) => (await pool.query(sql, params))[0] as Array<Record<string, unknown>>,
      p: () => '?',
      dataSource: async (entities) => {
        const source = new DataSource({ type: 'mariadb', url: url.toString(), entities: entities as never });
        sources.push(source);
        return source.initialize();
      },
      createInbox: async () => void (await pool.query(inboxDdl('mysql'))),
      drop: async () => {
        await closeAll();
        await pool.query(`DROP DATABASE ${name}`);
        await pool.end();
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
