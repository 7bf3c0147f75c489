// `nestjs-payments sandbox pay|fail|preauthorize|expire <id>`: a real CLI process drives a running
// sandbox through its control route; the webhook reaches a loopback receiver standing in for the app.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaymentsClient } from '../../lib/core/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { buildCli, closedPort, runCliProcess, type BuiltCli } from './cli.helpers.js';

const SECRET = 'sandbox-actions-webhook-secret-0123456789';

describe('nestjs-payments sandbox <action> <paymentId> (a child process, against a running sandbox)', () => {
  let cli: BuiltCli;
  let sandbox: PaymentsSandbox;
  let receiver: Server;
  let answer = 200;
  const received: string[] = [];
  let client: PaymentsClient;

  beforeAll(async () => {
    cli = await buildCli();
    sandbox = await PaymentsSandbox.start();
    receiver = createServer((req, res) => {
      received.push(req.url ?? '');
      res.statusCode = answer;
      res.end('{}');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const publicUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/payments/webhook`;
    client = new PaymentsClient(
      sandbox.options({
        webhook: { publicUrl, secret: SECRET },
        reconciliation: { enabled: false },
        logger: quietLogger(),
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await sandbox?.close();
    await cli?.remove();
  });

  // One order per payment: a second generatePayment for an order with an open payment returns that one.
  let orders = 0;
  const newPayment = async (preAuthorization = false) =>
    (await client.generatePayment({ amount: '4200', developerTrackingId: `order-cli-${++orders}`, preAuthorization }))
      .paymentId;
  const run = (...args: string[]) => runCliProcess(cli, ['sandbox', ...args, '--url', sandbox.url], {});

  it('pay: the payment is paid and its webhook delivered to the app', async () => {
    const id = await newPayment();
    const before = received.length;
    const result = await run('pay', id);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(
      `payment ${id}: paid (verify now answers SUCCESS); webhook delivered (HTTP 200, 1 attempt)\n`,
    );
    expect(result.code).toBe(0);
    expect(sandbox.getPayment(id)?.state).toBe('paid');
    expect(received.length).toBe(before + 1);
  });

  it('fail: declined, FAILURE delivered', async () => {
    const id = await newPayment();
    const result = await run('fail', id);
    expect([result.code, result.stdout]).toEqual([
      0,
      `payment ${id}: failed (verify now answers FAILURE); webhook delivered (HTTP 200, 1 attempt)\n`,
    ]);
    expect(sandbox.getPayment(id)?.state).toBe('failed');
  });

  it('preauthorize: holds a pre-authorization, and is refused for a standard payment', async () => {
    const held = await newPayment(true);
    const result = await run('preauthorize', held);
    expect([result.code, result.stdout]).toEqual([
      0,
      `payment ${held}: preauthorized (verify now answers PREAUTH_SUCCESS); webhook delivered (HTTP 200, 1 attempt)\n`,
    ]);
    const standard = await newPayment();
    const refused = await run('preauthorize', standard);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `nestjs-payments: payment ${standard} is not a pre-authorization: use pay\n`,
    ]);
    expect(sandbox.getPayment(standard)?.state).toBe('pending');
  });

  it('expire: the session ends, no webhook (as the service)', async () => {
    const id = await newPayment();
    const before = received.length;
    const result = await run('expire', id);
    expect([result.code, result.stdout]).toEqual([
      0,
      `payment ${id}: expired (verify now answers EXPIRED); no webhook sent (none on expiry)\n`,
    ]);
    expect(received.length).toBe(before);
  });

  it('an unknown payment, or one already settled: one line saying so, exit 1', async () => {
    const unknown = await run('pay', 'pay_nobody_made_this');
    expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([
      1,
      '',
      'nestjs-payments: unknown payment: the sandbox has no payment pay_nobody_made_this\n',
    ]);
    const id = await newPayment();
    await run('pay', id);
    const again = await run('fail', id);
    expect([again.code, again.stderr]).toEqual([
      1,
      `nestjs-payments: payment ${id} is paid, not pending: it can no longer be settled\n`,
    ]);
  });

  it('an app that does not take the webhook: settled, but exit 1 with what the app answered', async () => {
    const id = await newPayment();
    answer = 500;
    try {
      const result = await run('pay', id);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `nestjs-payments: payment ${id}: paid (verify now answers SUCCESS); webhook NOT delivered after 3 attempts (last answer HTTP 500): is the app running at its webhook URL?\n`,
      );
    } finally {
      answer = 200;
    }
  });

  it('finds the sandbox at PAYMENTS_BASE_URL without --url, and says so when none answers', async () => {
    const id = await newPayment();
    const viaEnv = await runCliProcess(cli, ['sandbox', 'pay', id], { PAYMENTS_BASE_URL: sandbox.url });
    expect(viaEnv.code).toBe(0);
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const none = await runCliProcess(cli, ['sandbox', 'pay', id, '--url', dead], {});
    expect([none.code, none.stderr]).toEqual([
      1,
      `nestjs-payments: no sandbox answers at ${dead}: start one with npx nestjs-payments sandbox, or give its address with --url\n`,
    ]);
  });

  it('a usage error names what is missing; --help prints the actions', async () => {
    const missing = await runCliProcess(cli, ['sandbox', 'pay'], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr.split('\n')[0]).toBe(
      'nestjs-payments: sandbox pay needs a payment id: nestjs-payments sandbox pay <paymentId>',
    );
    const help = await runCliProcess(cli, ['help', 'sandbox'], {});
    expect(help.stdout).toContain('Usage: nestjs-payments sandbox <action> <paymentId> [--url <url>]');
  });
});
