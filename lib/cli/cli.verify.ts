/** `nestjs-payments verify <paymentId>`: the service's answer for one payment, for on-call use. */
import { parseArgs } from 'node:util';
import { PaymentsClient, PaymentsError, SecretRedactor } from '../core/index.js';
import { describeProblem, QUIET_LOGGER, readCliConfig } from './cli.config.js';
import { CliUsageError, printable, type CliIo } from './cli.io.js';

/** Usage of `verify`. */
export const VERIFY_USAGE = `Usage: nestjs-payments verify <paymentId>

Asks the service for one payment (verify_payment, a read) with the keys of the
PAYMENTS_* variables and prints the verified payment as JSON. Runs no handler
and changes nothing. Exits 1 when the service refuses or cannot be reached.

Options:
  -h, --help  print this help
`;

/**
 * Runs `verify` with its arguments (after the command name).
 * @returns 0 once the payment is printed, 1 when the call failed, 2 for bad variables
 */
export async function verifyCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: { help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  if (parsed.values.help) {
    io.stdout.write(VERIFY_USAGE);
    return 0;
  }
  const [paymentId, extra] = parsed.positionals;
  if (paymentId === undefined) throw new CliUsageError('verify needs a payment id: nestjs-payments verify <paymentId>');
  if (extra !== undefined) throw new CliUsageError(`unexpected argument: ${extra}`);

  // Only the connection matters here: a bad webhook variable must not stop an on-call read.
  const config = readCliConfig(io.env, QUIET_LOGGER);
  if (!config.connection) {
    io.stderr.write(`nestjs-payments: ${config.connectionProblems.map(describeProblem).join('\n  ')}\n`);
    return 2;
  }
  const client = new PaymentsClient(config.connection);
  // The client redacts its keys, but knows the webhook secret only when every variable is valid;
  // what is printed is redacted once more with every secret the variables hold.
  const { publicKey, privateKey } = config.connection;
  const redactor = new SecretRedactor({
    privateKey,
    publicKey,
    webhookSecret: config.options?.webhook?.secret ?? io.env.PAYMENTS_WEBHOOK_SECRET,
  });
  try {
    const payment = await client.verifyPayment(paymentId);
    io.stdout.write(`${redactor.text(JSON.stringify(payment, null, 2))}\n`);
    return 0;
  } catch (error) {
    const message =
      error instanceof PaymentsError ? error.message : error instanceof Error ? error.message : String(error);
    io.stderr.write(`nestjs-payments: ${redactor.text(printable(message))}\n`);
    return 1;
  } finally {
    await client.close();
  }
}
