// Compatibility app: Nest 11 in a CommonJS project, Express adapter. Runs the scenario of
// nest-scenario.ts (test/compat/shared/, copied into src/ by run.sh): generates a payment on a
// PaymentsSandbox, has the sandbox deliver the signed confirmation webhook to this app, then
// refunds it. Prints `nest11-cjs: ok (...)` and exits 0, or prints why and exits 1.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import path from 'node:path';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { PaymentsModule, PaymentsService } from 'nestjs-payments';
import { assertOwnInstall, runNestScenario } from './nest-scenario.js';

runNestScenario({
  name: 'nest11-cjs',
  amount: '12500',
  developerTrackingId: 'order-11',
  shop: {}, // PaymentsModule.forRoot(options), a synchronous confirmation handler
  async check() {
    // This file really is CommonJS, and the package came in through require().
    assert.equal(typeof module, 'object', 'not running as CommonJS');
    assert.equal(typeof require, 'function', 'no require() here');
    assertOwnInstall(path.join(__dirname, '..'), (id) => require.resolve(id));
    assert.equal(require('nestjs-payments').PaymentsModule, PaymentsModule, 'require() gave another PaymentsModule');
    const nest = require('@nestjs/core/package.json').version as string;
    assert.match(nest, /^11\./, `expected @nestjs/core 11, got ${nest}`);
    // import() of the same package from CommonJS gives the very same module (no dual-package copy).
    const viaImport = await import('nestjs-payments');
    assert.equal(
      viaImport.PaymentsService,
      PaymentsService,
      'import() and require() gave different copies of the package',
    );
    return `@nestjs/core ${nest}, express adapter, commonjs (require)`;
  },
  create: (module, _server, options) => NestFactory.create(module, new ExpressAdapter(), options),
  serve: (app, server) => {
    server.on('request', app.getHttpAdapter().getInstance());
  },
});
