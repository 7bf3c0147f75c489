import type { InboxDialect } from 'nestjs-payments/store';

/** The dialects with a test server (SQLite's inbox is run by the Vendure suite, on sql.js). */
export type ServedDialect = Exclude<InboxDialect, 'sqlite'>;
