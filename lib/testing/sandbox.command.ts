/**
 * The `nestjs-payments sandbox` command: argument parsing and the run loop, kept apart from
 * the executable entry (`sandbox.cli.ts`) so tests can import them without starting anything.
 */
import { parseArgs } from 'node:util';
import { PaymentsSandbox, SANDBOX_PRIVATE_KEY } from './sandbox.server.js';

/** Port of the command's sandbox when `--port` is not given: fixed, so bookmarks and configs keep working. */
export const CLI_DEFAULT_PORT = 4010;

/** Usage text printed by `--help` and on a usage error. */
export const SANDBOX_USAGE = `Usage: nestjs-payments sandbox [options]

Starts the payment service sandbox (API, checkout page, webhooks) until Ctrl+C.

Options:
  --port <port>         port to listen on, 0 for a random free port (default ${CLI_DEFAULT_PORT})
  --host <host>         address to listen on (default 127.0.0.1)
  --public-key <key>    public key to accept (default sandbox_public_key)
  --private-key <key>   private key to accept (default sandbox_private_key)
  -h, --help            print this help
`;

/** Parsed command line. */
export type SandboxCliArgs =
  | { readonly command: 'help' }
  | { readonly command: 'sandbox'; readonly port: number; readonly host: string; readonly publicKey?: string; readonly privateKey?: string };

/** A command line that cannot be run; its message says why. */
export class SandboxUsageError extends Error {
  override readonly name = 'SandboxUsageError';
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value === '') throw new SandboxUsageError(`${flag} must not be empty`);
  return value;
}

/**
 * Parses the arguments after the executable name, e.g. `['sandbox', '--port', '4010']`.
 *
 * @throws SandboxUsageError for an unknown option, a missing or unknown command, or a bad port
 */
export function parseSandboxArgs(argv: readonly string[]): SandboxCliArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'public-key': { type: 'string' },
        'private-key': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new SandboxUsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { command: 'help' };
  if (positionals.length === 0) throw new SandboxUsageError('missing command: sandbox');
  if (positionals[0] !== 'sandbox') throw new SandboxUsageError(`unknown command: ${positionals[0]}`);
  if (positionals.length > 1) throw new SandboxUsageError(`unexpected argument: ${positionals[1]}`);

  let port = CLI_DEFAULT_PORT;
  if (values.port !== undefined) {
    port = /^[0-9]{1,5}$/.test(values.port) ? Number(values.port) : NaN;
    if (!(port >= 0 && port <= 65535)) throw new SandboxUsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}`);
  }
  const host = nonEmpty('--host', values.host) ?? '127.0.0.1';
  const publicKey = nonEmpty('--public-key', values['public-key']);
  const privateKey = nonEmpty('--private-key', values['private-key']);
  return {
    command: 'sandbox',
    port,
    host,
    ...(publicKey !== undefined && { publicKey }),
    ...(privateKey !== undefined && { privateKey }),
  };
}

/** Where the command writes and which signals stop it; the process's own by default, replaceable in tests. */
export interface SandboxCommandIo {
  /** Receives the banner and usage. */
  readonly stdout: { write(text: string): unknown };
  /** Receives errors. */
  readonly stderr: { write(text: string): unknown };
  /** Emits `SIGINT` / `SIGTERM`. */
  readonly signals: {
    once(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
    off(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  };
}

/**
 * Runs the command: prints usage, or starts a sandbox, prints its URL and keys, and resolves
 * after the first SIGINT or SIGTERM once the sandbox is closed.
 *
 * @returns the exit code: 0 after a clean stop or `--help`, 1 on a usage or start error
 */
export async function runSandboxCommand(argv: readonly string[], io: SandboxCommandIo = { stdout: process.stdout, stderr: process.stderr, signals: process }): Promise<number> {
  let args: SandboxCliArgs;
  try {
    args = parseSandboxArgs(argv);
  } catch (error) {
    io.stderr.write(`nestjs-payments: ${(error as Error).message}\n\n${SANDBOX_USAGE}`);
    return 1;
  }
  if (args.command === 'help') {
    io.stdout.write(SANDBOX_USAGE);
    return 0;
  }

  let sandbox: PaymentsSandbox;
  try {
    sandbox = await PaymentsSandbox.start({ port: args.port, host: args.host, publicKey: args.publicKey, privateKey: args.privateKey });
  } catch (error) {
    io.stderr.write(`nestjs-payments: cannot start the sandbox on ${args.host}:${args.port}: ${(error as Error).message}\n`);
    return 1;
  }

  // The default private key is the sandbox's own published test key, so printing it is harmless
  // and saves a trip to the docs; a key chosen on the command line is not echoed back.
  const privateKeyLine =
    args.privateKey === undefined ? `${SANDBOX_PRIVATE_KEY}  (sandbox-only test key, not a secret)` : '(as given with --private-key)';
  io.stdout.write(
    `Payments sandbox listening on ${sandbox.url}\n` +
      `  baseUrl:     ${sandbox.url}\n` +
      `  publicKey:   ${sandbox.publicKey}\n` +
      `  privateKey:  ${privateKeyLine}\n` +
      `Press Ctrl+C to stop.\n`,
  );

  await new Promise<void>((resolve) => {
    const stop = (): void => {
      io.signals.off('SIGINT', stop);
      io.signals.off('SIGTERM', stop);
      resolve();
    };
    io.signals.once('SIGINT', stop);
    io.signals.once('SIGTERM', stop);
  });
  await sandbox.close();
  io.stdout.write('Payments sandbox stopped.\n');
  return 0;
}
