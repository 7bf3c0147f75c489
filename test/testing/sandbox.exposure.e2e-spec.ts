import http from 'node:http';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from '@jest/globals';
import { failedDeliveryLine, runSandboxCommand } from '../../lib/testing/sandbox.command.js';
import {
  isLoopbackHost,
  listenDecision,
  urlWithoutToken,
  webhookHostAllowed,
} from '../../lib/testing/sandbox.exposure.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { closedPort, generate, rawRequest, WebhookReceiver } from './sandbox.helpers.js';

// A sandbox others can reach is a free "pay" button and, through its webhooks, a relay: it
// refuses to listen beyond loopback with its published default key, warns beyond loopback, and
// sends webhooks only to loopback hosts unless webhookAllowedHosts names more. The CLI prints one
// line per failed delivery, without the webhook's token.

describe('the exposure rules', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['app.localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.10', false],
    ['10.0.0.1', false],
    ['shop.example', false],
    ['127.0.0.1.nip.io', false],
    ['localhost.evil.example', false],
  ])('isLoopbackHost(%j) is %j', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });

  it.each([
    ['127.0.0.1', true, 'loopback'],
    ['127.0.0.1', false, 'loopback'],
    ['0.0.0.0', true, 'refused'],
    ['::', true, 'refused'],
    ['192.168.1.10', true, 'refused'],
    ['0.0.0.0', false, 'exposed'],
    ['sandbox.internal', false, 'exposed'],
  ])('listenDecision(%j, default key %j) is %j', (host, defaultKey, kind) => {
    expect(listenDecision(host, defaultKey).kind).toBe(kind);
  });

  it('the refusal names the option to set; the warning names the allow-list', () => {
    expect(listenDecision('0.0.0.0', true)).toMatchObject({
      error: expect.stringContaining('privateKey option (CLI: --private-key)'),
    });
    expect(listenDecision('0.0.0.0', false)).toMatchObject({
      warning: expect.stringMatching(/^PaymentsSandbox: WARNING: listening on 0\.0\.0\.0.*webhookAllowedHosts/),
    });
  });

  it.each([
    ['http://127.0.0.1:3000/hook/tok', [], true],
    ['http://localhost:3000/hook/tok', [], true],
    ['http://[::1]:3000/hook/tok', [], true],
    ['https://shop.example/hook/tok', [], false],
    ['http://169.254.169.254/latest/meta-data', [], false],
    ['https://shop.example/hook/tok', ['shop.example'], true],
    ['https://SHOP.example/hook/tok', ['shop.EXAMPLE'], true],
    ['https://other.example/hook/tok', ['shop.example'], false],
    ['https://other.example/hook/tok', ['*'], true],
    ['not a url', ['*'], false],
  ])('webhookHostAllowed(%j, %j) is %j', (url, allowed, ok) => {
    expect(webhookHostAllowed(url, allowed)).toBe(ok);
  });

  it.each([
    ['http://127.0.0.1:3000/payments/webhook/v1.abc.def?payment_id=p1', 'http://127.0.0.1:3000/payments/webhook/…'],
    ['https://shop.example/hook?token=secret', 'https://shop.example/…'],
    ['https://shop.example/', 'https://shop.example/'],
    ['nonsense', '(invalid URL)'],
  ])('urlWithoutToken(%j) is %j', (url, cut) => {
    expect(urlWithoutToken(url)).toBe(cut);
  });
});

describe('PaymentsSandbox.start beyond loopback', () => {
  it.each(['0.0.0.0', '::'])('refuses %j with the default private key, naming the option', async (host) => {
    await expect(PaymentsSandbox.start({ host })).rejects.toThrow(
      /refusing to listen on .* with the published default private key.*privateKey option/,
    );
    await expect(PaymentsSandbox.start({ host, privateKey: 'sandbox_private_key' })).rejects.toThrow(TypeError);
  });

  it('starts with a key of its own and warns, once', async () => {
    const warnings: string[] = [];
    const sandbox = await PaymentsSandbox.start({
      host: '0.0.0.0',
      privateKey: 'sk_my_own_sandbox_key',
      onWarning: (m) => warnings.push(m),
    });
    try {
      expect(warnings).toEqual([
        expect.stringMatching(/^PaymentsSandbox: WARNING: listening on 0\.0\.0\.0, reachable from other machines/),
      ]);
    } finally {
      await sandbox.close();
    }
  });

  it('warns nothing on loopback', async () => {
    const warnings: string[] = [];
    const sandbox = await PaymentsSandbox.start({ onWarning: (m) => warnings.push(m) });
    await sandbox.close();
    expect(warnings).toEqual([]);
  });
});

const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

describe('webhooks go only to loopback hosts unless allowed', () => {
  // A receiver on every interface, addressed by this machine's LAN address: a host that is not a
  // loopback one, yet reachable, so a webhook sent there would arrive.
  async function lanReceiver(): Promise<{ url: string; hits: string[]; close: () => Promise<void> }> {
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    return {
      url: `http://${lanAddress}:${(server.address() as AddressInfo).port}`,
      hits,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }

  (lanAddress ? it : it.skip)(
    'sends nothing to a non-loopback host by default, records why, and sends once it is allowed',
    async () => {
      const receiver = await lanReceiver();
      const failures: unknown[] = [];
      const closed = await PaymentsSandbox.start({ onWebhookFailed: (f) => failures.push(f) });
      const open = await PaymentsSandbox.start({ webhookAllowedHosts: [lanAddress!] });
      try {
        const refused = await generate(closed, { webhook: `${receiver.url}/hook/tok_secret_1` });
        const settlement = await closed.completePayment(refused.payment_id, { requireDelivery: false });
        expect(settlement).toMatchObject({
          delivered: false,
          attempts: 0,
          webhook: { error: expect.stringContaining('webhookAllowedHosts') },
        });
        expect(closed.deliveries).toEqual([
          expect.objectContaining({ attempt: 1, error: expect.stringContaining('not sent') }),
        ]);
        expect(failures).toEqual([
          {
            paymentId: refused.payment_id,
            url: `${receiver.url}/hook/…`,
            attempts: 0,
            error: expect.stringContaining('webhookAllowedHosts'),
          },
        ]);

        const allowed = await generate(open, { webhook: `${receiver.url}/hook/tok_secret_2` });
        expect(await open.completePayment(allowed.payment_id)).toMatchObject({ delivered: true, attempts: 1 });
        expect(receiver.hits).toEqual([`/hook/tok_secret_2?payment_id=${allowed.payment_id}`]);
      } finally {
        await closed.close();
        await open.close();
        await receiver.close();
      }
    },
  );
});

class CapturedIo {
  out = '';
  err = '';
  readonly signals = new EventEmitter();
  readonly stdout = { write: (text: string) => (this.out += text) };
  readonly stderr = { write: (text: string) => (this.err += text) };

  async waitFor(stream: 'out' | 'err', text: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!this[stream].includes(text)) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${JSON.stringify(text)} in ${JSON.stringify(this[stream])}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

describe('the CLI sandbox', () => {
  it('refuses --host 0.0.0.0 with the default keys, naming --private-key', async () => {
    const io = new CapturedIo();
    expect(await runSandboxCommand(['sandbox', '--port', '0', '--host', '0.0.0.0'], io)).toBe(1);
    expect(io.err).toMatch(/^nestjs-payments: cannot start the sandbox on 0\.0\.0\.0:0: .*--private-key/);
  });

  it('warns on stderr with --host 0.0.0.0 and a key of its own', async () => {
    const io = new CapturedIo();
    const running = runSandboxCommand(
      ['sandbox', '--port', '0', '--host', '0.0.0.0', '--private-key', 'sk_cli_own'],
      io,
    );
    await io.waitFor('out', 'Press Ctrl+C');
    expect(io.err).toMatch(/^PaymentsSandbox: WARNING: listening on 0\.0\.0\.0, reachable from other machines/);
    io.signals.emit('SIGINT');
    expect(await running).toBe(0);
  });

  it('prints one line per failed delivery: the status or the error, the URL without its token', async () => {
    const io = new CapturedIo();
    const receiver = await WebhookReceiver.start();
    receiver.script.push(500, 500);
    const dead = await closedPort();
    const running = runSandboxCommand(['sandbox', '--port', '0', '--webhook-attempts', '2'], io);
    try {
      await io.waitFor('out', 'Press Ctrl+C');
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(io.out)?.[1] as string;
      const auth = {
        Authorization: 'Bearer sandbox_public_key:sandbox_private_key',
        'Content-Type': 'application/json',
      };
      const pay = async (webhook: string) => {
        const created = await rawRequest(`${url}/api/v2/generate_payment`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            amount: 500,
            success_link: 'https://s.example/ok',
            fail_link: 'https://s.example/ko',
            webhook,
          }),
        });
        const { payment_id, link } = JSON.parse(created.text).result as { payment_id: string; link: string };
        await rawRequest(`${link}/pay`, { method: 'POST' });
        return payment_id;
      };
      const p500 = await pay(`${receiver.url}/payments/webhook/v1.tok_secret_a`);
      const pDead = await pay(`http://127.0.0.1:${dead}/payments/webhook/v1.tok_secret_b`);
      const pFar = await pay('https://shop.example/payments/webhook/v1.tok_secret_c');
      const pOk = await pay(`${receiver.url}/payments/webhook/v1.tok_secret_d`);
      const lines = io.err.trimEnd().split('\n');
      expect(lines).toEqual([
        `webhook not delivered: payment ${p500} to ${receiver.url}/payments/webhook/…: answered 500 (2 attempts)`,
        expect.stringMatching(
          new RegExp(
            `^webhook not delivered: payment ${pDead} to http://127\\.0\\.0\\.1:${dead}/payments/webhook/…: ECONNREFUSED: .* \\(2 attempts\\)$`,
          ),
        ),
        `webhook not delivered: payment ${pFar} to https://shop.example/payments/webhook/…: not sent: the host is not a loopback one; allow it with the webhookAllowedHosts option (CLI: --webhook-allow-host) (0 attempts)`,
      ]);
      expect(io.err).not.toContain('tok_secret');
      expect(io.err).not.toContain(pOk);
    } finally {
      io.signals.emit('SIGINT');
      await running;
      await receiver.close();
    }
  });

  it('failedDeliveryLine', () => {
    expect(failedDeliveryLine({ paymentId: 'p1', url: 'http://h/…', attempts: 1, status: 404 })).toBe(
      'webhook not delivered: payment p1 to http://h/…: answered 404 (1 attempt)',
    );
  });
});
