import { CLI_STORE_ENV, QUIET_LOGGER, storeClientMissing, storeSources } from './cli.config.js';
import { printable, type CliIo } from './cli.io.js';
import { CHECK_TIMEOUT_MS, fail, ok, skip, withTimeout, type DoctorCheck } from './cli.report.js';

/** The `store` check: each store the variables name answers (and has its tables). */
export async function checkStores(env: CliIo['env']): Promise<DoctorCheck[]> {
  const sources = storeSources(env, QUIET_LOGGER);
  if (sources.length === 0)
    return [
      skip(
        'store',
        `no ${CLI_STORE_ENV.redisUrl} or ${CLI_STORE_ENV.databaseUrl}: the app's store is not checked (the memory store needs no check)`,
      ),
    ];
  const checks: DoctorCheck[] = [];
  for (const source of sources) {
    let store;
    try {
      store = await source.open();
      const pending = await withTimeout(store.countPending(), CHECK_TIMEOUT_MS, `${source.kind}`);
      checks.push(
        ok('store', `${source.kind} at ${source.where} answers (${pending} payment(s) waiting for reconciliation)`),
      );
    } catch (error) {
      const missing = storeClientMissing(source, error);
      if (missing) {
        checks.push(
          fail(
            'store',
            `${source.kind} not checked: ${missing.packageName} is not installed (${source.variable} names a ${source.kind} store)`,
            `npm install ${missing.packageName}`,
          ),
        );
        continue;
      }
      const reason = printable(error instanceof Error ? error.message : error).slice(0, 200);
      const missingTables = source.kind === 'PostgreSQL' && /relation .* does not exist/i.test(reason);
      checks.push(
        fail(
          'store',
          `${source.kind} at ${source.where} does not answer (${reason})`,
          missingTables
            ? "the store's tables are missing: start the app once (the store creates them) or apply paymentsStoreMigration()"
            : `check that ${source.kind} runs and that ${source.variable} names the server the app uses (host, port, credentials)`,
        ),
      );
    } finally {
      await store?.close?.().catch(() => undefined);
    }
  }
  return checks;
}
