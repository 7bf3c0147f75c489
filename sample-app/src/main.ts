/**
 * Starts the sample shop: `node sample-app/dist/main.js` (or `npm start` at the repository root).
 * Configuration (see sample-app/README.md): PORT, HOST, PUBLIC_URL, DATABASE_URL or DATA_DIR,
 * ADMIN_PASSWORD, SESSION_SECRET and the PAYMENTS_* variables; with no PAYMENTS_PUBLIC_KEY it
 * runs on the built-in sandbox, with its orders in PGlite under sample-app/.data/.
 */
import { Logger } from '@nestjs/common';
import { createShopApp } from './shop.bootstrap.js';

async function main(): Promise<void> {
  const logger = new Logger('Shop');
  const shop = await createShopApp();
  logger.log(`Shop listening on port ${shop.port}: open ${shop.url} (admin: ${shop.url}/admin)`);

  const stop = (signal: NodeJS.Signals) => {
    logger.log(`${signal} received, shutting down`);
    shop.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error(error instanceof Error ? error.message : String(error));
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  // The plugin's and the shop's start-up errors name the bad variable, never a secret's value.
  new Logger('Shop').error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
