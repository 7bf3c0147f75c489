/**
 * The inbox table as an ORM's migration (`nestjs-payments inbox-ddl --format`): a TypeORM
 * migration class, a Prisma model with the SQL of its migration, a Drizzle table. Each is written
 * from the inbox's one column list (INBOX_COLUMNS), the list its DDL and statements are written from.
 */
import { INBOX_COLUMNS, inboxColumnType, inboxDdl, type InboxColumn, type InboxDialect } from '../core/index.js';

/** What `inbox-ddl` prints: the DDL itself, or the migration of an ORM. */
export type InboxFormat = 'sql' | 'typeorm' | 'prisma' | 'drizzle';

/** The formats, in the order the usage lists them. */
export const INBOX_FORMATS: readonly InboxFormat[] = ['sql', 'typeorm', 'prisma', 'drizzle'];

/**
 * The inbox table in a format.
 * @param format the DDL, or an ORM's migration
 * @param dialect the host database's dialect
 * @param table the table's name (a schema-qualified one only for `sql`)
 * @param now the time (epoch ms): the TypeORM migration's and the Prisma migration folder's timestamp
 */
export function inboxMigration(format: InboxFormat, dialect: InboxDialect, table: string, now: number): string {
  const ddl = inboxDdl(dialect, table);
  if (format === 'sql') return ddl;
  if (table.includes('.'))
    throw new TypeError(
      `--format ${format} takes a table without a schema (set the schema in the ORM), not ${JSON.stringify(table)}`,
    );
  switch (format) {
    case 'typeorm':
      return typeormMigration(ddl, table, now);
    case 'prisma':
      return prismaModel(dialect, table, ddl, now);
    case 'drizzle':
      return drizzleTable(dialect, table);
    default:
      return unknownFormat(format);
  }
}

/**
 * An import statement of the printed code. Written from parts so that this file's own source
 * imports nothing the plugin does not depend on, as the dependency check reads it.
 */
function importLine(names: string, module: string): string {
  return `import ${names} ${'from'} '${module}';`;
}

function typeormMigration(ddl: string, table: string, now: number): string {
  const name = `${pascal(table)}${now}`;
  const create = ddl.replace(/;\n$/, '');
  return `${importLine('type { MigrationInterface, QueryRunner }', 'typeorm')}

/**
 * The payments inbox (nestjs-payments, docs/exactly-once.md): the table where the plugin notes, in
 * your handlers' transaction, that a payment's handlers ran.
 */
export class ${name} implements MigrationInterface {
  name = '${name}';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`${create}\`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`DROP TABLE IF EXISTS ${table}\`);
  }
}
`;
}

function prismaModel(dialect: InboxDialect, table: string, ddl: string, now: number): string {
  const fields = INBOX_COLUMNS.map((column) => {
    const attributes = [
      ...(column.primary ? ['@id'] : []),
      ...(camel(column.name) === column.name ? [] : [`@map("${column.name}")`]),
      ...prismaNativeType(column, dialect),
    ];
    // SQLite keeps the time as ISO 8601 text (inboxColumnType): a String to Prisma.
    const text = column.kind === 'string' || dialect === 'sqlite';
    const type = `${text ? 'String' : 'DateTime'}${column.nullable ? '?' : ''}`;
    return [camel(column.name), type, attributes.join(' ')];
  });
  const widths = [0, 1].map((i) => Math.max(...fields.map((field) => field[i].length)));
  const lines = fields.map(([name, type, attributes]) =>
    `  ${name.padEnd(widths[0])} ${type.padEnd(widths[1])} ${attributes}`.trimEnd(),
  );
  const stamp = new Date(now).toISOString().replace(/\D/g, '').slice(0, 14);
  return `// schema.prisma: the payments inbox (nestjs-payments, docs/exactly-once.md), the table where the
// plugin notes, in your handlers' transaction, that a payment's handlers ran. The model keeps
// \`prisma migrate\` from dropping it; the plugin writes it with SQL.
model ${pascal(table)} {
${lines.join('\n')}

  @@map("${table}")
}

// prisma/migrations/${stamp}_${table}/migration.sql (or \`prisma migrate dev --create-only\`)
${ddl}`;
}

// PostgreSQL's `text` is Prisma's String by default; the other types are said.
function prismaNativeType(column: InboxColumn, dialect: InboxDialect): string[] {
  if (dialect === 'postgres') return column.kind === 'string' ? [] : ['@db.Timestamptz(6)'];
  if (dialect === 'sqlite') return [];
  return column.kind === 'string' ? [`@db.VarChar(${column.length ?? 191})`] : ['@db.DateTime(3)'];
}

function drizzleTable(dialect: InboxDialect, table: string): string {
  const columns = INBOX_COLUMNS.map((column) => {
    const [builder, call] = drizzleColumn(column, dialect);
    const chain = `${column.primary ? '.primaryKey()' : ''}${column.nullable || column.primary ? '' : '.notNull()'}`;
    return { builder, line: `  ${camel(column.name)}: ${call}${chain},` };
  });
  const { tableBuilder, core } = DRIZZLE_CORES[dialect];
  const builders = [...new Set([tableBuilder, ...columns.map((c) => c.builder)])].sort();
  return `${importLine(`{ ${builders.join(', ')} }`, core)}

/**
 * The payments inbox (nestjs-payments, docs/exactly-once.md): the table where the plugin notes, in
 * your handlers' transaction, that a payment's handlers ran. Add it to your schema for drizzle-kit.
 */
export const ${camel(table)} = ${tableBuilder}('${table}', {
${columns.map((c) => c.line).join('\n')}
});
`;
}

/** Each dialect's Drizzle table builder and the module it comes from. */
const DRIZZLE_CORES: Readonly<Record<InboxDialect, { tableBuilder: string; core: string }>> = {
  postgres: { tableBuilder: 'pgTable', core: 'drizzle-orm/pg-core' },
  mysql: { tableBuilder: 'mysqlTable', core: 'drizzle-orm/mysql-core' },
  sqlite: { tableBuilder: 'sqliteTable', core: 'drizzle-orm/sqlite-core' },
};

// The column's Drizzle builder, and its call: the same SQL type as inboxColumnType's.
function drizzleColumn(column: InboxColumn, dialect: InboxDialect): [string, string] {
  const type = inboxColumnType(column, dialect);
  if (dialect === 'sqlite') return ['text', `text('${column.name}')`];
  if (dialect === 'postgres')
    return column.kind === 'string'
      ? ['text', `text('${column.name}')`]
      : ['timestamp', `timestamp('${column.name}', { withTimezone: true, mode: 'date' })`];
  return column.kind === 'string'
    ? ['varchar', `varchar('${column.name}', { length: ${/\d+/.exec(type)![0]} })`]
    : ['datetime', `datetime('${column.name}', { fsp: 3 })`];
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
}

function pascal(name: string): string {
  const word = camel(name);
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function unknownFormat(format: never): never {
  throw new TypeError(`--format must be ${INBOX_FORMATS.join(', ')}, not ${JSON.stringify(format)}`);
}
