/** `nestjs-payments inbox-ddl [--dialect postgres|mysql] [--table name]`: the inbox table's DDL. */
import { parseArgs } from 'node:util';
import { INBOX_TABLE, inboxDdl, type InboxDialect } from '../core/index.js';
import { CliUsageError, type CliIo } from './cli.io.js';

/** Usage of `inbox-ddl`. */
export const INBOX_DDL_USAGE = `Usage: nestjs-payments inbox-ddl [--dialect postgres|mysql] [--table name]

Prints the CREATE TABLE of the inbox (docs/exactly-once.md): the table of the
host's own database where the plugin notes, in the handlers' transaction, that
a payment's handlers ran. Run it in that database (a migration, or psql/mysql).

Options:
  --dialect   postgres (default) or mysql (MySQL and MariaDB)
  --table     the table's name (default ${INBOX_TABLE}; give sqlInbox() the same)
  -h, --help  print this help
`;

const DIALECTS: readonly InboxDialect[] = ['postgres', 'mysql'];

/**
 * Runs `inbox-ddl` with its arguments (after the command name).
 * @returns 0 once the DDL is printed
 */
export async function inboxDdlCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        dialect: { type: 'string', default: 'postgres' },
        table: { type: 'string', default: INBOX_TABLE },
      },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  if (parsed.values.help) {
    io.stdout.write(INBOX_DDL_USAGE);
    return 0;
  }
  const dialect = parsed.values.dialect as InboxDialect;
  if (!DIALECTS.includes(dialect)) throw new CliUsageError(`--dialect must be postgres or mysql, not ${dialect}`);
  try {
    io.stdout.write(inboxDdl(dialect, parsed.values.table));
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  return 0;
}
