import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsClient } from '../../lib/core/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import {
  describeWithService,
  POSTGRES_URL,
  postgresAvailable,
  REDIS_URL,
  redisAvailable,
} from '../support/services.js';
import { buildCli, runCliProcess, type BuiltCli } from './cli.helpers.js';
import { outcomeHandlers } from '../support/outcome-handlers.js';

const [hasRedis, hasPostgres] = await Promise.all([redisAvailable(), postgresAvailable()]);

describe('nestjs-payments verify (a child process, against the sandbox)', () => {
  let cli: BuiltCli;
  let sandbox: PaymentsSandbox;
  let env: Record<string, string>;

  beforeAll(async () => {
    [cli, sandbox] = await Promise.all([buildCli(), PaymentsSandbox.start()]);
    env = {
      PAYMENTS_PUBLIC_KEY: sandbox.publicKey,
      PAYMENTS_PRIVATE_KEY: sandbox.privateKey,
      PAYMENTS_BASE_URL: sandbox.url,
    };
  });

  afterAll(async () => {
    await Promise.all([cli?.remove(), sandbox?.close()]);
  });

  it('prints the verified payment as JSON', async () => {
    const client = new PaymentsClient({
      ...connectionOf(env),
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
    });
    const { paymentId } = await client.generatePayment({ amount: '12500', developerTrackingId: 'order-cli-1' });
    await client.close();
    await sandbox.completePayment(paymentId);
    // A bad webhook variable does not stop an on-call read.
    const run = await runCliProcess(cli, ['verify', paymentId], { ...env, PAYMENTS_WEBHOOK_SECRET: 'short' });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({
      paymentId,
      status: 'SUCCESS',
      amount: '12500',
      developerTrackingId: 'order-cli-1',
    });
  });

  it('exits 1 with the service error for an unknown payment or a wrong key, never printing the key', async () => {
    let run = await runCliProcess(cli, ['verify', 'pay_does_not_exist'], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^nestjs-payments: verifyPayment failed \(HTTP 404, NOT_FOUND\)/);
    run = await runCliProcess(cli, ['verify', 'pay_x'], { ...env, PAYMENTS_PRIVATE_KEY: 'sk_wrong_cli_key' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('AUTHENTICATION_FAILED');
    expect(run.stdout + run.stderr).not.toContain('sk_wrong_cli_key');
  });
});

/** The connection options of the CLI's variables, for a client made in the test. */
function connectionOf(env: Record<string, string>): {
  publicKey: string;
  privateKey: string;
  baseUrl: string;
  logger: ReturnType<typeof quietLogger>;
  reconciliation: { enabled: false };
  telemetry: false;
} {
  return {
    publicKey: env.PAYMENTS_PUBLIC_KEY,
    privateKey: env.PAYMENTS_PRIVATE_KEY,
    baseUrl: env.PAYMENTS_BASE_URL,
    logger: quietLogger(),
    reconciliation: { enabled: false },
    telemetry: false,
  };
}

const STORES = [
  {
    kind: 'Redis',
    available: hasRedis,
    variable: 'PAYMENTS_REDIS_URL',
    url: REDIS_URL,
    open: () => new RedisPaymentsStore(REDIS_URL),
  },
  {
    kind: 'PostgreSQL',
    available: hasPostgres,
    variable: 'PAYMENTS_DATABASE_URL',
    url: POSTGRES_URL,
    open: () => new PostgresPaymentsStore(POSTGRES_URL),
  },
] as const;

for (const store of STORES) {
  describeWithService(store.available, `${store.kind} not running on 127.0.0.1`)(
    `nestjs-payments outcomes --failed (${store.kind}, a child process)`,
    () => {
      let cli: BuiltCli;
      let sandbox: PaymentsSandbox;
      const run = Date.now().toString(36);
      let failedId: string;
      let succeededId: string;
      let paidTwice: { first: string; second: string };

      beforeAll(async () => {
        [cli, sandbox] = await Promise.all([buildCli(), PaymentsSandbox.start()]);
        // The app: its handlers fail for one payment and succeed for the other, in the store the CLI reads.
        const client = new PaymentsClient({
          publicKey: sandbox.publicKey,
          privateKey: sandbox.privateKey,
          baseUrl: sandbox.url,
          successLink: 'https://shop.example/ok',
          failLink: 'https://shop.example/ko',
          store: store.open(),
          reconciliation: { enabled: false },
          telemetry: false,
          logger: quietLogger(),
        });
        client.setHandlers(
          outcomeHandlers(async (_name, event) => {
            if (event.developerTrackingId === `fail-${run}`) throw new Error('mailer down\nFORGED LINE');
          }),
        );
        failedId = (await client.generatePayment({ amount: '3000', developerTrackingId: `fail-${run}` })).paymentId;
        succeededId = (await client.generatePayment({ amount: '4000', developerTrackingId: `ok-${run}` })).paymentId;
        for (const id of [failedId, succeededId]) {
          await sandbox.completePayment(id);
          await client.reconcilePayment(id).catch(() => undefined);
        }
        // One order paid twice (two payments of one tracking id): the second is a duplicate.
        const order = { amount: '5000', developerTrackingId: `twice-${run}` };
        paidTwice = {
          first: (await client.generatePayment(order, { idempotencyKey: `twice-${run}/1` })).paymentId,
          second: (await client.generatePayment(order, { idempotencyKey: `twice-${run}/2` })).paymentId,
        };
        for (const id of [paidTwice.first, paidTwice.second]) {
          await sandbox.completePayment(id);
          await client.reconcilePayment(id);
        }
        expect((await client.getOutcome(failedId))?.handlers).toBe('failed');
        expect((await client.getOutcome(succeededId))?.handlers).toBe('succeeded');
        await client.close();
      });

      afterAll(async () => {
        await Promise.all([cli?.remove(), sandbox?.close()]);
      });

      it('lists the payment whose handlers failed, one line each, not the one that succeeded', async () => {
        const result = await runCliProcess(cli, ['outcomes', '--failed'], { [store.variable]: store.url });
        expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
        const line = result.stdout.split('\n').find((l) => l.includes(failedId));
        expect(line).toMatch(
          new RegExp(
            `^\\S+  ${failedId}  confirmed  status=SUCCESS  handlers=failed  attempts=1  amount=3000  tracking=fail-${run}  error="[^"]*mailer down[^"]*"$`,
          ),
        );
        // The handler's line break cannot forge a line of the listing.
        expect(result.stdout).not.toMatch(/^FORGED LINE/m);
        expect(result.stdout).not.toContain(succeededId);
      });

      it('--duplicates lists the second charge of an order paid twice, naming the payment that paid it', async () => {
        const result = await runCliProcess(cli, ['outcomes', '--duplicates', '--limit', '500'], {
          [store.variable]: store.url,
        });
        expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
        const line = result.stdout.split('\n').find((l) => l.includes(paidTwice.second));
        expect(line).toMatch(
          new RegExp(
            `^\\S+  ${paidTwice.second}  duplicate  status=SUCCESS  handlers=succeeded  attempts=1  amount=5000  tracking=twice-${run}  settled-by=${paidTwice.first}$`,
          ),
        );
        expect(result.stdout).not.toContain(failedId);
        expect(result.stdout).not.toContain(`${paidTwice.first}  confirmed`);
      });

      it('--json gives the records; without --failed the succeeded one is listed too', async () => {
        const failed = JSON.parse(
          (await runCliProcess(cli, ['outcomes', '--failed', '--json'], { [store.variable]: store.url })).stdout,
        ) as Array<{
          paymentId: string;
          handlers: string;
        }>;
        expect(failed.find((r) => r.paymentId === failedId)).toMatchObject({
          handlers: 'failed',
          outcome: 'confirmed',
        });
        expect(failed.every((r) => r.handlers === 'failed')).toBe(true);
        const all = await runCliProcess(cli, ['outcomes', '--limit', '500'], { [store.variable]: store.url });
        expect(all.code).toBe(0);
        expect(all.stdout).toContain(succeededId);
        expect(all.stdout).toContain(failedId);
      });
    },
  );
}
