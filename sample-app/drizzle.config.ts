/**
 * drizzle-kit's configuration for the sample shop. From the repository root:
 *
 *   npx drizzle-kit generate --config sample-app/drizzle.config.ts
 *
 * writes a new SQL migration to sample-app/drizzle/ after a change to src/db/schema.ts. The shop
 * applies the migrations itself at start-up (drizzle's migrator), on PGlite or on PostgreSQL.
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './sample-app/src/db/schema.ts',
  out: './sample-app/drizzle',
});
