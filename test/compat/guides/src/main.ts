// The harness's entry of the guides projects (test/compat/guides): loads the pasted snippets named
// by GUIDES_STORE (`redis` or `postgres`), sets the global prefix GUIDES_GLOBAL_PREFIX if any, and
// listens on PORT. Everything else comes from `.env` through the snippets' ConfigModule.
import { NestFactory } from '@nestjs/core';
import type { Type } from '@nestjs/common';
import { AppModule } from './app.module.js';
import { exactlyOnceModule, type ExactlyOnceRecipe } from './exactly-once.module.js';

/** docs/exactly-once.md's recipe (the block exporting transactionalStore and markPaidWithSql). */
const RECIPE = './guides/exactly-once-transactionalStore.js';

/** The export `name` of the snippet of docs/<doc>.md that exports it (src/guides/<doc>-<name>.ts). */
async function snippet(doc: string, name: string): Promise<Type> {
  const specifier = `./guides/${doc}-${name}.js`;
  const loaded = (await import(specifier)) as Record<string, Type | undefined>;
  const exported = loaded[name];
  if (!exported) throw new Error(`the pasted snippet ${specifier} does not export ${name}`);
  return exported;
}

async function bootstrap(): Promise<void> {
  const store =
    process.env.GUIDES_STORE === 'exactly-once'
      ? exactlyOnceModule((await import(RECIPE)) as ExactlyOnceRecipe)
      : process.env.GUIDES_STORE === 'postgres'
        ? await snippet('stores', 'PostgresPaymentsModule')
        : await snippet('stores', 'RedisPaymentsModule');
  const app = await NestFactory.create(
    AppModule.register({
      store,
      outlet: await snippet('configuration', 'OutletModule'),
      health: await snippet('operations', 'HealthModule'),
    }),
  );
  if (process.env.GUIDES_GLOBAL_PREFIX) app.setGlobalPrefix(process.env.GUIDES_GLOBAL_PREFIX);
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}
void bootstrap();
