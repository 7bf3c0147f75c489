import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { POSTGRES_URL } from '../../support/services.js';

// The shop side of the exactly-once tests: an `orders` table and an `order_events` history on the
// same database as the plugin's store. The handlers under test write both without any guard (no
// `WHERE status = 'pending'`, no unique index): a second committed run would show as a second
// event row and `paid_runs` 2. That is what the transactional mode promises never happens.

/** The shop's tables. */
export const ORDERS_DDL = `
CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount text NOT NULL, status text NOT NULL DEFAULT 'pending', paid_runs integer NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS order_events (id serial PRIMARY KEY, order_id text NOT NULL, kind text NOT NULL, source text NOT NULL, pid integer NOT NULL)`;

/** The non-idempotent write of a confirmation: run twice, it leaves two events and `paid_runs` 2. */
export const MARK_PAID = [
  `UPDATE orders SET status = 'paid', paid_runs = paid_runs + 1 WHERE id = $1`,
  `INSERT INTO order_events (order_id, kind, source, pid) VALUES ($1, 'paid', $2, $3)`,
] as const;

/** Anything with `query(text, params)` answering `{ rows }`. */
export interface Db {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: R[] }>;
}

/** What the orders look like now: `paid_runs` and event count per order. */
export async function ordersState(
  db: Db,
): Promise<Array<{ id: string; status: string; paid_runs: number; events: number }>> {
  const { rows } = await db.query<{ id: string; status: string; paid_runs: number; events: string }>(
    `SELECT o.id, o.status, o.paid_runs, (SELECT count(*) FROM order_events e WHERE e.order_id = o.id)::text AS events FROM orders o ORDER BY o.id`,
  );
  return rows.map((r) => ({ id: r.id, status: r.status, paid_runs: Number(r.paid_runs), events: Number(r.events) }));
}

/** A schema of its own on the test server, with the shop's tables: pools on it see it as their search_path. */
export async function pgSchema(): Promise<{ schema: string; pool(max?: number): pg.Pool; drop(): Promise<void> }> {
  const schema = `exactly_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  const pools: pg.Pool[] = [];
  const pool = (max = 8) => {
    const p = new pg.Pool({
      connectionString: POSTGRES_URL,
      max,
      // The stores bound their own waits (operationTimeoutMs); the pool's is only a backstop.
      connectionTimeoutMillis: 60_000,
      options: `-c search_path=${schema}`,
    });
    pools.push(p);
    return p;
  };
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.query(`SET search_path = "${schema}"`);
    await admin.query(ORDERS_DDL);
  } finally {
    await admin.end();
  }
  return {
    schema,
    pool,
    drop: async () => {
      await Promise.all(pools.splice(0).map((p) => p.end()));
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A PGlite database (in memory unless `dataDir`) with the shop's tables. */
export async function pgliteDb(dataDir?: string): Promise<PGlite> {
  const db = await PGlite.create(dataDir);
  await db.exec(ORDERS_DDL);
  return db;
}
