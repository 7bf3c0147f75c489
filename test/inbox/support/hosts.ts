import { MARIADB_URL, mariadbAvailable, POSTGRES_URL, postgresAvailable } from '../../support/services.js';
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

/** A test server of the host's database: its name, whether it answers, and the skip reason when not. */
export interface HostServer {
  readonly label: string;
  readonly up: boolean;
  readonly reason: string;
}

/** The test servers of each host dialect, asked whether they answer (once per suite). */
export async function hostServers(): Promise<Record<ServedDialect, HostServer>> {
  const [pgUp, mariaUp] = await Promise.all([postgresAvailable(), mariadbAvailable()]);
  return {
    postgres: { label: 'PostgreSQL', up: pgUp, reason: `PostgreSQL not reachable at ${POSTGRES_URL}` },
    mysql: { label: 'MariaDB', up: mariaUp, reason: `MariaDB not reachable at ${MARIADB_URL}` },
  };
}
