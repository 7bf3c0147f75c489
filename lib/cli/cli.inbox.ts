/** `nestjs-payments inbox-ddl [--dialect postgres|mysql|sqlite] [--table name] [--format ...]`: the inbox table's DDL, or an ORM's migration of it. */
import { parseArgs } from 'node:util';
import { INBOX_TABLE, type InboxDialect } from '../core/index.js';
import { CliUsageError, type CliIo } from './cli.io.js';
import { INBOX_FORMATS, inboxMigration, type InboxFormat } from './cli.migrations.js';

/** Usage of `inbox-ddl`. */
export const INBOX_DDL_USAGE = `Usage: nestjs-payments inbox-ddl [--dialect postgres|mysql|sqlite]
                                [--table name] [--format sql|typeorm|prisma|drizzle]

Prints the CREATE TABLE of the inbox (docs/exactly-once.md): the table of the
host's own database where the plugin notes, in the handlers' transaction, that
a payment's handlers ran. Run it in that database (a migration, or psql/mysql).

Options:
  --dialect   postgres (default), mysql (MySQL and MariaDB) or sqlite (the
              time kept as ISO 8601 text, as sqlInbox writes it)
  --table     the table's name (default ${INBOX_TABLE}; give sqlInbox() the same)
  --format    sql (default): the CREATE TABLE;
              typeorm: a TypeORM migration class (save it in your migrations);
              prisma: the model for schema.prisma and the SQL of its migration;
              drizzle: the Drizzle table for your schema (drizzle-kit migrates it)
  -h, --help  print this help
`;

const DIALECTS: readonly InboxDialect[] = ['postgres', 'mysql', 'sqlite'];

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
        format: { type: 'string', default: 'sql' },
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
  if (!DIALECTS.includes(dialect))
    throw new CliUsageError(`--dialect must be postgres, mysql or sqlite, not ${dialect}`);
  const format = parsed.values.format as InboxFormat;
  if (!INBOX_FORMATS.includes(format))
    throw new CliUsageError(`--format must be ${INBOX_FORMATS.join(', ')}, not ${format}`);
  try {
    io.stdout.write(inboxMigration(format, dialect, parsed.values.table, io.clock.now()));
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  return 0;
}
