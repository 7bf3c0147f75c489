// The e2e test of this Nest 11 CommonJS app, run by Jest (ts-jest) as `nest new` 11 sets it up.
// The scenario is test/payments.scenario.ts (test/compat/shared/e2e/, copied here by run.sh).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Test } from '@nestjs/testing';
import { PaymentsSandbox } from 'nestjs-payments/testing';
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

  it('answers /health through PaymentsHealthIndicator in a Terminus 11 app: store and service up', async () => {
    const terminus = require('@nestjs/terminus/package.json').version as string;
    expect(terminus).toMatch(/^11\./);
    const sandbox = await PaymentsSandbox.start({ port: 0 });
    const { publicKey, privateKey } = sandbox.options();
    Object.assign(process.env, {
      PAYMENTS_PUBLIC_KEY: publicKey,
      PAYMENTS_PRIVATE_KEY: privateKey,
      PAYMENTS_BASE_URL: sandbox.url,
      PAYMENTS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:9/payments/webhook',
      PAYMENTS_WEBHOOK_SECRET: 'compat-health-webhook-secret-7d1e0c9b5a3f',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    try {
      await app.listen(0, '127.0.0.1');
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
      const response = await fetch(`${url}/health`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        status: 'ok',
        info: { payments: { status: 'up', store: 'up', service: 'up' } },
      });
      // The service check is one bindings read (no verify_payment), cached: a second poll sends nothing.
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect(sandbox.requests.map((r) => r.path)).toEqual(['/api/v2/bindings/list']);
    } finally {
      await app.close();
      await sandbox.close();
    }
    writeFileSync(
      path.join(process.cwd(), '.compat-health.json'),
      JSON.stringify({ details: `@nestjs/terminus ${terminus}` }),
    );
  }, 30_000);
});
