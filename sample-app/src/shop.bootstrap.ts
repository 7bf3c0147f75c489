import 'reflect-metadata';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { AppModule } from './app.module.js';
import { configModuleOptions, parsePort, type ShopEnv } from './config/config.options.js';
import { SHOP_SANDBOX } from './config/sandbox.provider.js';
import { SHOP_SETTINGS, type ShopSettings } from './config/shop.settings.js';
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
}

/** A running shop. */
export interface ShopApp {
  /** The Nest application. */
  readonly app: NestExpressApplication;
  /** The shop's base URL as configured (`PUBLIC_URL`, default `http://localhost:<port>`). */
  readonly url: string;
  /** The port the shop listens on. */
  readonly port: number;
  /** The built-in sandbox, in sandbox mode (no `PAYMENTS_PUBLIC_KEY`). */
  readonly sandbox?: PaymentsSandbox;
  /** Stops the shop: in-flight webhooks finish, then the sandbox and the server close. Idempotent. */
  close(): Promise<void>;
}

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
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
  // gets the requests once the app is ready.
  const server = http.createServer();
  await listen(server, options.port ?? parsePort('PORT', vars.PORT) ?? 3000);
  const port = (server.address() as AddressInfo).port;

  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, { port, sandboxPort: options.sandboxPort }), new ExpressAdapter(), {
      logger: options.logger,
      // Throw start-up errors to the caller (main prints them; tests see them) instead of aborting.
      abortOnError: false,
    });
    app.use(securityHeaders);
    await app.init();
  } catch (error) {
    await closeServer(server);
    throw error;
  }
  server.on('request', app.getHttpAdapter().getInstance());

  const settings = app.get<ShopSettings>(SHOP_SETTINGS);
  const sandbox = app.get<PaymentsSandbox | null>(SHOP_SANDBOX) ?? undefined;
  let closing: Promise<void> | undefined;
  return {
    app,
    url: settings.publicUrl,
    port,
    sandbox,
    close() {
      closing ??= (async () => {
        // Order matters: stop taking connections, let the app drain webhooks in flight and close
        // the sandbox (its shutdown hook), then drop the sockets still open (idle keep-alives).
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await app.close();
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
