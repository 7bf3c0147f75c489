/**
 * The `nestjs-payments sandbox` command: argument parsing and the run loop, kept apart from
 * the executable entry (`sandbox.cli.ts`) so tests can import them without starting anything.
 */
import { parseArgs } from 'node:util';
import { SANDBOX_PRIVATE_KEY } from './sandbox.options.js';
import { PaymentsSandbox } from './sandbox.server.js';
import type {
  SandboxGenerateAnswer,
  SandboxPaymentIdInUrl,
  SandboxRateLimit,
  SandboxWebhookFailure,
  SandboxWebhookMethod,
} from './sandbox.types.js';

/** Port of the command's sandbox when `--port` is not given: fixed, so bookmarks and configs keep working. */
export const CLI_DEFAULT_PORT = 4010;

/** Usage text printed by `--help` and on a usage error. */
export const SANDBOX_USAGE = `Usage: nestjs-payments sandbox [options]

Starts the payment service sandbox (API, checkout page, webhooks) until Ctrl+C.

Options:
  --port <port>         port to listen on, 0 for a random free port (default ${CLI_DEFAULT_PORT})
  --host <host>         address to listen on (default 127.0.0.1); beyond loopback
                        only with a --private-key of your own, and with a warning
  --public-key <key>    public key to accept (default sandbox_public_key)
  --private-key <key>   private key to accept (default sandbox_private_key)
  --generate-answer <full|minimal>
                        generate_payment answer: the documented full one, or only
                        {result:{payment_id,link}} as two doc pages show (default full)
  --webhook-method <POST|GET>
                        how webhooks are sent: JSON body, or payment_id and status
                        in the query (default POST)
  --webhook-payment-id-in-url <append|naive|none>
                        add payment_id to the webhook URL with ? or &, always with a
                        second ? like a careless service, or not at all (default append)
  --webhook-attempts <n>
                        total webhook attempts per outcome, first included (default 3)
  --webhook-timeout-ms <ms>
                        timeout of one webhook attempt (default 5000)
  --webhook-allow-host <host>
                        also send webhooks to this host (repeatable; * for any);
                        by default only to loopback hosts
  --verify-rate-limit <n>/<seconds>
                        answer 429 with Retry-After once a payment id had n
                        verify_payment calls within that many seconds (default: no limit)
  -h, --help            print this help
`;

/** Parsed command line of `sandbox`: options absent when their flag was not given (the sandbox's defaults apply). */
export interface SandboxCliRun {
  readonly command: 'sandbox';
  readonly port: number;
  readonly host: string;
  readonly publicKey?: string;
  readonly privateKey?: string;
  readonly generateAnswer?: SandboxGenerateAnswer;
  readonly webhookMethod?: SandboxWebhookMethod;
  readonly webhookPaymentIdInUrl?: SandboxPaymentIdInUrl;
  readonly webhookAttempts?: number;
  readonly webhookTimeoutMs?: number;
  readonly verifyRateLimit?: SandboxRateLimit;
  readonly webhookAllowedHosts?: readonly string[];
}

/** Parsed command line. */
export type SandboxCliArgs = { readonly command: 'help' } | SandboxCliRun;

/** A command line that cannot be run; its message says why. */
export class SandboxUsageError extends Error {
  override readonly name = 'SandboxUsageError';
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value === '') throw new SandboxUsageError(`${flag} must not be empty`);
  return value;
}

function choice<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new SandboxUsageError(`${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return value as T;
}

function positive(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^[0-9]{1,9}$/.test(value) ? Number(value) : NaN;
  if (!(n > 0)) throw new SandboxUsageError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

/** `N/SECONDS`, e.g. `5/60`: at most N verify calls per payment id per SECONDS seconds. */
function rateLimit(flag: string, value: string | undefined): SandboxRateLimit | undefined {
  if (value === undefined) return undefined;
  const match = /^([0-9]{1,9})\/([0-9]{1,9})$/.exec(value);
  const max = match ? Number(match[1]) : 0;
  const seconds = match ? Number(match[2]) : 0;
  if (!(max > 0 && seconds > 0))
    throw new SandboxUsageError(
      `${flag} must be N/SECONDS with positive integers, e.g. 5/60, got ${JSON.stringify(value)}`,
    );
  return { max, windowMs: seconds * 1000 };
}

/**
 * Parses the arguments after the executable name, e.g. `['sandbox', '--port', '4010']`.
 *
 * @throws SandboxUsageError for an unknown option, a missing or unknown command, or a bad value
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
        'generate-answer': { type: 'string' },
        'webhook-method': { type: 'string' },
        'webhook-payment-id-in-url': { type: 'string' },
        'webhook-attempts': { type: 'string' },
        'webhook-timeout-ms': { type: 'string' },
        'verify-rate-limit': { type: 'string' },
        'webhook-allow-host': { type: 'string', multiple: true },
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
    if (!(port >= 0 && port <= 65535))
      throw new SandboxUsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}`);
  }
  const host = nonEmpty('--host', values.host) ?? '127.0.0.1';
  const publicKey = nonEmpty('--public-key', values['public-key']);
  const privateKey = nonEmpty('--private-key', values['private-key']);
  const generateAnswer = choice<SandboxGenerateAnswer>('--generate-answer', values['generate-answer'], [
    'full',
    'minimal',
  ]);
  const webhookMethod = choice<SandboxWebhookMethod>('--webhook-method', values['webhook-method'], ['POST', 'GET']);
  const webhookPaymentIdInUrl = choice<SandboxPaymentIdInUrl>(
    '--webhook-payment-id-in-url',
    values['webhook-payment-id-in-url'],
    ['append', 'naive', 'none'],
  );
  if (webhookMethod === 'GET' && webhookPaymentIdInUrl === 'none') {
    throw new SandboxUsageError(
      '--webhook-method GET carries payment_id in the URL, so --webhook-payment-id-in-url cannot be none',
    );
  }
  const webhookAttempts = positive('--webhook-attempts', values['webhook-attempts']);
  const webhookTimeoutMs = positive('--webhook-timeout-ms', values['webhook-timeout-ms']);
  const verifyRateLimit = rateLimit('--verify-rate-limit', values['verify-rate-limit']);
  const webhookAllowedHosts = values['webhook-allow-host']?.map((h) => nonEmpty('--webhook-allow-host', h) ?? '');
  return {
    command: 'sandbox',
    port,
    host,
    ...(publicKey !== undefined && { publicKey }),
    ...(privateKey !== undefined && { privateKey }),
    ...(generateAnswer !== undefined && { generateAnswer }),
    ...(webhookMethod !== undefined && { webhookMethod }),
    ...(webhookPaymentIdInUrl !== undefined && { webhookPaymentIdInUrl }),
    ...(webhookAttempts !== undefined && { webhookAttempts }),
    ...(webhookTimeoutMs !== undefined && { webhookTimeoutMs }),
    ...(verifyRateLimit !== undefined && { verifyRateLimit }),
    ...(webhookAllowedHosts !== undefined && { webhookAllowedHosts }),
  };
}

/** One banner line per behaviour flag given, so the person reading the terminal sees what differs from the defaults. */
function behaviourLines(args: SandboxCliRun): string {
  const lines: string[] = [];
  if (args.generateAnswer !== undefined) lines.push(`generate answer: ${args.generateAnswer}`);
  if (args.webhookMethod !== undefined) lines.push(`webhook method: ${args.webhookMethod}`);
  if (args.webhookPaymentIdInUrl !== undefined) lines.push(`webhook payment_id in URL: ${args.webhookPaymentIdInUrl}`);
  if (args.webhookAttempts !== undefined) lines.push(`webhook attempts: ${args.webhookAttempts}`);
  if (args.webhookTimeoutMs !== undefined) lines.push(`webhook timeout: ${args.webhookTimeoutMs} ms`);
  if (args.verifyRateLimit !== undefined)
    lines.push(
      `verify rate limit: ${args.verifyRateLimit.max} calls per payment per ${args.verifyRateLimit.windowMs / 1000} s`,
    );
  if (args.webhookAllowedHosts !== undefined) lines.push(`webhooks also to: ${args.webhookAllowedHosts.join(', ')}`);
  return lines.map((line) => `  ${line}\n`).join('');
}

/** The line the command prints for a webhook delivery that failed: payment, URL without its token, status or error. */
export function failedDeliveryLine(failure: SandboxWebhookFailure): string {
  const why = failure.status !== undefined ? `answered ${failure.status}` : (failure.error ?? 'no answer');
  const tries = failure.attempts === 1 ? '1 attempt' : `${failure.attempts} attempts`;
  return `webhook not delivered: payment ${failure.paymentId} to ${failure.url}: ${why} (${tries})`;
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
export async function runSandboxCommand(
  argv: readonly string[],
  io: SandboxCommandIo = { stdout: process.stdout, stderr: process.stderr, signals: process },
): Promise<number> {
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
    const { command: _command, ...options } = args;
    sandbox = await PaymentsSandbox.start({
      ...options,
      onWarning: (message) => io.stderr.write(`${message}\n`),
      onWebhookFailed: (failure) => io.stderr.write(`${failedDeliveryLine(failure)}\n`),
    });
  } catch (error) {
    io.stderr.write(
      `nestjs-payments: cannot start the sandbox on ${args.host}:${args.port}: ${(error as Error).message}\n`,
    );
    return 1;
  }

  // The default private key is the sandbox's own published test key, so printing it is harmless
  // and saves a trip to the docs; a key chosen on the command line is not echoed back.
  const privateKeyLine =
    args.privateKey === undefined
      ? `${SANDBOX_PRIVATE_KEY}  (sandbox-only test key, not a secret)`
      : '(as given with --private-key)';
  io.stdout.write(
    `Payments sandbox listening on ${sandbox.url}\n` +
      `  baseUrl:     ${sandbox.url}\n` +
      `  publicKey:   ${sandbox.publicKey}\n` +
      `  privateKey:  ${privateKeyLine}\n` +
      behaviourLines(args) +
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
