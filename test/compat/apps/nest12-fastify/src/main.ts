// Compatibility app: Nest 12 on the Fastify adapter, built with `moduleResolution: bundler`. Runs
// the scenario of nest-scenario.ts (test/compat/shared/, copied into src/ by run.sh): generates a
// payment on a PaymentsSandbox, has the sandbox deliver the signed confirmation webhook to this
// app, then refunds it. Prints `nest12-fastify: ok (...)` and exits 0, or prints why and exits 1.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import type http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { assertOwnInstall, runNestScenario } from './nest-scenario.js';

const require = createRequire(import.meta.url);

runNestScenario<NestFastifyApplication>({
  name: 'nest12-fastify',
  amount: '4750',
  developerTrackingId: 'order-fastify',
  // PaymentsModule.forRootAsync({ useFactory }); an awaited confirmation handler (20 ms).
  shop: { forRootAsync: true, confirmDelayMs: 20 },
  check() {
    assert.equal(typeof module, 'undefined', 'not running as an ES module');
    assertOwnInstall(path.join(path.dirname(fileURLToPath(import.meta.url)), '..'), (id) =>
      fileURLToPath(import.meta.resolve(id)),
    );
    // No Express here: the plugin's Nest layer must not need it on the Fastify adapter.
    assert.throws(
      () => require.resolve('express'),
      `express is installed, so this app would not prove the Fastify path needs none`,
    );
    const nest = require('@nestjs/core/package.json').version as string;
    assert.match(nest, /^12\./, `expected @nestjs/core 12, got ${nest}`);
    const fastify = require('fastify/package.json').version as string;
    return `@nestjs/core ${nest}, fastify ${fastify}, fastify adapter, esm (import), bundler resolution`;
  },
  // Fastify serves on the app's own server (already listening) through `serverFactory`.
  create: (module, server, options) =>
    NestFactory.create<NestFastifyApplication>(
      module,
      new FastifyAdapter({
        serverFactory: (handler: http.RequestListener) => {
          server.on('request', handler);
          return server;
        },
      }),
      options,
    ),
  serve: async (app) => {
    await app.getHttpAdapter().getInstance().ready();
  },
});
