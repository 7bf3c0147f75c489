// The e2e test of this Nest 12 ES-module app, run by Vitest as `nest new` 12 sets it up.
// The scenario is test/payments.scenario.ts (test/compat/shared/e2e/, copied here by run.sh).
import { createRequire } from 'node:module';
import { PaymentsModule, PaymentsService } from 'nestjs-payments';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { AppModule } from './../src/app.module.js';
import { Orders } from './../src/orders.service.js';
import { runPaymentsScenario } from './payments.scenario.js';

const require = createRequire(import.meta.url);

describe('Payments (e2e)', () => {
  it('takes a payment on the sandbox, runs @OnPaymentConfirmed, refunds it', async () => {
    // One copy of the package: a CommonJS dependency of the app that require()s it gets the very
    // classes this ES module imported (Nest's injection tokens), for every entry point.
    expect(require('nestjs-payments').PaymentsService).toBe(PaymentsService);
    expect(require('nestjs-payments').PaymentsModule).toBe(PaymentsModule);
    expect(require('nestjs-payments/testing').PaymentsSandbox).toBe(PaymentsSandbox);
    const nest = require('@nestjs/core/package.json').version as string;
    expect(nest).toMatch(/^12\./);
    const vitest = require('vitest/package.json').version as string;
    await runPaymentsScenario({
      app: AppModule,
      orders: Orders,
      runner: `vitest ${vitest} (esm), @nestjs/core ${nest}, import and require give one copy`,
    });
  }, 30_000);
});
