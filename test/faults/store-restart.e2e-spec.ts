import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, jest } from '@jest/globals';
import express from 'express';
import { PaymentsStoreUnavailableError } from '../../lib/core/api/payments.errors.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox, type SandboxDelivery } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { itWithService } from '../support/services.js';
import { OwnPostgres, OwnRedis, postgresServerAvailable, redisServerAvailable } from './support/own-servers.js';

// Issue 19 item 7: the store's server goes down in the middle of deliveries and sweeps, and comes
// back (a real redis-server and a real PostgreSQL cluster of this test's own, killed and started
// again: never the machine's shared ones). While it is down, deliveries get 503 (the service
// delivers again later) and sweeps do nothing; once it is back, nothing is lost: every paid
// payment's handler runs exactly once, through the redelivered webhook or the next sweep.

jest.setTimeout(120_000);
const SECRET = 'whsec_restart_0123456789abcdef0123456789';
const FAR = 2 * 24 * 3_600_000;
/** The claims' lease (real time): short, so that a claim landing late hides a payment briefly. */
const LEASE_MS = 2000;

/** The figures of each store's run, printed at the end. */
const figures: string[] = [];
afterAll(() => {
  if (figures.length > 0) process.stdout.write(`\nstore restarts, figures:\n${figures.join('\n')}\n`);
});

interface OwnServer {
  down(): Promise<void>;
  up(): Promise<void>;
}

async function untilTrue(probe: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function restartScenario(label: string, server: OwnServer, store: PaymentsStore): Promise<void> {
  const sandbox = await PaymentsSandbox.start({ webhookAttempts: 3 });
  const handled: string[] = [];
  const logs: string[] = [];
  const app = express();
  const http: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const hookUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/hook`;
  const client: PaymentsClient = createPaymentsClient({
    ...sandbox.options(),
    maxRetries: 0,
    store,
    logger: quietLogger(logs),
    webhook: { publicUrl: hookUrl, secret: SECRET, leaseMs: LEASE_MS },
    reconciliation: { enabled: false },
  });
  app.use('/hook', createWebhookRouter({ client, onPaymentConfirmed: (e) => void handled.push(e.paymentId) }));
  const deliveriesOf = (id: string): SandboxDelivery[] => sandbox.deliveries.filter((d) => d.paymentId === id);
  // The service delivering again, as it would on its own: the same URL and body as its last try.
  const redeliver = async (id: string) => {
    const last = deliveriesOf(id).at(-1)!;
    const res = await fetch(last.url, {
      method: last.method,
      headers: { 'content-type': 'application/json' },
      body: last.payload,
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await client.generatePayment({ amount: String(1000 + i) })).paymentId);
    const [a, b, c, d, e, f] = ids;

    // Up: two payments paid and delivered.
    for (const id of [a, b])
      expect(await sandbox.completePayment(id)).toMatchObject({ delivered: true, lastStatus: 200 });
    expect(handled).toEqual([a, b]);

    // Down in the middle of the run: deliveries get 503, a sweep does nothing and does not throw.
    await server.down();
    const downAt = Date.now();
    for (const id of [c, d, e]) {
      const settled = await sandbox.completePayment(id, { requireDelivery: false });
      expect(settled).toMatchObject({ delivered: false, attempts: 3, lastStatus: 503 });
    }
    expect(await client.runReconciliation(Date.now() + FAR)).toEqual({ checked: 0, settled: 0 });
    // A return while it is down: a typed error the host can answer 503 with, and no verify spent.
    await expect(client.reconcilePayment(f)).rejects.toBeInstanceOf(PaymentsStoreUnavailableError);
    expect(sandbox.verifyCalls(f)).toBe(0);
    expect(handled).toEqual([a, b]);
    const downMs = Date.now() - downAt;

    // Back: the store reconnects by itself.
    await server.up();
    await untilTrue(async () => (await store.countPending()) >= 0, 'the store answers again');
    // Paid after the restart: delivered at once.
    expect(await sandbox.completePayment(f)).toMatchObject({ delivered: true, lastStatus: 200 });
    // The service delivers c again: handled. d and e come from the sweep (nothing was lost from its queue).
    expect(await redeliver(c)).toEqual({ status: 200, body: { received: true } });
    // A command sent while the server was down may still reach it once it is back (ioredis keeps
    // its offline queue; a timed-out take or claim is not unsent): a claim taken that way hides the
    // payment for LEASE_MS of real time, a queue entry taken that way for the pass's lease (60 s,
    // on the clock the pass was given), never longer. So sweeps run, a minute of the compressed
    // clock and 100 ms apart, until both are settled.
    const passes: Array<{ checked: number; settled: number }> = [];
    let now = Date.now() + FAR;
    const sweepStart = Date.now();
    while (!(handled.includes(d) && handled.includes(e)) && Date.now() - sweepStart < 4 * LEASE_MS + 5000) {
      passes.push(await client.runReconciliation((now += 60_000)));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(passes.reduce((sum, p) => sum + p.settled, 0)).toBe(2);
    expect(passes.at(-1)!.settled).toBeGreaterThan(0);
    // Late redeliveries and another sweep: duplicates, nothing runs twice.
    for (const id of [c, d, e])
      expect(await redeliver(id)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    expect(await client.runReconciliation(now + FAR)).toEqual({ checked: 0, settled: 0 });

    expect([...handled].sort()).toEqual([...ids].sort());
    expect(new Set(handled).size).toBe(handled.length);
    expect(await store.countPending()).toBe(0);
    for (const id of ids)
      expect(await client.getOutcome(id)).toMatchObject({ outcome: 'confirmed', handlers: 'succeeded', attempts: 1 });
    const refused = [c, d, e].flatMap(deliveriesOf).filter((x) => x.status === 503).length;
    figures.push(
      `${label}: down ${(downMs / 1000).toFixed(1)} s; ${refused} deliveries answered 503 while down (3 payments x 3 attempts); ` +
        `after the restart 1 redelivery + ${passes.length} sweep pass(es) (${passes.map((p) => `${p.checked}/${p.settled}`).join(', ')} checked/settled) + 1 live delivery; handlers ${handled.length}/6, each once; ` +
        `verify calls ${ids.map((id) => sandbox.verifyCalls(id)).join('/')}`,
    );
  } finally {
    await client.close();
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
    await sandbox.close();
  }
}

describe('the store restarted during deliveries and sweeps', () => {
  const redisUp = redisServerAvailable();
  itWithService(redisUp, 'redis-server is not installed')(
    'Redis (a redis-server of the test, SIGKILLed and started again)',
    async () => {
      const server = await OwnRedis.start();
      const store = new RedisPaymentsStore(server.url, { operationTimeoutMs: 500, logger: quietLogger() });
      try {
        await restartScenario('redis', server, store);
      } finally {
        await store.close();
        await server.remove();
      }
    },
  );

  const pgUp = postgresServerAvailable();
  itWithService(pgUp, 'PostgreSQL server binaries (initdb, pg_ctl) or the postgres user are absent')(
    'PostgreSQL (a cluster of the test, stopped with -m immediate and started again)',
    async () => {
      const server = await OwnPostgres.start();
      const store = new PostgresPaymentsStore(server.url, { operationTimeoutMs: 1000, logger: quietLogger() });
      try {
        await restartScenario('postgres', server, store);
      } finally {
        await store.close();
        await server.remove();
      }
    },
  );
});
