import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { CLI_USAGE, runCli, SANDBOX_COMMAND_USAGE } from '../../lib/cli/cli.commands.js';
import { DOCTOR_USAGE, isLoopback, parseDoctorArgs } from '../../lib/cli/cli.doctor.js';
import { printable, safeUrl, type CliIo } from '../../lib/cli/cli.io.js';
import { OUTCOMES_USAGE } from '../../lib/cli/cli.outcomes.js';
import { VERIFY_USAGE } from '../../lib/cli/cli.verify.js';
import { SANDBOX_USAGE } from '../../lib/testing/sandbox.command.js';

class CapturedIo implements CliIo {
  out = '';
  err = '';
  readonly signals = new EventEmitter();
  readonly clock = { now: () => Date.parse('2026-11-28T14:30:05.123Z') };
  readonly stdout = { write: (text: string) => (this.out += text) };
  readonly stderr = { write: (text: string) => (this.err += text) };
  constructor(readonly env: Record<string, string | undefined> = {}) {}
}

describe('runCli: one executable, several commands', () => {
  it.each([[['help']], [['--help']], [['-h']]])('%j prints the commands', async (argv) => {
    const io = new CapturedIo();
    expect(await runCli(argv, io)).toBe(0);
    expect(io.out).toBe(CLI_USAGE);
    for (const command of [
      'sandbox',
      'doctor [--probe]',
      'verify <paymentId>',
      'outcomes [--failed]',
      'help [command]',
    ])
      expect(CLI_USAGE).toContain(`  ${command}`);
  });

  it.each([
    ['sandbox', SANDBOX_COMMAND_USAGE],
    ['doctor', DOCTOR_USAGE],
    ['verify', VERIFY_USAGE],
    ['outcomes', OUTCOMES_USAGE],
  ])('help %s and %s --help print its usage', async (command, usage) => {
    for (const argv of [
      ['help', command],
      [command, '--help'],
    ]) {
      const io = new CapturedIo();
      expect(await runCli(argv, io)).toBe(0);
      expect(io.out).toBe(usage);
    }
  });

  it('refuses a missing or unknown command with the usage on stderr', async () => {
    let io = new CapturedIo();
    expect(await runCli([], io)).toBe(1);
    expect(io.err).toBe(`nestjs-payments: missing command\n\n${CLI_USAGE}`);
    io = new CapturedIo();
    expect(await runCli(['serve\u001b[31m'], io)).toBe(1);
    expect(io.err).toBe(`nestjs-payments: unknown command: serve?[31m\n\n${CLI_USAGE}`);
    io = new CapturedIo();
    expect(await runCli(['toString'], io)).toBe(1);
  });

  it("a command's usage error prints that command's usage", async () => {
    for (const [argv, message, usage] of [
      [['doctor', '--bogus'], /--bogus/, DOCTOR_USAGE],
      [['doctor', 'extra'], /unexpected argument: extra/, DOCTOR_USAGE],
      [['verify'], /verify needs a payment id/, VERIFY_USAGE],
      [['verify', 'a', 'b'], /unexpected argument: b/, VERIFY_USAGE],
      [['outcomes', '--limit', '0'], /--limit must be an integer from 1 to 10000/, OUTCOMES_USAGE],
      [['sandbox', '--port', 'x'], /--port must be an integer/, SANDBOX_USAGE],
    ] as const) {
      const io = new CapturedIo();
      expect(await runCli(argv, io)).toBe(1);
      expect(io.err).toMatch(message);
      expect(io.err.endsWith(usage)).toBe(true);
    }
  });

  it('outcomes without a store variable says which to set (exit 2)', async () => {
    const io = new CapturedIo();
    expect(await runCli(['outcomes', '--failed'], io)).toBe(2);
    expect(io.err).toContain('set one of PAYMENTS_REDIS_URL or PAYMENTS_DATABASE_URL');
  });

  it('verify without keys names the variables to set (exit 2)', async () => {
    const io = new CapturedIo({ PAYMENTS_BASE_URL: 'https://pay.example' });
    expect(await runCli(['verify', 'pay_1'], io)).toBe(2);
    expect(io.err).toContain('PAYMENTS_PUBLIC_KEY (publicKey) is required');
    expect(io.err).toContain('PAYMENTS_PRIVATE_KEY (privateKey) is required');
  });

  it('parses doctor flags', () => {
    expect(parseDoctorArgs([])).toEqual({ help: false, probe: false, json: false });
    expect(parseDoctorArgs(['--probe', '--json'])).toEqual({ help: false, probe: true, json: true });
    expect(parseDoctorArgs(['-h'])).toEqual({ help: true });
  });
});

describe('CLI output helpers', () => {
  it('printable turns control characters (line breaks, escapes, separators) into ?', () => {
    expect(printable('pay_1\r\n[ERROR] forged\u001b[2J\u2028x\u0085')).toBe('pay_1??[ERROR] forged?[2J?x?');
  });

  it('safeUrl drops credentials, query and fragment', () => {
    expect(safeUrl('redis://:pw@127.0.0.1:6379/0?password=x#y')).toBe('redis://127.0.0.1:6379/0');
    expect(safeUrl('postgres://u:pw@db:5432/shop')).toBe('postgres://db:5432/shop');
    expect(safeUrl('not a url')).toBe('(not a URL)');
  });

  it('isLoopback accepts only this machine', () => {
    for (const url of ['http://127.0.0.1:1', 'http://127.8.9.10', 'http://localhost:3000', 'http://[::1]:4010'])
      expect(isLoopback(new URL(url))).toBe(true);
    for (const url of ['http://10.0.0.1', 'http://localhost.example', 'http://127.0.0.1.example', 'http://[::2]'])
      expect(isLoopback(new URL(url))).toBe(false);
  });
});
