import type { PaymentConfirmedEvent } from 'nestjs-payments';
import type { InboxDialect, PaymentsInbox } from 'nestjs-payments/store';
import type { HostHandle } from './host-handle.js';

// The inbox recipes of docs/exactly-once.md (test/inbox/recipes/, word for word), each set up on
// a host database: one table for the recipes' suites (Express, Nest 12), the crash test's child
// process and the Nest 11 compatibility app (which imports the package by name, as this file
// does). Each case imports its recipe and its ORM when set up: a process loads only what it runs.

/** A recipe's confirmation handler. */
export type Recipe = (event: PaymentConfirmedEvent) => Promise<void>;

/** One recipe of the guide, on the host databases its ORM or driver speaks. */
export interface RecipeCase {
  name: string;
  file: string;
  dialects: readonly InboxDialect[];
  /** The recipe's inbox and handler on `db` (what it opens is closed with `db`). */
  setup(db: HostHandle): Promise<{ inbox: PaymentsInbox; recipe: Recipe }>;
}

/**
 * The Prisma client of the database's provider, on its driver adapter. The clients are generated
 * by scripts/prisma-recipes.mjs (the suites run it first), hence imported late.
 */
async function prismaOn(db: HostHandle) {
  const { PrismaClient: PrismaPgClient } = await import('../generated/prisma/client.js');
  if (db.dialect === 'postgres') {
    const { PrismaPg } = await import('@prisma/adapter-pg');
    return new PrismaPgClient({ adapter: new PrismaPg({ connectionString: db.url }, { schema: db.location }) });
  }
  const { PrismaMariaDb } = await import('@prisma/adapter-mariadb');
  const { PrismaClient: PrismaMysqlClient } = await import('../generated/prisma-mysql/client.js');
  const url = new URL(db.url);
  const adapter = new PrismaMariaDb({
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password) || undefined,
    database: url.pathname.slice(1),
  });
  // The recipe is typed with the PostgreSQL client; the MariaDB one has the same models.
  return new PrismaMysqlClient({ adapter }) as unknown as InstanceType<typeof PrismaPgClient>;
}

/** Every recipe of the guide. */
export const RECIPE_CASES: readonly RecipeCase[] = [
  {
    name: 'plain pg',
    file: 'inbox-pg.ts',
    dialects: ['postgres'],
    setup: async (db) => {
      const { markPaidWithPg, pgInbox } = await import('../recipes/inbox-pg.js');
      return { inbox: pgInbox(db.pgPool!), recipe: markPaidWithPg };
    },
  },
  {
    name: 'mysql2',
    file: 'inbox-mysql2.ts',
    dialects: ['mysql'],
    setup: async (db) => {
      const { markPaidWithMysql2, mysqlInbox } = await import('../recipes/inbox-mysql2.js');
      return { inbox: mysqlInbox(db.mysqlPool!), recipe: markPaidWithMysql2 };
    },
  },
  {
    name: 'TypeORM',
    file: 'inbox-typeorm.ts',
    dialects: ['postgres', 'mysql'],
    setup: async (db) => {
      const { markPaidWithTypeorm, ORDER_ENTITIES, typeormInbox } = await import('../recipes/inbox-typeorm.js');
      return { inbox: typeormInbox(await db.dataSource(ORDER_ENTITIES)), recipe: markPaidWithTypeorm };
    },
  },
  {
    name: 'Prisma',
    file: 'inbox-prisma.ts',
    dialects: ['postgres', 'mysql'],
    setup: async (db) => {
      const prisma = await prismaOn(db);
      const { markPaidWithPrisma, prismaInbox } = await import('../recipes/inbox-prisma.js');
      db.closeAtDrop(() => prisma.$disconnect());
      return { inbox: prismaInbox(prisma, db.dialect), recipe: markPaidWithPrisma };
    },
  },
  {
    name: 'Knex',
    file: 'inbox-knex.ts',
    dialects: ['postgres', 'mysql'],
    setup: async (db) => {
      const { default: knex } = await import('knex');
      const { knexInbox, markPaidWithKnex } = await import('../recipes/inbox-knex.js');
      const instance = knex({ client: db.dialect === 'postgres' ? 'pg' : 'mysql2', connection: db.url });
      db.closeAtDrop(() => instance.destroy());
      return { inbox: knexInbox(instance), recipe: markPaidWithKnex };
    },
  },
  {
    name: 'Kysely',
    file: 'inbox-kysely.ts',
    dialects: ['postgres', 'mysql'],
    setup: async (db) => {
      const { kyselyInbox, markPaidWithKysely } = await import('../recipes/inbox-kysely.js');
      const { kyselyOn } = await import('./kysely-handle.js');
      return { inbox: kyselyInbox(kyselyOn(db), db.dialect), recipe: markPaidWithKysely };
    },
  },
  {
    name: 'Drizzle (node-postgres)',
    file: 'inbox-drizzle-pg.ts',
    dialects: ['postgres'],
    setup: async (db) => {
      const { drizzlePgInbox, markPaidWithDrizzlePg } = await import('../recipes/inbox-drizzle-pg.js');
      const { drizzlePgOn } = await import('./drizzle-handles.js');
      return { inbox: drizzlePgInbox(drizzlePgOn(db)), recipe: markPaidWithDrizzlePg };
    },
  },
  {
    name: 'Drizzle (mysql2)',
    file: 'inbox-drizzle-mysql2.ts',
    dialects: ['mysql'],
    setup: async (db) => {
      const { drizzleMysqlInbox, markPaidWithDrizzleMysql } = await import('../recipes/inbox-drizzle-mysql2.js');
      const { drizzleMysqlOn } = await import('./drizzle-handles.js');
      return { inbox: drizzleMysqlInbox(drizzleMysqlOn(db)), recipe: markPaidWithDrizzleMysql };
    },
  },
  {
    name: 'MikroORM',
    file: 'inbox-mikro-orm.ts',
    dialects: ['postgres', 'mysql'],
    setup: async (db) => {
      const { markPaidWithMikroOrm, MIKRO_ORDER_ENTITIES, mikroOrmInbox } =
        await import('../recipes/inbox-mikro-orm.js');
      const orm =
        db.dialect === 'postgres'
          ? await (
              await import('@mikro-orm/postgresql')
            ).MikroORM.init({
              clientUrl: db.url,
              schema: db.location,
              driverOptions: { connection: { options: `-c search_path=${db.location}` } },
              entities: MIKRO_ORDER_ENTITIES,
            })
          : await (
              await import('@mikro-orm/mariadb')
            ).MikroORM.init({ clientUrl: db.url, entities: MIKRO_ORDER_ENTITIES });
      db.closeAtDrop(() => orm.close());
      return { inbox: mikroOrmInbox(orm.em, db.dialect), recipe: markPaidWithMikroOrm };
    },
  },
];
