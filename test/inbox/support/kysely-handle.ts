import { Kysely, MysqlDialect, PostgresDialect } from 'kysely';
import mysql from 'mysql2';
import pg from 'pg';
import type { ShopDatabase } from '../recipes/inbox-kysely.js';
import type { HostHandle } from './host-handle.js';

// Kysely on a host database, for the Kysely recipe. A file of its own, imported when that recipe
// is set up, whose import of Kysely is a static one as the recipe's is: in a CommonJS app (the
// Nest 11 compatibility app) both are require()s of one copy, where an import() of Kysely would
// load its ES-module build beside the recipe's CommonJS one (two copies whose classes differ).

/** A Kysely instance on `db`, destroyed with it. */
export function kyselyOn(db: HostHandle): Kysely<ShopDatabase> {
  const dialect =
    db.dialect === 'postgres'
      ? new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url }) })
      : new MysqlDialect({ pool: mysql.createPool(db.url) });
  const instance = new Kysely<ShopDatabase>({ dialect });
  db.closeAtDrop(() => instance.destroy());
  return instance;
}
