import mysql from 'mysql2/promise';
import pg from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';
import type { ServedDialect } from './served-dialect.js';

// A handle on a host database that exists already: the pools and ORM entry points the inbox
// recipes are set up with. Shared by the recipes' suite (through hosts.ts) and the crash test's
// child process, which cannot import the Jest-side helpers.

/** What the recipes are set up on: a host database and its connections. */
export interface HostHandle {
  dialect: ServedDialect;
  /** Where it is: the PostgreSQL schema, or the MariaDB URL of its database. */
  location: string;
  /** A connection string that lands on it (PostgreSQL: with its schema as the `search_path`). */
  url: string;
  /** A `pg` Pool on it (postgres). */
  pgPool?: pg.Pool;
  /** A `mysql2` pool on it (mysql). */
  mysqlPool?: mysql.Pool;
  /** A TypeORM DataSource on it, initialised on first use. */
  dataSource(entities: unknown[]): Promise<DataSource>;
  /** Has {@link close} call `close` first (an ORM's pool on it). */
  closeAtDrop(close: () => Promise<unknown>): void;
  /** Closes what was opened on it: the ORMs' pools, then its own pool. */
  close(): Promise<void>;
}

/**
 * A handle on the host database `name`: a schema on the PostgreSQL server at `serverUrl`, or a
 * database on the MariaDB server at `serverUrl`.
 */
export function hostHandle(dialect: ServedDialect, serverUrl: string, name: string): HostHandle {
  const sources: DataSource[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  const closeOpened = async () => {
    for (const close of closers.splice(0)) await close();
    for (const source of sources) if (source.isInitialized) await source.destroy();
  };
  // TypeORM is loaded by the recipe that asks for it only (a child process loads what it runs).
  const track = async (options: DataSourceOptions) => {
    const { DataSource } = await import('typeorm');
    const source = new DataSource(options);
    sources.push(source);
    return source.initialize();
  };
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: serverUrl, max: 8, options: `-c search_path=${name}` });
    const url = new URL(serverUrl);
    url.searchParams.set('options', `-c search_path=${name}`);
    return {
      dialect,
      location: name,
      url: url.toString(),
      pgPool: pool,
      closeAtDrop: (close) => void closers.push(close),
      dataSource: (entities) =>
        track({
          type: 'postgres',
          url: serverUrl,
          schema: name,
          extra: { options: `-c search_path=${name}` },
          entities: entities as never,
        }),
      close: async () => {
        await closeOpened();
        await pool.end();
      },
    };
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = mysql.createPool({ uri: url.toString(), connectionLimit: 8 });
  return {
    dialect,
    location: url.toString(),
    url: url.toString(),
    mysqlPool: pool,
    closeAtDrop: (close) => void closers.push(close),
    dataSource: (entities) => track({ type: 'mariadb', url: url.toString(), entities: entities as never }),
    close: async () => {
      await closeOpened();
      await pool.end();
    },
  };
}
