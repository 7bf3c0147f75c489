// The health answer for a store that is down names an error code, never a class name: real Redis
// and PostgreSQL stores pointed at closed ports, and a Redis that wants a password.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { Controller, Get, Inject, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { PaymentsModule } from '../../lib/index.js';
import type { PaymentsStore } from '../../lib/store/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsHealthIndicator } from '../../lib/terminus/index.js';
import { healthReasonOf } from '../../lib/terminus/payments.health.js';
import { canConnect } from '../support/services.js';
import { startNestApp } from '../support/nest-app.js';

const CLOSED_REDIS = 58041; // nothing listens there
const CLOSED_POSTGRES = 58042;
const PASSWORD_REDIS = 58043; // a redis-server of this suite's own, with requirepass

describe('healthReasonOf', () => {
  const named = (name: string, message: string, extra: object = {}) =>
    Object.assign(new Error(message), { name }, extra);
  it.each<[string, unknown, string]>([
    [
      'a socket code',
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:6379'), { code: 'ECONNREFUSED' }),
      'ECONNREFUSED',
    ],
    ['a SQLSTATE', Object.assign(new Error('database "x" does not exist'), { code: '3D000' }), '3D000'],
    [
      'the code of the cause',
      new Error('store failed', { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) }),
      'ETIMEDOUT',
    ],
    [
      'the first of an AggregateError',
      new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })], 'all failed'),
      'ECONNREFUSED',
    ],
    ['a Redis error reply', named('ReplyError', 'NOAUTH Authentication required.'), 'NOAUTH'],
    ['a time-out', new Error('RedisPaymentsStore: ping timed out after 2000 ms (is Redis reachable?)'), 'TIMEOUT'],
    [
      "ioredis's give-up",
      named('MaxRetriesPerRequestError', 'Reached the max retries per request limit (which is 1).'),
      'CONNECTION_FAILED',
    ],
    ['a plain Error', new Error('something at host db.internal, user admin'), 'UNKNOWN_ERROR'],
    ['a TypeError', new TypeError('x is not a function'), 'UNKNOWN_ERROR'],
    ['not an error', 'down', 'UNKNOWN_ERROR'],
    ['a lower-case code', Object.assign(new Error('x'), { code: 'econnrefused: 10.0.0.7' }), 'UNKNOWN_ERROR'],
  ])('%s', (_case, error, reason) => {
    expect(healthReasonOf(error)).toBe(reason);
  });
});

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(PaymentsHealthIndicator) private readonly payments: PaymentsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.payments.isHealthy('payments')]);
  }
}

async function healthWith(store: PaymentsStore): Promise<Record<string, unknown>> {
  @Module({
    imports: [
      TerminusModule,
      PaymentsModule.forRoot({
        publicKey: 'pk',
        privateKey: 'sk',
        baseUrl: 'http://127.0.0.1:9',
        store,
        reconciliation: { enabled: false },
      }),
    ],
    providers: [PaymentsHealthIndicator],
    controllers: [HealthController],
  })
  class HealthAppModule {}
  const running = await startNestApp('express', { imports: [HealthAppModule] });
  try {
    const answer = await fetch(`${running.url}/health`);
    expect(answer.status).toBe(503);
    return ((await answer.json()) as { error: Record<string, Record<string, unknown>> }).error.payments;
  } finally {
    await running.close();
  }
}

describe('the health answer of a real store that is down', () => {
  let redis: ChildProcess | undefined;
  beforeAll(async () => {
    redis = spawn(
      'redis-server',
      [
        '--port',
        String(PASSWORD_REDIS),
        '--bind',
        '127.0.0.1',
        '--requirepass',
        'hunter2-password',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      {
        stdio: 'ignore',
      },
    );
    redis.on('error', () => (redis = undefined));
    for (let i = 0; i < 50 && !(await canConnect('127.0.0.1', PASSWORD_REDIS, 200)); i++)
      await new Promise((r) => setTimeout(r, 100));
  });
  afterAll(() => {
    redis?.kill('SIGTERM');
  });

  it('Redis refusing connections: ECONNREFUSED', async () => {
    const store = new RedisPaymentsStore(`redis://127.0.0.1:${CLOSED_REDIS}`, {
      logger: { log() {}, warn() {}, error() {} },
    });
    expect(await healthWith(store)).toEqual({ status: 'down', store: 'down', reason: 'ECONNREFUSED' });
  });

  it('PostgreSQL refusing connections: ECONNREFUSED', async () => {
    const store = new PostgresPaymentsStore(`postgres://postgres@127.0.0.1:${CLOSED_POSTGRES}/test`, {
      logger: { log() {}, warn() {}, error() {} },
    });
    expect(await healthWith(store)).toEqual({ status: 'down', store: 'down', reason: 'ECONNREFUSED' });
  });

  it('Redis wanting a password: NOAUTH, and no password in the answer', async () => {
    if (!redis && !process.env.CI) return void process.stderr.write('skipped: no redis-server to start\n');
    const store = new RedisPaymentsStore(`redis://127.0.0.1:${PASSWORD_REDIS}`, {
      logger: { log() {}, warn() {}, error() {} },
    });
    const health = await healthWith(store);
    expect(health).toEqual({ status: 'down', store: 'down', reason: 'NOAUTH' });
  });
});
