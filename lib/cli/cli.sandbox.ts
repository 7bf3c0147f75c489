/**
 * `nestjs-payments sandbox pay|fail|preauthorize|expire <paymentId>`: settles a payment of a
 * running sandbox from the shell, through its control route (`sandbox.control.ts`), as its
 * checkout page's buttons do: the webhook goes to the app, and the command says what happened.
 */
import { parseArgs } from 'node:util';
import { CONTROL_PATH, SANDBOX_ACTIONS, type SandboxAction } from '../testing/sandbox.control.js';
import { CLI_DEFAULT_PORT } from '../testing/sandbox.command.js';
import { PAYMENTS_ENV } from '../nest/payments.config.js';
import { CliUsageError, printable, safeUrl, type CliIo } from './cli.io.js';

/** Usage of the sandbox's actions. */
export const SANDBOX_ACTION_USAGE = `Usage: nestjs-payments sandbox <action> <paymentId> [--url <url>]

Settles a pending payment of a running sandbox (nestjs-payments sandbox), as
its checkout page does, and delivers the outcome's webhook to the app:
  pay           the customer pays: SUCCESS (PREAUTH_SUCCESS for a pre-authorization)
  fail          the customer declines: FAILURE
  preauthorize  the amount of a pre-authorization is held: PREAUTH_SUCCESS
                (refused for a standard payment)
  expire        the checkout session ends unpaid: EXPIRED (no webhook is sent)
Exits 0 once settled and the webhook delivered (or none to send), 1 otherwise.

Options:
  --url <url>   the sandbox's address (default: ${PAYMENTS_ENV.baseUrl} when set,
                else http://127.0.0.1:${CLI_DEFAULT_PORT})
  -h, --help    print this help
`;

/** Whether the arguments after `sandbox` name an action rather than the server's options. */
export function isSandboxAction(word: string | undefined): word is SandboxAction {
  return (SANDBOX_ACTIONS as readonly string[]).includes(word ?? '');
}

/** What the control route answers (JSON). */
interface ControlAnswer {
  paymentId?: string;
  state?: string;
  status?: string;
  delivered?: boolean;
  attempts?: number;
  lastStatus?: number;
  webhookError?: string;
  error?: string;
  message?: string;
}

/** The line printed for a settled payment, and whether the command succeeded. */
export function settledLine(answer: ControlAnswer): { line: string; ok: boolean } {
  const head = `payment ${printable(answer.paymentId)}: ${printable(answer.state)} (verify now answers ${printable(answer.status)})`;
  if (!answer.attempts)
    return {
      line: `${head}; no webhook sent${answer.status === 'EXPIRED' ? ' (none on expiry)' : ' (the payment has no webhook URL)'}`,
      ok: true,
    };
  const attempts = `${answer.attempts} attempt${answer.attempts === 1 ? '' : 's'}`;
  if (answer.delivered)
    return { line: `${head}; webhook delivered (HTTP ${answer.lastStatus ?? '?'}, ${attempts})`, ok: true };
  const why =
    answer.lastStatus !== undefined
      ? `last answer HTTP ${answer.lastStatus}`
      : printable(answer.webhookError ?? 'no answer');
  return {
    line: `${head}; webhook NOT delivered after ${attempts} (${why}): is the app running at its webhook URL?`,
    ok: false,
  };
}

/**
 * Runs `sandbox <action> <paymentId>` (the arguments after `sandbox`).
 * @returns 0 once settled (webhook delivered, or none to send), 1 otherwise
 */
export async function sandboxActionCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: { url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  if (parsed.values.help) {
    io.stdout.write(SANDBOX_ACTION_USAGE);
    return 0;
  }
  const [action, paymentId, extra] = parsed.positionals;
  if (!isSandboxAction(action)) throw new CliUsageError(`unknown sandbox action: ${action ?? '(none)'}`);
  if (paymentId === undefined || paymentId === '')
    throw new CliUsageError(`sandbox ${action} needs a payment id: nestjs-payments sandbox ${action} <paymentId>`);
  if (extra !== undefined) throw new CliUsageError(`unexpected argument: ${extra}`);
  const base = parsed.values.url ?? io.env[PAYMENTS_ENV.baseUrl] ?? `http://127.0.0.1:${CLI_DEFAULT_PORT}`;
  let target: URL;
  try {
    target = new URL(`${CONTROL_PATH}/${encodeURIComponent(paymentId)}/${action}`, base);
  } catch {
    throw new CliUsageError(`--url must be the sandbox's absolute URL, e.g. http://127.0.0.1:${CLI_DEFAULT_PORT}`);
  }

  let response: Response;
  try {
    // No timeout of our own: the sandbox answers once its webhook attempts are over.
    response = await fetch(target, { method: 'POST', redirect: 'manual' });
  } catch {
    io.stderr.write(
      `nestjs-payments: no sandbox answers at ${safeUrl(base)}: start one with npx nestjs-payments sandbox, or give its address with --url\n`,
    );
    return 1;
  }
  let answer: ControlAnswer | undefined;
  try {
    answer = (await response.json()) as ControlAnswer;
  } catch {
    answer = undefined;
  }
  if (answer === undefined || (response.status === 404 && answer.error !== 'unknown payment')) {
    io.stderr.write(
      `nestjs-payments: ${safeUrl(base)} is not a nestjs-payments sandbox (HTTP ${response.status} to its control route)\n`,
    );
    return 1;
  }
  if (!response.ok) {
    io.stderr.write(`nestjs-payments: ${printable(answer.message ?? answer.error ?? `HTTP ${response.status}`)}\n`);
    return 1;
  }
  const { line, ok } = settledLine(answer);
  (ok ? io.stdout : io.stderr).write(`${ok ? '' : 'nestjs-payments: '}${line}\n`);
  return ok ? 0 : 1;
}
