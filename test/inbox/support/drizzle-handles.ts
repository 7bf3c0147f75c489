import { drizzle as drizzleMysql, type MySql2Database } from 'drizzle-orm/mysql2';
import { drizzle as drizzlePg, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import mysql from 'mysql2';
import pg from 'pg';
import type { HostHandle } from './host-handle.js';

// Drizzle on a host database, for the Drizzle recipes. A file of its own, imported when one of
// them is set up, whose imports of Drizzle are static ones as the recipes' are: in a CommonJS app
// (the Nest 11 compatibility app) they are require()s of one copy, where an import() of Drizzle
// would load its ES-module build beside the recipe's CommonJS one (two copies whose classes differ).

/** Drizzle over node-postgres on `db` (PostgreSQL), its pool ended with it. */
export function drizzlePgOn(db: HostHandle): NodePgDatabase {
  const pool = new pg.Pool({ connectionString: db.url });
  db.closeAtDrop(() => pool.end());
  return drizzlePg({ client: pool });
}

/** Drizzle over mysql2 on `db` (MySQL, MariaDB), its pool ended with it. */
export function drizzleMysqlOn(db: HostHandle): MySql2Database {
  const pool = mysql.createPool(db.url);
  db.closeAtDrop(() => pool.promise().end());
  return drizzleMysql({ client: pool });
}
