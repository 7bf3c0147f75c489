import { PGlite } from '@electric-sql/pglite';
import { Logger } from '@nestjs/common';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { migrate as migrateNodePg } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg, { type PoolClient } from 'pg';
import type { PostgresQueryable } from 'nestjs-payments/postgres';
import * as schema from './schema.js';

/** The shop's Drizzle database, whichever driver is under it. */
export type ShopDb = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Injection token of the {@link ShopDatabase}. */
export const SHOP_DATABASE = Symbol('SHOP_DATABASE');

/** The migrations drizzle-kit generated (`sample-app/drizzle/`), from `src/db` and `dist/db` alike. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));

/** Default PGlite data directory: `sample-app/.data/` (git-ignored). */
export const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../.data', import.meta.url));

// Any number works, as long as every instance of the shop uses the same one.
const MIGRATION_LOCK_KEY = 7_240_311_802;

/** Where the shop keeps its data: `DATABASE_URL` (PostgreSQL) or `DATA_DIR` (PGlite). */
export interface DatabaseConfig {
  /** `postgres://...`: a PostgreSQL server. Unset: PGlite. */
  databaseUrl?: string;
  /** PGlite's data directory (default `sample-app/.data`), or `memory://` for a throw-away database. */
  dataDir?: string;
}

/**
 * One database for the orders (through Drizzle) and for the payments plugin's store (through
 * `PostgresPaymentsStore`, given {@link queryable}): the same PGlite instance or the same pg
 * Pool, so an order and its pending confirmation are never in two places.
 */
export class ShopDatabase {
  private closing?: Promise<void>;

  private constructor(
    /** Drizzle over the connection. */
    readonly db: ShopDb,
    /** What `new PostgresPaymentsStore(...)` is given: the PGlite instance or the pg Pool. */
    readonly queryable: PostgresQueryable,
    /** `pglite` or `postgres`, for the logs and the admin page. */
    readonly kind: 'pglite' | 'postgres',
    /** Where the data is, without any password: a directory, `memory://` or `host:port/db`. */
    readonly location: string,
    private readonly end: () => Promise<void>,
  ) {}

  /**
   * Opens the database and applies the pending migrations (several instances starting at once
   * on one PostgreSQL take turns, under an advisory lock).
   * @throws Error when the server cannot be reached or a migration fails
   */
  static async open(config: DatabaseConfig): Promise<ShopDatabase> {
    if (config.databaseUrl) return ShopDatabase.openPostgres(config.databaseUrl);
    return ShopDatabase.openPglite(config.dataDir || DEFAULT_DATA_DIR);
  }

  private static async openPglite(dataDir: string): Promise<ShopDatabase> {
    const inMemory = dataDir.startsWith('memory://');
    if (!inMemory) mkdirSync(dataDir, { recursive: true });
    const client = await PGlite.create(inMemory ? undefined : dataDir);
    try {
      const db = drizzlePglite(client, { schema });
      await migratePglite(db, { migrationsFolder: MIGRATIONS_FOLDER });
      const queryable: PostgresQueryable = client;
      return new ShopDatabase(db, queryable, 'pglite', inMemory ? 'memory://' : dataDir, () => client.close());
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
  }

  private static async openPostgres(url: string): Promise<ShopDatabase> {
    let location: string;
    try {
      const parsed = new URL(url);
      location = `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
    } catch {
      throw new Error('DATABASE_URL must be a connection string such as postgres://user:password@host:5432/shop');
    }
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle client losing its server must not crash the shop; the next query reports it.
    pool.on('error', (error) => new Logger('Database').warn(`idle PostgreSQL connection lost: ${error.message}`));
    try {
      const db = drizzleNodePg(pool, { schema });
      const lock = await pool.connect();
      try {
        await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        await migrateNodePg(db, { migrationsFolder: MIGRATIONS_FOLDER });
      } finally {
        await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
        lock.release();
      }
      return new ShopDatabase(db, pool, 'postgres', location, () => pool.end());
    } catch (error) {
      await pool.end().catch(() => undefined);
      // pg's messages name the host, never the password; the URL itself is not repeated.
      throw new Error(
        `could not open the database at ${location}: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  /**
   * Drizzle over the payments plugin's outcome transaction (`event.transaction.client`, with the
   * store in transactional mode): what it writes commits with the outcome's done marker, or not
   * at all. Never open a transaction on it: it is one already.
   */
  within(transactionClient: unknown): ShopDb {
    return this.kind === 'pglite'
      ? drizzlePglite({ client: transactionClient as PGlite, schema })
      : drizzleNodePg({ client: transactionClient as PoolClient, schema });
  }

  /** Closes the connection(s). Idempotent. Call after the app (and the plugin's store) stopped. */
  close(): Promise<void> {
    this.closing ??= this.end();
    return this.closing;
  }
}
