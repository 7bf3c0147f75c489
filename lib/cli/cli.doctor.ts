/**
 * `nestjs-payments doctor`: checks a set-up against the service before a customer pays, with the
 * variables the app runs with. Each check is a line, ✔ or ✖ (and the fix), or – when it does not
 * apply; the exit code is 1 when any check failed.
 */
import { parseArgs } from 'node:util';
import { CLI_STORE_ENV, QUIET_LOGGER, readCliConfig } from './cli.config.js';
import {
  checkBaseUrl,
  checkKeys,
  checkProbe,
  checkSecret,
  checkStores,
  checkVariables,
  checkWebhookUrl,
} from './cli.checks.js';
import { LABELS, type DoctorOptions, type DoctorReport, type DoctorStatus } from './cli.report.js';
import { CliUsageError, type CliIo } from './cli.io.js';

/** Usage of `doctor`. */
export const DOCTOR_USAGE = `Usage: nestjs-payments doctor [--probe] [--json]

Checks the set-up the PAYMENTS_* variables describe, as the module reads them:
the variables, the base URL, the keys (one read of a made-up payment, never a
payment), the webhook public URL and secret, the store (${CLI_STORE_ENV.redisUrl},
${CLI_STORE_ENV.databaseUrl}) and, with --probe, that a signed probe sent to the
public URL reaches the app's webhook route. Exits 1 when a check fails.

Options:
  --probe     send a signed probe to PAYMENTS_WEBHOOK_PUBLIC_URL (the app must be running)
  --json      print the report as JSON (never with a key or the secret)
  -h, --help  print this help
`;

export {
  isLoopback,
  type DoctorCheck,
  type DoctorCheckId,
  type DoctorOptions,
  type DoctorReport,
  type DoctorStatus,
} from './cli.report.js';

/** Runs every check on the variables in `env`; never throws for a bad set-up (that is a failed check). */
export async function runDoctor(env: CliIo['env'], options: DoctorOptions): Promise<DoctorReport> {
  const config = readCliConfig(env, QUIET_LOGGER);
  const variables = checkVariables(config, env);
  const baseUrl = await checkBaseUrl(env, config);
  const keys = await checkKeys(config, baseUrl);
  const webhookUrl = checkWebhookUrl(env, config);
  const secret = checkSecret(env, config);
  const stores = await checkStores(env);
  const probe = await checkProbe(env, webhookUrl, secret, options.probe);
  const checks = [variables, baseUrl, keys, webhookUrl, secret, ...stores, probe];
  return { ok: checks.every((c) => c.status !== 'fail'), checks };
}

const MARK: Readonly<Record<DoctorStatus, string>> = { ok: '✔', fail: '✖', skip: '–' };

/** The report as lines: `✔ keys: ...`, and under a failure `  fix: ...`. */
export function formatDoctorReport(report: DoctorReport): string {
  const lines = report.checks.flatMap((c) => [
    `${MARK[c.status]} ${LABELS[c.id]}: ${c.message}`,
    ...(c.fix ? [`    fix: ${c.fix}`] : []),
  ]);
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  lines.push('', failed === 0 ? 'All checks passed.' : `${failed} check(s) failed.`);
  return `${lines.join('\n')}\n`;
}

/** Parses `doctor`'s arguments (after the command name). */
export function parseDoctorArgs(
  argv: readonly string[],
): { help: true } | { help: false; probe: boolean; json: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: { probe: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  if (parsed.values.help) return { help: true };
  if (parsed.positionals.length > 0) throw new CliUsageError(`unexpected argument: ${parsed.positionals[0]}`);
  return { help: false, probe: parsed.values.probe === true, json: parsed.values.json === true };
}

/**
 * Runs `doctor` with its arguments (after the command name).
 * @returns 0 when every check passed or did not apply, 1 when one failed
 */
export async function doctorCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const args = parseDoctorArgs(argv);
  if (args.help) {
    io.stdout.write(DOCTOR_USAGE);
    return 0;
  }
  const report = await runDoctor(io.env, { probe: args.probe });
  io.stdout.write(args.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
  return report.ok ? 0 : 1;
}
