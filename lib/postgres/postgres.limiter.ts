import { positiveMs, type RateLimiter } from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';

/**
 * The {@link RateLimiter} of `PostgresPaymentsStore`: one row per taken slot in
 * `<prefix>rate_limits`, expiring on the database clock, taken by one `INSERT ... ON CONFLICT`
 * (so exactly one of concurrent takers, on any instance, gets it) and freed by a `DELETE`.
 */
export class PostgresRateLimiter implements RateLimiter {
  // A private field, like the store's: the connection may hold a connection string.
  readonly #db: PostgresConnection;

  /** @param db the store's connection */
  constructor(db: PostgresConnection) {
    this.#db = db;
  }

  /** @inheritdoc */
  async take(key: string, windowMs: number): Promise<boolean> {
    const window = positiveMs('PostgresPaymentsStore', windowMs, 'windowMs');
    const rows = await this.#db.write('rateLimits.take', this.#db.sql.takeRateLimit, [key, window]).catch(missingTable);
    return rows.length === 1;
  }

  /** @inheritdoc */
  async free(key: string): Promise<void> {
    await this.#db.write('rateLimits.free', this.#db.sql.freeRateLimit, [key]).catch(missingTable);
  }
}

// The table came after the first release. A store that creates its tables makes it at start; one
// whose host applies the migration (createTables: false) needs that migration run again, which
// the bare "relation does not exist" would not say.
function missingTable(error: unknown): never {
  if ((error as { code?: unknown } | null)?.code === '42P01' && error instanceof Error) {
    throw new Error(
      `PostgresPaymentsStore: ${error.message}; the rate_limits table came with a later version of the store: apply paymentsStoreMigration() again (it is idempotent) or enable createTables`,
      { cause: error },
    );
  }
  throw error;
}
