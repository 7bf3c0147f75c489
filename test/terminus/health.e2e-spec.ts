/**
 * `nestjs-payments/terminus` in a Terminus app (Nest 12, @nestjs/terminus 12): the store check,
 * the service check (one cheap bindings read, cached: polling the endpoint does not reach the
 * service each time, and never calls verify_payment), refused keys, an unreachable store, an
 * unknown registration, and no secret or error text in the answers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Inject, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import { PaymentsModule } from '../../lib/nest/payments.module.js';
import { HEALTH_PROBE_CLIENT_ID, PaymentsHealthIndicator } from '../../lib/terminus/index.js';
import { FakeService, PATHS } from '../support/fake-service.js';
import { startNestApp, type RunningApp } from '../support/nest-app.js';

const PRIVATE_KEY = 'sk_health_private_0123456789';

class UnreachableStore extends MemoryPaymentsStore {
  down = false;
  override async ping(): Promise<void> {
    if (this.down)
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:6379 (user admin, password hunter2)'), {
        code: 'ECONNREFUSED',
      });
  }
}

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(PaymentsHealthIndicator) private readonly payments: PaymentsHealthIndicator,
  ) {}

  @Get('store')
  @HealthCheck()
  store() {
    return this.health.check([() => this.payments.isHealthy('payments')]);
  }

  @Get('service')
  @HealthCheck()
  service() {
    return this.health.check([() => this.payments.isHealthy('payments', { checkService: true })]);
  }

  @Get('second')
  @HealthCheck()
  second() {
    return this.health.check([
      () => this.payments.isHealthy('second', { registration: 'second', checkService: true, serviceCacheSecs: 1 }),
    ]);
  }

  @Get('missing')
  @HealthCheck()
  missing() {
    return this.health.check([() => this.payments.isHealthy('missing', { registration: 'nope' })]);
  }
}

describe('PaymentsHealthIndicator in a Terminus app', () => {
  let fake: FakeService;
  let second: FakeService;
  let running: RunningApp;
  const store = new UnreachableStore();

  const get = async (path: string) => {
    const response = await fetch(`${running.url}${path}`);
    return { status: response.status, text: await response.text() };
  };
  type Health = { info: Record<string, Record<string, unknown>>; error: Record<string, Record<string, unknown>> };
  const json = (text: string) => JSON.parse(text) as Health;
  const probes = (f: FakeService) => f.requests.filter((r) => r.path === PATHS.bindings);

  beforeAll(async () => {
    fake = await FakeService.start();
    second = await FakeService.start();
    const base = { publicKey: 'pk_health', privateKey: PRIVATE_KEY, reconciliation: { enabled: false } };
    @Module({
      imports: [
        TerminusModule,
        PaymentsModule.forRoot({ ...base, baseUrl: fake.url, store }),
        PaymentsModule.forRoot({ ...base, baseUrl: second.url, name: 'second', maxRetries: 0 }),
      ],
      providers: [PaymentsHealthIndicator],
      controllers: [HealthController],
    })
    class HealthAppModule {}
    running = await startNestApp('express', { imports: [HealthAppModule] });
  });
  beforeEach(() => {
    store.down = false;
  });
  afterAll(async () => {
    await running?.close();
    await fake.close();
    await second.close();
  });

  it('store only: up, without a call to the service', async () => {
    const answer = await get('/health/store');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ status: 'ok', info: { payments: { status: 'up', store: 'up' } } });
    expect(fake.requests).toHaveLength(0);
  });

  it('service: one bindings read of a made-up customer (400 Invalid client_id = reachable), cached across polls, no verify', async () => {
    fake.always(PATHS.bindings, { status: 400, body: { result: { status: 400, message: 'Invalid client_id' } } });
    for (let i = 0; i < 5; i++) {
      const answer = await get('/health/service');
      expect(answer.status).toBe(200);
      expect(json(answer.text).info.payments).toMatchObject({
        status: 'up',
        store: 'up',
        service: 'up',
        serviceCheckedAt: expect.any(String),
      });
    }
    expect(probes(fake)).toHaveLength(1);
    expect(probes(fake)[0].query).toEqual({ client_id: HEALTH_PROBE_CLIENT_ID });
    expect(fake.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment'))).toHaveLength(0);
  });

  it('service: refused keys are down (503) with a code, and the result is cached too', async () => {
    second.always(PATHS.bindings, { status: 401, body: { result: { status: 401, message: 'Unauthorized' } } });
    const answer = await get('/health/second');
    expect(answer.status).toBe(503);
    expect(json(answer.text).error.second).toMatchObject({
      status: 'down',
      store: 'up',
      service: 'down',
      reason: 'AUTHENTICATION_FAILED',
    });
    await get('/health/second');
    expect(probes(second)).toHaveLength(1);
    // After the cache interval (1 s here) the service is asked again, and is up.
    second.always(PATHS.bindings, {
      status: 200,
      body: { result: { success: true, bindings: [] }, status: 'success' },
    });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await get('/health/second');
    expect(again.status).toBe(200);
    expect(probes(second)).toHaveLength(2);
    expect(answer.text + again.text).not.toContain(PRIVATE_KEY);
  });

  it('service: no answer at all is down', async () => {
    await second.close();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const answer = await get('/health/second');
    expect(answer.status).toBe(503);
    expect(json(answer.text).error.second).toMatchObject({ service: 'down', reason: 'CONNECTION_FAILED' });
    second = await FakeService.start(); // for afterAll
  });

  it('store unreachable: down with the error code only (no host, user or password)', async () => {
    store.down = true;
    const answer = await get('/health/store');
    expect(answer.status).toBe(503);
    expect(json(answer.text).error.payments).toEqual({ status: 'down', store: 'down', reason: 'ECONNREFUSED' });
    expect(answer.text).not.toMatch(/hunter2|10\.0\.0\.7|admin/);
  });

  it('an unknown registration is down', async () => {
    const answer = await get('/health/missing');
    expect(answer.status).toBe(503);
    expect(json(answer.text).error.missing).toMatchObject({ status: 'down', reason: 'NO_REGISTRATION' });
  });
});
