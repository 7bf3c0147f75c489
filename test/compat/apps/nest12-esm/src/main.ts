// Compatibility app: Nest 12 in an ES-module project, Express adapter. Runs the scenario of
// nest-scenario.ts (test/compat/shared/, copied into src/ by run.sh): generates a payment on a
// PaymentsSandbox, has the sandbox deliver the signed confirmation webhook to this app, then
// refunds it. Prints `nest12-esm: ok (...)` and exits 0, or prints why and exits 1.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { PaymentsService } from 'nestjs-payments';
import { assertOwnInstall, runNestScenario } from './nest-scenario.js';

const require = createRequire(import.meta.url);

runNestScenario({
  name: 'nest12-esm',
  amount: '12500',
  developerTrackingId: 'order-12',
  shop: {}, // PaymentsModule.forRoot(options), a synchronous confirmation handler
  check() {
    // This file really is an ES module, and the package came in through import.
    assert.equal(typeof module, 'undefined', 'not running as an ES module');
    assertOwnInstall(path.join(path.dirname(fileURLToPath(import.meta.url)), '..'), (id) =>
      fileURLToPath(import.meta.resolve(id)),
    );
    // A CommonJS dependency of the app that require()s the package gets the same copy.
    assert.equal(
      require('nestjs-payments').PaymentsService,
      PaymentsService,
      'require() gave another copy of the package',
    );
    const nest = require('@nestjs/core/package.json').version as string;
    assert.match(nest, /^12\./, `expected @nestjs/core 12, got ${nest}`);
    return `@nestjs/core ${nest}, express adapter, esm (import)`;
  },
  create: (module, _server, options) => NestFactory.create(module, new ExpressAdapter(), options),
  serve: (app, server) => {
    server.on('request', app.getHttpAdapter().getInstance());
  },
});
