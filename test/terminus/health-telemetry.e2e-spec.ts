/**
 * The health indicator's service probe in traces and metrics: a `payments listBindings` call like
 * any other, but marked `payments.probe=true`, so that its expected `INVALID_CLIENT_ID` can be
 * left out of alerts on call errors. A listBindings of the app itself carries no mark.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Controller, Get, Inject, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { loadTelemetryApi } from '../../lib/core/telemetry/telemetry.loader.js';
import { METRIC_NAMES } from '../../lib/core/telemetry/telemetry.names.js';
import { PaymentsModule, type PaymentsClient } from '../../lib/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import { PaymentsHealthIndicator } from '../../lib/terminus/index.js';
import { FakeService, PATHS } from '../support/fake-service.js';
import { startNestApp, type RunningApp } from '../support/nest-app.js';
import { startSdk, type TestSdk } from '../telemetry/otel-sdk.js';

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(PaymentsHealthIndicator) private readonly payments: PaymentsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.payments.isHealthy('payments', { checkService: true })]);
  }
}

let sdk: TestSdk;
let fake: FakeService;
let running: RunningApp;

beforeAll(async () => {
  expect(await loadTelemetryApi()).toBe(true);
  sdk = startSdk();
  fake = await FakeService.start();
  @Module({
    imports: [
      TerminusModule,
      PaymentsModule.forRoot({
        publicKey: 'pk_probe',
        privateKey: 'sk_probe_private',
        baseUrl: fake.url,
        reconciliation: { enabled: false },
      }),
    ],
    providers: [PaymentsHealthIndicator],
    controllers: [HealthController],
  })
  class ProbeAppModule {}
  running = await startNestApp('express', { imports: [ProbeAppModule] });
});

afterAll(async () => {
  await running?.close();
  await fake.close();
  await sdk.shutdown();
});

it('marks the probe call (span and metric) and nothing else', async () => {
  fake.always(PATHS.bindings, { status: 400, body: { result: { status: 400, message: 'Invalid client_id' } } });
  expect((await fetch(`${running.url}/health`)).status).toBe(200);
  await expect(
    running.app.get<PaymentsClient>(getPaymentsClientToken()).listBindings('customer-1'),
  ).rejects.toMatchObject({ code: 'INVALID_CLIENT_ID' });

  const calls = sdk.finished().filter((s) => s.name === 'payments listBindings');
  expect(calls.map((s) => [s.attributes['payments.probe'], s.attributes['error.type']])).toEqual([
    [true, 'INVALID_CLIENT_ID'],
    [undefined, 'INVALID_CLIENT_ID'],
  ]);
  const points = (await sdk.points()).filter(
    (p) => p.name === METRIC_NAMES.clientDuration && p.attributes['payments.operation'] === 'listBindings',
  );
  expect(points.map((p) => [p.attributes['payments.probe'], p.attributes['error.type'], p.value])).toEqual(
    expect.arrayContaining([
      [true, 'INVALID_CLIENT_ID', 1],
      [undefined, 'INVALID_CLIENT_ID', 1],
    ]),
  );
  expect(points).toHaveLength(2);
});
