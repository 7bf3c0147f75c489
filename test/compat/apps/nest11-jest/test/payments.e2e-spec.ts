// The e2e test of this Nest 11 CommonJS app, run by Jest (ts-jest) as `nest new` 11 sets it up.
// The scenario is test/payments.scenario.ts (test/compat/shared/e2e/, copied here by run.sh).
import { AppModule } from './../src/app.module';
import { Orders } from './../src/orders.service';
import { runPaymentsScenario } from './payments.scenario';

describe('Payments (e2e)', () => {
  it('takes a payment on the sandbox, runs @OnPaymentConfirmed, refunds it', async () => {
    // This test really runs as CommonJS, and the package came in through require().
    expect(typeof module).toBe('object');
    const entry = require.resolve('nestjs-payments');
    expect(entry).toMatch(/[\\/]node_modules[\\/]nestjs-payments[\\/]dist[\\/]index\.cjs$/);
    const nest = require('@nestjs/core/package.json').version as string;
    expect(nest).toMatch(/^11\./);
    const jest = require('jest/package.json').version as string;
    await runPaymentsScenario({
      app: AppModule,
      orders: Orders,
      runner: `jest ${jest} (ts-jest, commonjs), @nestjs/core ${nest}, require -> ${entry.split(/[\\/]node_modules[\\/]/).pop()}`,
    });
  }, 30_000);
});
