import 'reflect-metadata';
import { Logger, type LoggerService, type LogLevel } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import cookieParser from 'cookie-parser';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { AppModule } from './app.module.js';
import { configModuleOptions, parsePort, type ShopEnv } from './config/config.options.js';
import { SHOP_SANDBOX } from './config/sandbox.provider.js';
import { SHOP_SETTINGS, type ShopSettings } from './config/shop.settings.js';
import { ShopDatabase } from './db/database.js';
import { adminSessionMiddleware } from './security/shop-security.js';
import { StartupReconciliation, type StartupReconciliationReport } from './orders/startup-reconciliation.js';
import { NotFoundPageFilter } from './views/not-found.filter.js';
import { securityHeaders } from './views/security-headers.middleware.js';

/** Options of {@link createShopApp}; all optional. */
export interface ShopAppOptions {
  /** Port to listen on; 0 picks a free one. Default: `PORT`, else 3000. */
  port?: number;
  /** Port of the built-in sandbox (sandbox mode only); 0 picks a free one. Default: `SANDBOX_PORT`, else 0. */
  sandboxPort?: number;
  /**
   * Configuration variables to use instead of `process.env` and `.env` (tests give their own,
   * so the developer's shell cannot leak in). Default: the environment.
   */
  env?: ShopEnv;
  /** Nest's `logger` option. Default: Nest's console logger. */
  logger?: LoggerService | LogLevel[] | false;
  /**
   * Awaited once the socket is bound and before the app is built, while every request is
   * answered 503 (tests send requests here to see that start-up answer). Default: none.
   */
  whileStarting?: (server: http.Server) => Promise<void>;
}

/** A running shop. */
export interface ShopApp {
  /** The Nest application. */
  readonly app: NestExpressApplication;
  /** The shop's base URL as configured (`PUBLIC_URL`, default `http://localhost:<port>`). */
  readonly url: string;
  /** The port the shop listens on. */
  readonly port: number;
  /** The listening HTTP server (bound to 127.0.0.1 in sandbox mode unless `HOST` says otherwise). */
  readonly server: http.Server;
  /** The built-in sandbox, in sandbox mode (no `PAYMENTS_PUBLIC_KEY`). */
  readonly sandbox?: PaymentsSandbox;
  /** The database of the orders and of the plugin's store. */
  readonly database: ShopDatabase;
  /** The admin password (`ADMIN_PASSWORD`, or the one generated for this sandbox run). */
  readonly adminPassword: string;
  /** The start-up pass over the pending orders, started once the shop listens. */
  readonly startupReconciliation: Promise<StartupReconciliationReport>;
  /** Stops the shop: in-flight webhooks finish, then the sandbox and the server close. Idempotent. */
  close(): Promise<void>;
}

/** Seconds a client is told to wait (`Retry-After`) while the shop is starting. */
const STARTING_RETRY_AFTER_SECS = 1;

function listen(server: http.Server, port: number, host: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Keep-alive sockets (a browser's) would otherwise hold the close until they time out.
    server.closeAllConnections();
  });
}

/**
 * Builds and starts the shop, listening on `port`: what `main.ts` runs, and what tests boot
 * in-process with `createShopApp({ port: 0, sandboxPort: 0 })`.
 *
 * @throws Error naming the variable or option when the configuration is invalid
 */
export async function createShopApp(options: ShopAppOptions = {}): Promise<ShopApp> {
  // Loads .env into process.env (unless `env` is given) before PORT is read below.
  const config = ConfigModule.forRoot(configModuleOptions(options.env));
  await config;
  const vars = options.env ?? process.env;

  // The socket is bound before the app is built: the webhook URL given to the payments plugin
  // contains the shop's real port, and with port 0 that port exists only once bound. Express
  // gets the requests once the app is ready; until then they are answered 503.
  //
  // In sandbox mode the shop listens on 127.0.0.1 only (its admin password is printed in the
  // log): HOST=0.0.0.0 opens it to the network. With real keys, HOST or every interface.
  const port0 = options.port ?? parsePort('PORT', vars.PORT) ?? 3000;
  const sandboxMode = !vars.PAYMENTS_PUBLIC_KEY;
  const host = vars.HOST || (sandboxMode ? '127.0.0.1' : undefined);

  // Orders and the plugin's store: PGlite in DATA_DIR (default sample-app/.data), or the
  // PostgreSQL server at DATABASE_URL. Migrations are applied here, before anything is served.
  const database = await ShopDatabase.open({
    databaseUrl: vars.DATABASE_URL || undefined,
    dataDir: vars.DATA_DIR || undefined,
  });

  // Until the app is initialised, a request (a webhook retried by the service, a browser) gets
  // 503 with Retry-After at once instead of waiting on a socket nobody answers.
  const starting: http.RequestListener = (_req, res) => {
    res.writeHead(503, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Retry-After': String(STARTING_RETRY_AFTER_SECS),
      Connection: 'close',
    });
    res.end('The shop is starting; try again in a moment.\n');
  };
  const server = http.createServer(starting);
  let app: NestExpressApplication;
  try {
    await listen(server, port0, host);
    await options.whileStarting?.(server);
    const port = (server.address() as AddressInfo).port;
    app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, { port, sandboxPort: options.sandboxPort }, database),
      new ExpressAdapter(),
      {
        logger: options.logger,
        // Throw start-up errors to the caller (main prints them; tests see them) instead of aborting.
        abortOnError: false,
      },
    );
    const early = app.get<ShopSettings>(SHOP_SETTINGS);
    app.use(securityHeaders);
    // Parses the CSRF cookie and the signed customer cookie.
    app.use(cookieParser(early.sessionSecret));
    // The admin's server-side sessions, in the shop's database.
    app.use('/admin', adminSessionMiddleware(early, database.db));
    app.useGlobalFilters(
      new NotFoundPageFilter(
        { sandboxMode: early.sandboxMode },
        `/${(vars.PAYMENTS_WEBHOOK_PATH || 'payments/webhook').replace(/^\/+|\/+$/g, '')}`,
      ),
    );
    await app.init();
  } catch (error) {
    if (server.listening) await closeServer(server);
    await database.close();
    throw error;
  }
  // One synchronous swap: no request can fall between the two handlers.
  server.off('request', starting);
  server.on('request', app.getHttpAdapter().getInstance() as http.RequestListener);
  const port = (server.address() as AddressInfo).port;

  const settings = app.get<ShopSettings>(SHOP_SETTINGS);
  const sandbox = app.get<PaymentsSandbox | null>(SHOP_SANDBOX) ?? undefined;
  if (settings.adminPasswordGenerated) {
    new Logger('Shop').log(`Admin password for this run (set ADMIN_PASSWORD to choose one): ${settings.adminPassword}`);
  }
  // Webhooks can arrive meanwhile: the plugin's claims make whichever comes first do the work.
  const startupReconciliation = app.get(StartupReconciliation).run();
  let closing: Promise<void> | undefined;
  return {
    app,
    url: settings.publicUrl,
    port,
    server,
    sandbox,
    database,
    adminPassword: settings.adminPassword,
    startupReconciliation,
    close() {
      closing ??= (async () => {
        // Order matters: stop taking connections, let the app drain webhooks in flight and close
        // the sandbox (its shutdown hook), then drop the sockets still open (idle keep-alives).
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await startupReconciliation;
        await app.close();
        server.closeAllConnections();
        await closed;
        // Last: the plugin's store and the orders use it until the app has closed.
        await database.close();
      })();
      return closing;
    },
  };
}
