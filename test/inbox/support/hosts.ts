import { MARIADB_URL, POSTGRES_URL } from '../../support/services.js';
import { openHostDb, type HostDb } from './host-database.js';
import type { ServedDialect } from './served-dialect.js';

// The host's own database of the inbox suites, on the test servers (POSTGRES_URL, MARIADB_URL):
// host-database.ts's, one of its own per suite.

export { orderState, type HostDb, type HostQuery } from './host-database.js';
export type { ServedDialect };

/**
 * A host database of its own on the test server of `dialect`.
 * @param withInbox whether the inbox table is created (default true)
 */
export function hostDb(dialect: ServedDialect, withInbox = true): Promise<HostDb> {
  return openHostDb(dialect, dialect === 'postgres' ? POSTGRES_URL : MARIADB_URL, withInbox);
}
