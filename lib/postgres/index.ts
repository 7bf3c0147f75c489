/**
 * `nestjs-payments/postgres`: the PostgreSQL store, for several app instances sharing one
 * database. Takes a `pg` Pool, a PGlite instance or a connection string; needs the optional peer
 * dependency `pg`, also with PGlite.
 */
import './postgres.peer.js';
export { PostgresPaymentsStore } from './postgres.store.js';
export {
  DEFAULT_CLEANUP_EVERY_WRITES,
  DEFAULT_PG_OPERATION_TIMEOUT_MS,
  DEFAULT_TABLE_PREFIX,
  type PostgresPaymentsStoreOptions,
  type PostgresQueryable,
  type PostgresQueryResult,
} from './postgres.options.js';
export { paymentsStoreMigration, type PaymentsStoreMigrationOptions } from './postgres.schema.js';
