import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import express from 'express';
import type { Server } from 'node:http';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { PaymentsModule } from '../../lib/nest/payments.module.js';
import { paymentsOptionsFromConfig } from '../../lib/nest/payments.config.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { itWithService, POSTGRES_URL, postgresAvailable, REDIS_URL, redisAvailable } from '../support/services.js';
import { buildCli, closedPort, freePort, runCliProcess, type BuiltCli, type CliRun } from './cli.helpers.js';

const SECRET = 'doctor-webhook-secret-0123456789abcdef';
const OTHER_SECRET = 'another-webhook-secret-0123456789abcdef';
const [hasRedis, hasPostgres] = await Promise.all([redisAvailable(), postgresAvailable()]);

/** The variables of a healthy set-up: the sandbox's keys and an app at `appPort`. */
function healthyEnv(sandbox: PaymentsSandbox, appPort: number): Record<string, string> {
  return {
    PAYMENTS_PUBLIC_KEY: sandbox.publicKey,
    PAYMENTS_PRIVATE_KEY: sandbox.privateKey,
    PAYMENTS_BASE_URL: sandbox.url,
    PAYMENTS_WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${appPort}/payments/webhook`,
    PAYMENTS_WEBHOOK_SECRET: SECRET,
    PAYMENTS_SUCCESS_LINK: 'https://shop.example/ok',
    PAYMENTS_FAIL_LINK: 'https://shop.example/ko',
    PAYMENTS_RECONCILIATION_ENABLED: 'false',
  };
}

/** A Nest app configured from `env` exactly as the module reads it, listening on `port`. */
async function startNest(
  env: Record<string, string>,
  port: number,
  adapter: 'express' | 'fastify',
): Promise<INestApplication> {
  const options = paymentsOptionsFromConfig({ get: (key) => env[key] }, { logger: quietLogger(), telemetry: false });
  const moduleRef = await Test.createTestingModule({ imports: [PaymentsModule.forRoot(options)] }).compile();
  const app =
    adapter === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  await app.listen(port, '127.0.0.1');
  return app;
}

/** A plain Express app with the plugin's router at /payments/webhook, configured from `env`. */
async function startExpress(
  env: Record<string, string>,
  port: number,
): Promise<{ client: PaymentsClient; server: Server }> {
  const options = paymentsOptionsFromConfig({ get: (key) => env[key] }, { logger: quietLogger(), telemetry: false });
  const { webhook, ...rest } = options;
  const { decorators: _decorators, ...coreWebhook } = webhook ?? {};
  const client = createPaymentsClient({ ...rest, webhook: coreWebhook });
  const app = express();
  app.use('/payments/webhook', createWebhookRouter({ client, onPaymentConfirmed: async () => undefined }));
  const server = app.listen(port, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { client, server };
}

function lines(run: CliRun): string[] {
  return run.stdout.split('\n');
}

/** The report's line for a check label (`keys`, `store`, ...): the first one when there are several. */
function lineOf(run: CliRun, label: string): string {
  return (
    lines(run).find((l) => l.slice(2).startsWith(`${label}: `)) ??
    `(no line "${label}" in ${JSON.stringify(run.stdout)})`
  );
}

function expectNoSecrets(run: CliRun, ...secrets: string[]): void {
  for (const secret of [SECRET, OTHER_SECRET, ...secrets]) {
    expect(run.stdout).not.toContain(secret);
    expect(run.stderr).not.toContain(secret);
  }
}

describe('nestjs-payments doctor (a child process, against the sandbox)', () => {
  let cli: BuiltCli;
  let sandbox: PaymentsSandbox;

  beforeAll(async () => {
    [cli, sandbox] = await Promise.all([buildCli(), PaymentsSandbox.start()]);
  });

  afterAll(async () => {
    await Promise.all([cli?.remove(), sandbox?.close()]);
  });

  describe.each(['express', 'fastify'] as const)('a healthy Nest app (%s adapter)', (adapter) => {
    let app: INestApplication;
    let env: Record<string, string>;

    beforeAll(async () => {
      const port = await freePort();
      env = healthyEnv(sandbox, port);
      app = await startNest(env, port, adapter);
    });

    afterAll(async () => {
      await app?.close();
    });

    it('passes every check, the probe included, and exits 0; the probe costs no verify call', async () => {
      const before = sandbox.verifyCalls();
      const run = await runCliProcess(cli, ['doctor', '--probe'], env);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).not.toContain('✖');
      expect(lineOf(run, 'variables')).toMatch(/^✔ variables: 8 PAYMENTS_\* variables read/);
      expect(lineOf(run, 'base URL')).toBe(
        `✔ base URL: ${sandbox.url} answers (HTTP 200), plain HTTP on loopback: a local sandbox`,
      );
      expect(lineOf(run, 'keys')).toBe(
        '✔ keys: accepted by the service (a made-up payment id was answered "not found", not 401/403)',
      );
      expect(lineOf(run, 'webhook URL')).toBe(
        `✔ webhook URL: ${env.PAYMENTS_WEBHOOK_PUBLIC_URL} is plain HTTP on loopback: only a local sandbox can deliver to it`,
      );
      expect(lineOf(run, 'webhook secret')).toBe(
        '✔ webhook secret: PAYMENTS_WEBHOOK_SECRET is set, at least 32 characters',
      );
      expect(lineOf(run, 'store')).toMatch(/^– store: no PAYMENTS_REDIS_URL or PAYMENTS_DATABASE_URL/);
      expect(lineOf(run, 'webhook probe')).toBe(
        `✔ webhook probe: a signed probe sent to ${env.PAYMENTS_WEBHOOK_PUBLIC_URL} reached the plugin's webhook route`,
      );
      expect(run.stdout.trimEnd().endsWith('All checks passed.')).toBe(true);
      // The keys check is the one read of a made-up payment; the probe reached the route without one.
      expect(sandbox.verifyCalls() - before).toBe(1);
      expectNoSecrets(run, sandbox.privateKey);
    });

    it('detects a webhook URL that does not route to the app (404 to the probe)', async () => {
      const notRouted = {
        ...env,
        PAYMENTS_WEBHOOK_PUBLIC_URL: env.PAYMENTS_WEBHOOK_PUBLIC_URL.replace(
          '/payments/webhook',
          '/api/payments/webhook',
        ),
      };
      const run = await runCliProcess(cli, ['doctor', '--probe'], notRouted);
      expect(run.code).toBe(1);
      expect(lineOf(run, 'webhook probe')).toBe(
        `✖ webhook probe: webhook URL not routed: ${notRouted.PAYMENTS_WEBHOOK_PUBLIC_URL} answered HTTP 404 to a signed probe`,
      );
      expect(run.stdout).toContain(
        "    fix: the request did not reach the plugin's route: check the proxy's rules, the app's global prefix and PAYMENTS_WEBHOOK_PATH",
      );
      expect(run.stdout.trimEnd().endsWith('1 check(s) failed.')).toBe(true);
    });

    it('detects an app running with another secret (401 to the probe)', async () => {
      const run = await runCliProcess(cli, ['doctor', '--probe'], { ...env, PAYMENTS_WEBHOOK_SECRET: OTHER_SECRET });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'webhook probe')).toMatch(
        /^✖ webhook probe: a webhook route at .* refused the probe's signature \(HTTP 401\)$/,
      );
      expect(run.stdout).toContain('fix: the app runs with another PAYMENTS_WEBHOOK_SECRET than this one');
      expectNoSecrets(run);
    });
  });

  describe('a healthy plain Express app', () => {
    let server: Server;
    let client: PaymentsClient;
    let env: Record<string, string>;

    beforeAll(async () => {
      const port = await freePort();
      env = healthyEnv(sandbox, port);
      ({ server, client } = await startExpress(env, port));
    });

    afterAll(async () => {
      await new Promise((resolve) => server?.close(resolve));
      await client?.close();
    });

    it('passes the probe through the router and exits 0', async () => {
      const run = await runCliProcess(cli, ['doctor', '--probe'], env);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(lineOf(run, 'webhook probe')).toMatch(
        /^✔ webhook probe: a signed probe sent to .* reached the plugin's webhook route$/,
      );
    });

    it('--json: the same report for scripts, without keys or the secret', async () => {
      const run = await runCliProcess(cli, ['doctor', '--probe', '--json'], {
        ...env,
        PAYMENTS_PRIVATE_KEY: 'sk_doctor_wrong_key',
      });
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as {
        ok: boolean;
        checks: Array<{ id: string; status: string; message: string; fix?: string }>;
      };
      expect(report.ok).toBe(false);
      expect(report.checks.map((c) => [c.id, c.status])).toEqual([
        ['variables', 'ok'],
        ['baseUrl', 'ok'],
        ['keys', 'fail'],
        ['webhookUrl', 'ok'],
        ['secret', 'ok'],
        ['store', 'skip'],
        ['probe', 'ok'],
      ]);
      expect(report.checks[2]).toEqual({
        id: 'keys',
        status: 'fail',
        message: 'refused by the service (HTTP 401)',
        fix: 'check PAYMENTS_PUBLIC_KEY and PAYMENTS_PRIVATE_KEY, and that PAYMENTS_BASE_URL is the environment (sandbox or live) they were issued for',
      });
      expectNoSecrets(run, 'sk_doctor_wrong_key', sandbox.privateKey);
    });
  });

  describe('faults without an app (the probe not asked for)', () => {
    let env: Record<string, string>;

    beforeAll(async () => {
      env = healthyEnv(sandbox, await closedPort());
    });

    it('exits 0 without --probe, the probe line saying how to send one', async () => {
      const run = await runCliProcess(cli, ['doctor'], env);
      expect(run.code).toBe(0);
      expect(lineOf(run, 'webhook probe')).toBe(
        '– webhook probe: not sent (add --probe, with the app running, to check the public URL reaches its webhook route)',
      );
    });

    it('wrong key: ✖ keys, refused by the service', async () => {
      const run = await runCliProcess(cli, ['doctor'], { ...env, PAYMENTS_PRIVATE_KEY: 'sk_not_the_right_one' });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'keys')).toBe('✖ keys: refused by the service (HTTP 401)');
      expect(run.stdout).toContain('    fix: check PAYMENTS_PUBLIC_KEY and PAYMENTS_PRIVATE_KEY');
      expect(run.stdout.trimEnd().endsWith('1 check(s) failed.')).toBe(true);
      expectNoSecrets(run, 'sk_not_the_right_one');
    });

    it('unreachable base URL: ✖ base URL (connection refused), keys not checked', async () => {
      const dead = `http://127.0.0.1:${await closedPort()}`;
      const run = await runCliProcess(cli, ['doctor'], { ...env, PAYMENTS_BASE_URL: dead });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'base URL')).toMatch(
        new RegExp(`^✖ base URL: ${dead.replace(/\./g, '\\.')} does not answer \\(connect ECONNREFUSED`),
      );
      expect(run.stdout).toContain('    fix: check PAYMENTS_BASE_URL (host, port, https)');
      expect(lineOf(run, 'keys')).toBe('✖ keys: not checked: the base URL does not answer');
    });

    it('plain HTTP base URL off loopback: ✖ without a request', async () => {
      const run = await runCliProcess(cli, ['doctor'], { ...env, PAYMENTS_BASE_URL: 'http://pay.example' });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'base URL')).toBe('✖ base URL: http://pay.example is plain HTTP');
    });

    it('short secret: ✖ webhook secret, its value never printed', async () => {
      const run = await runCliProcess(cli, ['doctor'], { ...env, PAYMENTS_WEBHOOK_SECRET: 'short-secret-value' });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'webhook secret')).toBe(
        '✖ webhook secret: PAYMENTS_WEBHOOK_SECRET is shorter than 32 characters',
      );
      expect(run.stdout).toContain(
        '    fix: set PAYMENTS_WEBHOOK_SECRET to at least 32 random characters, the same in the app and here',
      );
      // The rest is still checked: only the secret fails.
      expect(lineOf(run, 'keys')).toMatch(/^✔ keys/);
      // The module would refuse it at start-up: the variables check says so too.
      expect(lineOf(run, 'variables')).toBe(
        '✖ variables: the module would refuse to start: PAYMENTS_WEBHOOK_SECRET invalid (see below)',
      );
      expect(run.stdout.trimEnd().endsWith('2 check(s) failed.')).toBe(true);
      expectNoSecrets(run, 'short-secret-value');
    });

    it('webhook public URL not HTTPS: ✖ webhook URL', async () => {
      const run = await runCliProcess(cli, ['doctor'], {
        ...env,
        PAYMENTS_WEBHOOK_PUBLIC_URL: 'http://shop.example/payments/webhook',
      });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'webhook URL')).toBe('✖ webhook URL: http://shop.example/payments/webhook is not HTTPS');
    });

    it('variables the module refuses (not a URL, a user:pass@ URL, a 14-character secret): ✖ variables, never ✔', async () => {
      const run = await runCliProcess(cli, ['doctor'], {
        ...env,
        PAYMENTS_BASE_URL: 'not a url',
        PAYMENTS_WEBHOOK_PUBLIC_URL: 'https://shopuser:hunter2pass@shop.example/payments/webhook',
        PAYMENTS_WEBHOOK_SECRET: 'fourteen-chars',
      });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'variables')).toBe(
        '✖ variables: the module would refuse to start: PAYMENTS_BASE_URL, PAYMENTS_WEBHOOK_PUBLIC_URL, PAYMENTS_WEBHOOK_SECRET invalid (see below)',
      );
      expect(lineOf(run, 'base URL')).toMatch(/^✖ base URL: PAYMENTS_BASE_URL \(baseUrl\) /);
      expect(lineOf(run, 'webhook URL')).toMatch(
        /^✖ webhook URL: PAYMENTS_WEBHOOK_PUBLIC_URL \(webhook.publicUrl\) must not contain a user name or password/,
      );
      expect(lineOf(run, 'webhook secret')).toMatch(/^✖ webhook secret: /);
      expectNoSecrets(run, 'fourteen-chars', 'hunter2pass');
    });

    it('a malformed variable is named: ✖ variables', async () => {
      const run = await runCliProcess(cli, ['doctor'], { ...env, PAYMENTS_TIMEOUT_MS: 'soon' });
      expect(run.code).toBe(1);
      expect(lineOf(run, 'variables')).toMatch(
        /^✖ variables: the module would refuse to start: PAYMENTS_TIMEOUT_MS \(timeoutMs\) /,
      );
    });

    it('store down: ✖ store for a Redis and a PostgreSQL on closed ports', async () => {
      const [redisPort, pgPort] = [await closedPort(), await closedPort()];
      const run = await runCliProcess(cli, ['doctor'], {
        ...env,
        PAYMENTS_REDIS_URL: `redis://:redis-password@127.0.0.1:${redisPort}`,
        PAYMENTS_DATABASE_URL: `postgres://shop:pg-password@127.0.0.1:${pgPort}/shop`,
      });
      expect(run.code).toBe(1);
      const stores = lines(run).filter((l) => l.includes(' store: '));
      expect(stores).toEqual([
        expect.stringMatching(
          new RegExp(`^✖ store: Redis at redis://127\\.0\\.0\\.1:${redisPort} does not answer \\(.+\\)$`),
        ),
        expect.stringMatching(
          new RegExp(`^✖ store: PostgreSQL at postgres://127\\.0\\.0\\.1:${pgPort}/shop does not answer \\(.+\\)$`),
        ),
      ]);
      expect(run.stdout).toContain(
        'fix: check that Redis runs and that PAYMENTS_REDIS_URL names the server the app uses',
      );
      expect(run.stdout).toContain(
        'fix: check that PostgreSQL runs and that PAYMENTS_DATABASE_URL names the server the app uses',
      );
      expectNoSecrets(run, 'redis-password', 'pg-password');
    });

    itWithService(hasRedis && hasPostgres, 'Redis or PostgreSQL not running on 127.0.0.1')(
      'store up: ✔ store for the Redis and the PostgreSQL the app uses',
      async () => {
        // The app's store creates its tables on first use; doctor itself never creates them.
        const appStore = new PostgresPaymentsStore(POSTGRES_URL);
        await appStore.countPending();
        await appStore.close();
        const run = await runCliProcess(cli, ['doctor'], {
          ...env,
          PAYMENTS_REDIS_URL: REDIS_URL,
          PAYMENTS_DATABASE_URL: POSTGRES_URL,
        });
        expect({ code: run.code, stdout: run.stdout }).toEqual({
          code: 0,
          stdout: expect.stringContaining('All checks passed.'),
        });
        const stores = lines(run).filter((l) => l.includes(' store: '));
        expect(stores).toEqual([
          expect.stringMatching(
            /^✔ store: Redis at redis:\/\/.+ answers \(\d+ payment\(s\) waiting for reconciliation\)$/,
          ),
          expect.stringMatching(
            /^✔ store: PostgreSQL at postgres:\/\/.+ answers \(\d+ payment\(s\) waiting for reconciliation\)$/,
          ),
        ]);
      },
    );
  });
});
