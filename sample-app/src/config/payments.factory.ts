import { Logger } from '@nestjs/common';
import type { ConfigService } from '@nestjs/config';
import { randomBytes } from 'node:crypto';
import { PAYMENTS_ENV, paymentsOptionsFromConfig, type PaymentsModuleOptions } from 'nestjs-payments';
import { PostgresPaymentsStore } from 'nestjs-payments/postgres';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import type { ShopDatabase } from '../db/database.js';
import { parsePositiveInteger } from './config.options.js';
import type { ShopSettings } from './shop.settings.js';

const DEFAULT_WEBHOOK_PATH = 'payments/webhook';

/**
 * Builds the plugin's options from the `PAYMENTS_*` variables, for `PaymentsModule.forRootAsync`.
 *
 * - Sandbox mode (`sandbox` given): keys and base URL are the sandbox's; the webhook secret is
 *   `PAYMENTS_WEBHOOK_SECRET` or a random one made for this run (tokens of a sandbox run need not
 *   survive a restart, the sandbox's payments do not either).
 * - Real keys: everything comes from the variables; without `PAYMENTS_WEBHOOK_SECRET` the app
 *   starts, but warns that confirmations will not arrive (orders then stay pending).
 *
 * The webhook's public URL defaults to `PUBLIC_URL` + the webhook path, so one variable moves
 * the whole shop behind a proxy.
 *
 * The plugin's store is a `PostgresPaymentsStore` on the shop's own database (the same PGlite
 * instance or pg Pool as the orders), in transactional mode: a restart loses no pending
 * confirmation, several instances on one PostgreSQL run each outcome's handlers once, and an
 * order's update commits together with the outcome's done marker (exactly once). `SHOP_RECONCILE_INTERVAL_SECS`
 * and `SHOP_OUTCOME_LEASE_MS` tune how soon an unsettled payment is re-checked and how long a
 * crashed instance's claim blocks others (the crash tests shorten both).
 */
export function createPaymentsOptions(
  config: ConfigService,
  settings: ShopSettings,
  sandbox: PaymentsSandbox | null,
  database: ShopDatabase,
): PaymentsModuleOptions {
  const logger = new Logger('Shop');
  const path = config.get<string>(PAYMENTS_ENV.webhookPath) || DEFAULT_WEBHOOK_PATH;
  const publicUrl =
    config.get<string>(PAYMENTS_ENV.webhookPublicUrl) || `${settings.publicUrl}/${path.replace(/^\/+|\/+$/g, '')}`;
  const configuredSecret = config.get<string>(PAYMENTS_ENV.webhookSecret) || undefined;
  const leaseMs = parsePositiveInteger('SHOP_OUTCOME_LEASE_MS', config.get('SHOP_OUTCOME_LEASE_MS'));
  const intervalSecs = parsePositiveInteger('SHOP_RECONCILE_INTERVAL_SECS', config.get('SHOP_RECONCILE_INTERVAL_SECS'));
  const shared: Partial<PaymentsModuleOptions> = {
    // Transactional: an outcome handler's order update commits with the plugin's done marker.
    store: new PostgresPaymentsStore(database.queryable, { transactional: true }),
    reconciliation: { enabled: true, ...(intervalSecs !== undefined && { intervalSecs }) },
  };
  const webhook = (secret: string) => ({ path, publicUrl, secret, ...(leaseMs !== undefined && { leaseMs }) });

  if (sandbox) {
    if (config.get<string>(PAYMENTS_ENV.privateKey)) {
      logger.warn(
        `${PAYMENTS_ENV.privateKey} is set but ${PAYMENTS_ENV.publicKey} is not: both are needed to use the real service`,
      );
    }
    const secret = configuredSecret ?? randomBytes(32).toString('base64url');
    return paymentsOptionsFromConfig(config, {
      publicKey: sandbox.publicKey,
      privateKey: sandbox.privateKey,
      baseUrl: sandbox.url,
      ...shared,
      webhook: webhook(secret),
    });
  }

  if (!configuredSecret) {
    logger.warn(
      `${PAYMENTS_ENV.webhookSecret} is not set: payment confirmations will not arrive and orders will stay pending ` +
        `(set it to a random string of at least 32 characters)`,
    );
    // Left to the variables: a PAYMENTS_WEBHOOK_PUBLIC_URL without a secret is then reported at start-up.
    return paymentsOptionsFromConfig(config, shared);
  }
  if (isLoopback(publicUrl)) {
    logger.warn(
      `The webhook URL ${publicUrl} is local: the payment service cannot reach it. Set PUBLIC_URL to the shop's public address.`,
    );
  }
  return paymentsOptionsFromConfig(config, { ...shared, webhook: webhook(configuredSecret) });
}

// A malformed URL is not judged here: the plugin's option validation names it at start-up.
function isLoopback(url: string): boolean {
  try {
    return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname);
  } catch {
    return false;
  }
}
