import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import type { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import pg from 'pg';
import { DAY_MS, HOUR_MS, isOverdueRecord, nextCheckAt } from '../../lib/core/settlement/reconciliation.lanes.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import type { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { createPaymentsClient } from '../../lib/express/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsHealthIndicator } from '../../lib/terminus/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { POSTGRES_URL, REDIS_URL, itWithService, postgresAvailable, redisAvailable } from '../support/services.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

// Issue 19 item 1: a 24 h outage of verify, on a compressed clock (runOnce(now) with `now` stepped
// a minute at a time), must end with the payment confirmed once the service is back, the slow
// lane's verify calls counted at the sandbox; the record and the health indicator say "overdue"
// meanwhile.

const MINUTE_MS = 60_000;
const MAX_CHECKS = 3;
const VERIFY_ALL = '/api/v2/verify_payment/*';
const RUN = `outage_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
// A day of passes, a minute apart, against a real server (about 1 500 store round trips).
jest.setTimeout(120_000);

/** The figures of one store's run, printed at the end of the suite. */
const figures: string[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  if (figures.length > 0) process.stdout.write(`\n24 h verify outage, figures:\n${figures.join('\n')}\n`);
});

function healthOf(client: PaymentsClient): PaymentsHealthIndicator {
  // The indicator finds the client through Nest's ModuleRef; here it is the one client.
  return new PaymentsHealthIndicator(new HealthIndicatorService(), { get: () => client } as unknown as ModuleRef);
}

async function outage24h(label: string, store: PaymentsStore): Promise<void> {
  const sandbox = await PaymentsSandbox.start();
  const logs: string[] = [];
  const client = createPaymentsClient({
    ...sandbox.options(),
    // One request per check: the counts below are checks (the default 2 retries would triple them).
    maxRetries: 0,
    store,
    logger: quietLogger(logs),
    reconciliation: { enabled: false, maxChecks: MAX_CHECKS, intervalSecs: 60, graceSecs: 60 },
  });
  const confirmed: string[] = [];
  client.setHandlers(
    outcomeHandlers(async (name, event) => {
      if (name === 'payment.confirmed') confirmed.push(event.verification.paymentId);
    }),
  );
  try {
    const { paymentId } = await client.generatePayment({ amount: '12500' });
    await sandbox.completePayment(paymentId);
    const verifies = () => sandbox.requests.filter((r) => r.path === `/api/v2/verify_payment/${paymentId}`).length;
    sandbox.fault(VERIFY_ALL, { status: 503, body: '<html>down for maintenance</html>' });

    let now = Date.now();
    let outageStart: number | undefined;
    let fastLaneCalls = 0;
    // The outage starts with the first check, and lasts 24 h of the compressed clock.
    while (outageStart === undefined || now < outageStart + DAY_MS) {
      await client.runReconciliation(now);
      if (outageStart === undefined && verifies() > 0) outageStart = now;
      if (outageStart !== undefined && fastLaneCalls === 0 && verifies() >= MAX_CHECKS) fastLaneCalls = verifies();
      now += MINUTE_MS;
      if (now > Date.now() + 2 * DAY_MS) throw new Error('no check within a day: the payment never became due');
    }
    const outageCalls = verifies();
    expect(confirmed).toEqual([]);
    expect(await store.findPending(paymentId)).toMatchObject({ paymentId });
    // Where operators look: the record, and the health indicator.
    const during = await client.getOutcome(paymentId);
    expect(during).toMatchObject({ outcome: 'pending', status: 'UNKNOWN', source: 'reconciliation' });
    expect(isOverdueRecord(during!)).toBe(true);
    expect(during!.lastError).toMatch(
      /^overdue: outcome unknown after \d+ checks; slow lane, next check at .+ \(last: verify failed: /,
    );
    const degraded = await healthOf(client).isHealthy('payments');
    expect(degraded).toEqual({ payments: { status: 'up', store: 'up', outcomes: 'degraded', overdue: '>0' } });

    // The service is back: the next slow-lane check (at most an hour later) confirms it.
    sandbox.fault(VERIFY_ALL, null);
    const back = now;
    while (confirmed.length === 0 && now < back + 2 * HOUR_MS) {
      await client.runReconciliation(now);
      now += MINUTE_MS;
    }
    expect(confirmed).toEqual([paymentId]);
    const delayMin = Math.round((now - MINUTE_MS - back) / MINUTE_MS);
    const recoveryCalls = verifies() - outageCalls;
    expect(await store.findPending(paymentId)).toBeUndefined();
    expect(await client.getOutcome(paymentId)).toMatchObject({
      outcome: 'confirmed',
      handlers: 'succeeded',
      attempts: 1,
    });
    expect(await healthOf(client).isHealthy('payments')).toEqual({
      payments: { status: 'up', store: 'up', outcomes: 'ok', overdue: '0' },
    });
    // Nothing more after the confirmation, and nothing given up.
    for (let i = 0; i < 3; i++) await client.runReconciliation((now += HOUR_MS));
    expect(confirmed).toEqual([paymentId]);
    expect(logs.filter((l) => /gave up/.test(l))).toEqual([]);

    const slowLaneCalls = outageCalls - fastLaneCalls;
    expect(fastLaneCalls).toBe(MAX_CHECKS);
    // Hourly while the payment is less than a day old: about 23 in the 24 h after the fast lane.
    expect(slowLaneCalls).toBeGreaterThanOrEqual(22);
    expect(slowLaneCalls).toBeLessThanOrEqual(24);
    expect(recoveryCalls).toBe(1);
    expect(delayMin).toBeLessThanOrEqual(60);
    figures.push(
      `${label}: ${outageCalls} verify calls in the 24 h of 503 (${fastLaneCalls} fast lane, ${slowLaneCalls} slow lane), ` +
        `confirmed ${delayMin} min after the service came back with ${recoveryCalls} more call(s), handler ran ${confirmed.length} time(s)`,
    );
  } finally {
    await client.close();
    await sandbox.close();
  }
}

describe('a 24 h verify outage (503), compressed clock: nothing given up, confirmed once the service is back', () => {
  it('memory store', async () => {
    await outage24h('memory', new MemoryPaymentsStore());
  }, 60_000);

  itWithService(redisUp, `Redis not reachable at ${REDIS_URL}`)('Redis store', async () => {
    const keyPrefix = `test:${RUN}:`;
    cleanups.push(async () => {
      const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await admin.connect();
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await admin.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await admin.quit();
    });
    await outage24h('redis', new RedisPaymentsStore(REDIS_URL, { keyPrefix }));
  });

  itWithService(postgresUp, `PostgreSQL not reachable at ${POSTGRES_URL}`)('PostgreSQL store', async () => {
    cleanups.push(async () => {
      const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      await admin.query(`DROP SCHEMA IF EXISTS "${RUN}" CASCADE`).finally(() => admin.end());
    });
    await outage24h('postgres', new PostgresPaymentsStore(POSTGRES_URL, { schema: RUN }));
  });
});

describe('the horizon: a payment unknown for horizonDays is given up, and its record says so', () => {
  it('memory store, horizon 1 day', async () => {
    const sandbox = await PaymentsSandbox.start();
    const logs: string[] = [];
    const store = new MemoryPaymentsStore();
    const client = createPaymentsClient({
      ...sandbox.options(),
      maxRetries: 0,
      store,
      logger: quietLogger(logs),
      reconciliation: { enabled: false, maxChecks: MAX_CHECKS, horizonDays: 1 },
    });
    client.setHandlers(outcomeHandlers(async () => undefined));
    try {
      const { paymentId } = await client.generatePayment({ amount: '500' });
      sandbox.fault(VERIFY_ALL, { status: 503 });
      let now = Date.now();
      const end = now + 2 * DAY_MS;
      while (now < end && (await store.findPending(paymentId))) await client.runReconciliation((now += 5 * MINUTE_MS));
      expect(await store.findPending(paymentId)).toBeUndefined();
      expect(logs.filter((l) => l.includes(`gave up on ${paymentId}`))).toHaveLength(1);
      const record = await client.getOutcome(paymentId);
      expect(record?.lastError).toMatch(/^abandoned: outcome unknown after \d+ checks; reconcile it by hand/);
      expect(isOverdueRecord(record!)).toBe(true);
      // Given up at the horizon, not before.
      expect(now - Date.parse(sandbox.getPayment(paymentId)!.createdAt)).toBeGreaterThanOrEqual(DAY_MS);
      expect(await healthOf(client).isHealthy('payments', { maxOverdue: 0, downWhenOverdue: true })).toEqual({
        payments: { status: 'down', store: 'up', outcomes: 'degraded', overdue: '>0', reason: 'OUTCOMES_OVERDUE' },
      });
      expect(await healthOf(client).isHealthy('payments', { maxOverdue: 1 })).toMatchObject({
        payments: { status: 'up', outcomes: 'ok', overdue: '1' },
      });
    } finally {
      await client.close();
      await sandbox.close();
    }
  }, 60_000);
});

describe('nextCheckAt: the two lanes', () => {
  const options = { intervalSecs: 60, maxChecks: 10, horizonDays: 7 };
  const born = Date.UTC(2026, 0, 1);
  const createdAt = new Date(born).toISOString();
  it.each([
    ['fast lane, first check', 0, born + 20 * MINUTE_MS, born + 21 * MINUTE_MS],
    ['fast lane, doubling', 3, born + HOUR_MS, born + HOUR_MS + 8 * MINUTE_MS],
    ['fast lane, capped at an hour', 8, born + 4 * HOUR_MS, born + 5 * HOUR_MS],
    ['slow lane, under a day old: hourly', 9, born + 5 * HOUR_MS, born + 6 * HOUR_MS],
    ['slow lane, a day old: daily', 30, born + DAY_MS, born + 2 * DAY_MS],
    ['slow lane, the last check at the horizon itself', 35, born + 6.5 * DAY_MS, born + 7 * DAY_MS],
    ['past the horizon: given up', 36, born + 7 * DAY_MS, undefined],
  ])('%s', (_name, checks, now, expected) => {
    expect(nextCheckAt({ checks, createdAt }, now, options)).toBe(expected);
  });
  it.each([
    [
      'the session ends before the doubled wait: at its end plus grace',
      2,
      born + 9 * MINUTE_MS,
      born + 10 * MINUTE_MS + 60_000,
    ],
    ['the session ended already: the doubled wait', 2, born + 12 * MINUTE_MS, born + 16 * MINUTE_MS],
    ['the session ends after the doubled wait: the doubled wait', 0, born + MINUTE_MS, born + 2 * MINUTE_MS],
  ])('a fast-lane wait stops at the session’s end plus grace: %s', (_name, checks, now, expected) => {
    const sessionEndsAt = new Date(born + 10 * MINUTE_MS).toISOString();
    expect(nextCheckAt({ checks, createdAt, sessionEndsAt }, now, { ...options, graceSecs: 60 })).toBe(expected);
  });
  it('an unreadable createdAt is dated from the check: never given up early', () => {
    expect(nextCheckAt({ checks: 20, createdAt: 'garbage' }, born, options)).toBe(born + HOUR_MS);
  });
});
