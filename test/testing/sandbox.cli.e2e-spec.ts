import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import {
  CLI_DEFAULT_PORT,
  parseSandboxArgs,
  runSandboxCommand,
  SANDBOX_USAGE,
  SandboxUsageError,
} from '../../lib/testing/sandbox.command.js';
import { rawRequest, WebhookReceiver } from './sandbox.helpers.js';

describe('parseSandboxArgs', () => {
  it('parses the command with its defaults', () => {
    expect(parseSandboxArgs(['sandbox'])).toEqual({ command: 'sandbox', port: CLI_DEFAULT_PORT, host: '127.0.0.1' });
    expect(CLI_DEFAULT_PORT).toBe(4010);
  });

  it('parses every option, in both --flag value and --flag=value forms', () => {
    expect(
      parseSandboxArgs(['sandbox', '--port', '0', '--host=0.0.0.0', '--public-key', 'pk', '--private-key=sk']),
    ).toEqual({
      command: 'sandbox',
      port: 0,
      host: '0.0.0.0',
      publicKey: 'pk',
      privateKey: 'sk',
    });
    expect(parseSandboxArgs(['sandbox', '--port', '65535'])).toMatchObject({ port: 65535 });
  });

  it('parses the behaviour flags into start options', () => {
    expect(
      parseSandboxArgs([
        'sandbox',
        '--generate-answer',
        'minimal',
        '--webhook-method=GET',
        '--webhook-payment-id-in-url',
        'naive',
        '--webhook-attempts',
        '5',
        '--webhook-timeout-ms',
        '250',
        '--verify-rate-limit',
        '3/60',
      ]),
    ).toEqual({
      command: 'sandbox',
      port: CLI_DEFAULT_PORT,
      host: '127.0.0.1',
      generateAnswer: 'minimal',
      webhookMethod: 'GET',
      webhookPaymentIdInUrl: 'naive',
      webhookAttempts: 5,
      webhookTimeoutMs: 250,
      verifyRateLimit: { max: 3, windowMs: 60_000 },
    });
  });

  it('--help lists every behaviour flag', () => {
    for (const flag of [
      '--generate-answer <full|minimal>',
      '--webhook-method <POST|GET>',
      '--webhook-payment-id-in-url <append|naive|none>',
      '--webhook-attempts <n>',
      '--webhook-timeout-ms <ms>',
      '--verify-rate-limit <n>/<seconds>',
    ]) {
      expect(SANDBOX_USAGE).toContain(flag);
    }
  });

  it("the testing guide's flag table lists exactly the flags --help lists", async () => {
    const guide = await readFile(new URL('../../docs/testing.md', import.meta.url), 'utf8');
    expect(guide).toContain('| flag | default | does |');
    const table = guide.slice(guide.indexOf('| flag | default | does |'));
    const flagsIn = (text: string) => [...new Set(text.match(/(?<![\w-])--?[a-z][a-z-]*/g))].sort();
    const documented = flagsIn(table.split('\n\n')[0].replace(/^\| flag .*$/m, ''));
    expect(documented).toEqual(flagsIn(SANDBOX_USAGE.slice(SANDBOX_USAGE.indexOf('Options:'))));
    expect(documented).toContain('--verify-rate-limit');
  });

  it('recognises --help and -h anywhere', () => {
    expect(parseSandboxArgs(['--help'])).toEqual({ command: 'help' });
    expect(parseSandboxArgs(['sandbox', '-h'])).toEqual({ command: 'help' });
  });

  it.each([
    [[], 'missing command: sandbox'],
    [['serve'], 'unknown command: serve'],
    [['sandbox', 'extra'], 'unexpected argument: extra'],
    [['sandbox', '--port', 'abc'], '--port must be an integer from 0 to 65535, got "abc"'],
    [['sandbox', '--port', '65536'], '--port must be an integer from 0 to 65535, got "65536"'],
    [['sandbox', '--port', '-1'], /--port/],
    [['sandbox', '--host', ''], '--host must not be empty'],
    [['sandbox', '--bogus'], /bogus/],
    [['sandbox', '--port'], /port/],
    [['sandbox', '--generate-answer', 'short'], '--generate-answer must be one of full, minimal, got "short"'],
    [['sandbox', '--webhook-method', 'post'], '--webhook-method must be one of POST, GET, got "post"'],
    [
      ['sandbox', '--webhook-payment-id-in-url', 'query'],
      /--webhook-payment-id-in-url must be one of append, naive, none/,
    ],
    [['sandbox', '--webhook-method', 'GET', '--webhook-payment-id-in-url', 'none'], /cannot be none/],
    [['sandbox', '--webhook-attempts', '0'], '--webhook-attempts must be a positive integer, got "0"'],
    [['sandbox', '--webhook-timeout-ms', '1.5'], /--webhook-timeout-ms must be a positive integer/],
    [
      ['sandbox', '--verify-rate-limit', '5'],
      '--verify-rate-limit must be N/SECONDS with positive integers, e.g. 5/60, got "5"',
    ],
    [['sandbox', '--verify-rate-limit', '0/60'], /--verify-rate-limit/],
    [['sandbox', '--verify-rate-limit', '5/0'], /--verify-rate-limit/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseSandboxArgs(argv)).toThrow(SandboxUsageError);
    expect(() => parseSandboxArgs(argv)).toThrow(message);
  });
});

class CapturedIo {
  out = '';
  err = '';
  readonly signals = new EventEmitter();
  readonly stdout = { write: (text: string) => (this.out += text) };
  readonly stderr = { write: (text: string) => (this.err += text) };

  async waitFor(text: string): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!this.out.includes(text)) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${JSON.stringify(text)} in ${JSON.stringify(this.out)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

describe('runSandboxCommand', () => {
  it('prints usage for --help', async () => {
    const io = new CapturedIo();
    expect(await runSandboxCommand(['--help'], io)).toBe(0);
    expect(io.out).toBe(SANDBOX_USAGE);
    expect(SANDBOX_USAGE).toMatch(/^Usage: nestjs-payments sandbox \[options\]/);
  });

  it('prints the error and usage on stderr for bad arguments', async () => {
    const io = new CapturedIo();
    expect(await runSandboxCommand(['sandbox', '--port', 'x'], io)).toBe(1);
    expect(io.out).toBe('');
    expect(io.err).toBe(`nestjs-payments: --port must be an integer from 0 to 65535, got "x"\n\n${SANDBOX_USAGE}`);
  });

  it('serves until SIGINT, printing the URL and the sandbox-only keys', async () => {
    const io = new CapturedIo();
    const running = runSandboxCommand(['sandbox', '--port', '0'], io);
    await io.waitFor('Press Ctrl+C');
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(io.out)?.[1] as string;
    expect(io.out).toBe(
      `Payments sandbox listening on ${url}\n` +
        `  baseUrl:     ${url}\n` +
        `  publicKey:   sandbox_public_key\n` +
        `  privateKey:  sandbox_private_key  (sandbox-only test key, not a secret)\n` +
        `Press Ctrl+C to stop.\n`,
    );
    const res = await rawRequest(`${url}/api/v2/bindings/list?client_id=c`, {
      headers: { Authorization: 'Bearer sandbox_public_key:sandbox_private_key' },
    });
    expect(res.status).toBe(200);
    io.signals.emit('SIGINT');
    expect(await running).toBe(0);
    expect(io.out).toContain('Payments sandbox stopped.\n');
    expect(io.signals.listenerCount('SIGINT') + io.signals.listenerCount('SIGTERM')).toBe(0);
    await expect(rawRequest(url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('starts with the behaviour flags applied, over HTTP: minimal answer, GET webhooks, verify rate limit', async () => {
    const io = new CapturedIo();
    const receiver = await WebhookReceiver.start();
    const running = runSandboxCommand(
      [
        'sandbox',
        '--port',
        '0',
        '--generate-answer',
        'minimal',
        '--webhook-method',
        'GET',
        '--verify-rate-limit',
        '1/60',
        '--webhook-attempts',
        '1',
      ],
      io,
    );
    try {
      await io.waitFor('Press Ctrl+C');
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(io.out)?.[1] as string;
      expect(io.out).toContain(
        '  generate answer: minimal\n  webhook method: GET\n  webhook attempts: 1\n  verify rate limit: 1 calls per payment per 60 s\n',
      );
      const auth = { Authorization: 'Bearer sandbox_public_key:sandbox_private_key' };
      const created = await rawRequest(`${url}/api/v2/generate_payment`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          amount: 500,
          success_link: 'https://s.example/ok',
          fail_link: 'https://s.example/ko',
          webhook: `${receiver.url}/wh`,
        }),
      });
      const body = JSON.parse(created.text);
      expect(Object.keys(body.result)).toEqual(['payment_id', 'link']);
      await rawRequest(`${body.result.link}/pay`, { method: 'POST' });
      expect(receiver.received.map((r) => [r.method, r.url])).toEqual([
        ['GET', `/wh?payment_id=${body.result.payment_id}&status=SUCCESS`],
      ]);
      const verifyUrl = `${url}/api/v2/verify_payment/${body.result.payment_id}`;
      expect((await rawRequest(verifyUrl, { headers: auth })).status).toBe(200);
      const limited = await rawRequest(verifyUrl, { headers: auth });
      expect(limited.status).toBe(429);
      // The CLI runs on the real clock, so the wait left is at most the window, at least a second.
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    } finally {
      io.signals.emit('SIGINT');
      await running;
      await receiver.close();
    }
  });

  it('does not echo a private key given on the command line', async () => {
    const io = new CapturedIo();
    const running = runSandboxCommand(
      ['sandbox', '--port', '0', '--public-key', 'pk_cli', '--private-key', 'sk_cli_value'],
      io,
    );
    await io.waitFor('Press Ctrl+C');
    expect(io.out).toContain('  publicKey:   pk_cli\n');
    expect(io.out).toContain('  privateKey:  (as given with --private-key)\n');
    expect(io.out).not.toContain('sk_cli_value');
    io.signals.emit('SIGTERM');
    expect(await running).toBe(0);
  });

  it('exits 1 with a message when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const io = new CapturedIo();
      expect(await runSandboxCommand(['sandbox', '--port', String(port)], io)).toBe(1);
      expect(io.err).toContain(`nestjs-payments: cannot start the sandbox on 127.0.0.1:${port}: `);
      expect(io.err).toContain('EADDRINUSE');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('sandbox.cli executable', () => {
  /**
   * Transpiles lib/testing and the core files it imports (followed transitively) to plain ESM
   * JavaScript in a temp dir with no node_modules: the CLI must run on node built-ins alone.
   */
  async function buildCli(dir: string): Promise<string> {
    const root = path.resolve('lib');
    const files = (await readdir(path.join(root, 'testing')))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join('testing', f));
    await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
    for (let i = 0; i < files.length; i++) {
      const file = files[i];
      const source = await readFile(path.join(root, file), 'utf8');
      // Relative value imports (type-only ones are erased) bring their files along.
      for (const [, spec] of source.matchAll(/^(?:import|export) (?!type )[^'"]*?from '(\.{1,2}\/[^']+)\.js';$/gm)) {
        const dep = path.join(path.dirname(file), `${spec}.ts`);
        if (!files.includes(dep)) files.push(dep);
      }
      const { outputText } = ts.transpileModule(source, {
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2022,
          useDefineForClassFields: true,
        },
      });
      await mkdir(path.join(dir, path.dirname(file)), { recursive: true });
      await writeFile(path.join(dir, file.replace(/\.ts$/, '.js')), outputText);
    }
    return path.join(dir, 'testing', 'sandbox.cli.js');
  }

  it('runs as `node sandbox.cli.js sandbox` and stops cleanly on SIGTERM', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sandbox-cli-'));
    try {
      const cli = await buildCli(dir);
      expect((await readFile(cli, 'utf8')).startsWith('#!/usr/bin/env node\n')).toBe(true);
      const child = spawn(process.execPath, [cli, 'sandbox', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 5000;
      while (!out.includes('Press Ctrl+C') && Date.now() < deadline && child.exitCode === null)
        await new Promise((r) => setTimeout(r, 10));
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      expect({ url, err }).toEqual({ url: expect.stringMatching(/^http:/), err: '' });
      const res = await rawRequest(`${url}/sandbox/success`);
      expect(res.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('Payments sandbox stopped.');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
