import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { CLI_USAGE, runCli } from '../../lib/cli/cli.commands.js';
import { INBOX_DDL_USAGE } from '../../lib/cli/cli.inbox.js';
import type { CliIo } from '../../lib/cli/cli.io.js';
import { inboxDdl } from '../../lib/store/index.js';

class CapturedIo implements CliIo {
  out = '';
  err = '';
  readonly env = {};
  readonly signals = new EventEmitter();
  readonly stdout = { write: (text: string) => (this.out += text) };
  readonly stderr = { write: (text: string) => (this.err += text) };
}

describe('nestjs-payments inbox-ddl', () => {
  it.each([
    [[], inboxDdl('postgres')],
    [['--dialect', 'postgres'], inboxDdl('postgres')],
    [['--dialect', 'mysql'], inboxDdl('mysql')],
    [['--dialect=mysql', '--table', 'shop_inbox'], inboxDdl('mysql', 'shop_inbox')],
  ])('%j prints the DDL', async (args, ddl) => {
    const io = new CapturedIo();
    expect(await runCli(['inbox-ddl', ...args], io)).toBe(0);
    expect(io.out).toBe(ddl);
    expect(io.err).toBe('');
  });

  it.each([
    [['--dialect', 'oracle'], '--dialect must be postgres or mysql, not oracle'],
    [['--table', 'a b'], 'plain SQL name'],
    [['--nope'], 'Unknown option'],
  ])('%j is a usage error', async (args, message) => {
    const io = new CapturedIo();
    expect(await runCli(['inbox-ddl', ...args], io)).toBe(1);
    expect(io.err).toContain(message);
    expect(io.err).toContain(INBOX_DDL_USAGE);
  });

  it('is listed in the help, and help inbox-ddl prints its usage', async () => {
    expect(CLI_USAGE).toContain('  inbox-ddl [--dialect mysql]');
    const io = new CapturedIo();
    expect(await runCli(['help', 'inbox-ddl'], io)).toBe(0);
    expect(io.out).toBe(INBOX_DDL_USAGE);
  });
});
