/**
 * The commands of the `nestjs-payments` executable and their dispatch, kept apart from the
 * executable entry (`cli.main.ts`) so tests can run them in-process.
 */
import { runSandboxCommand, SANDBOX_USAGE } from '../testing/sandbox.command.js';
import { doctorCommand, DOCTOR_USAGE } from './cli.doctor.js';
import { inboxDdlCommand, INBOX_DDL_USAGE } from './cli.inbox.js';
import { CliUsageError, printable, processIo, type CliIo } from './cli.io.js';
import { outcomesCommand, OUTCOMES_USAGE } from './cli.outcomes.js';
import { isSandboxAction, sandboxActionCommand, SANDBOX_ACTION_USAGE } from './cli.sandbox.js';
import { verifyCommand, VERIFY_USAGE } from './cli.verify.js';

/** Usage of the executable. */
export const CLI_USAGE = `Usage: nestjs-payments <command> [options]

Commands:
  sandbox             run the payment service sandbox until Ctrl+C
  sandbox pay|fail|preauthorize|expire <paymentId>
                      settle a payment of a running sandbox (its webhook is sent)
  doctor [--probe]    check the set-up of the PAYMENTS_* variables against the service
  verify <paymentId>  print the service's answer for one payment
  outcomes [--failed] list the outcome records of the app's store
  inbox-ddl [--dialect mysql] [--format typeorm|prisma|drizzle]
                      print the inbox table's DDL, or an ORM's migration of it
                      (exactly-once in the app's database)
  help [command]      print this help, or a command's

doctor, verify and outcomes read the PAYMENTS_* variables as the module does
(docs/cli.md). Run \`nestjs-payments <command> --help\` for a command's options.
`;

/** Usage of `sandbox`: the server, then its actions on a running one. */
export const SANDBOX_COMMAND_USAGE = `${SANDBOX_USAGE}\n${SANDBOX_ACTION_USAGE}`;

/** A command: runs with the arguments after its name, resolves to the exit code. */
type Command = (argv: readonly string[], io: CliIo) => Promise<number>;

const COMMANDS: Readonly<Record<string, { readonly run: Command; readonly usage: string }>> = {
  // The sandbox command parses its own name (it was once the only command).
  // Its actions (`sandbox pay <id>`) talk to a sandbox already running.
  sandbox: {
    run: async (argv, io) => {
      if (isSandboxAction(argv[0])) return sandboxActionCommand(argv, io);
      if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) {
        io.stdout.write(SANDBOX_COMMAND_USAGE);
        return 0;
      }
      return runSandboxCommand(['sandbox', ...argv], io);
    },
    usage: SANDBOX_COMMAND_USAGE,
  },
  doctor: { run: doctorCommand, usage: DOCTOR_USAGE },
  verify: { run: verifyCommand, usage: VERIFY_USAGE },
  outcomes: { run: outcomesCommand, usage: OUTCOMES_USAGE },
  'inbox-ddl': { run: inboxDdlCommand, usage: INBOX_DDL_USAGE },
};

/**
 * Runs the command line after the executable's name, e.g. `['doctor', '--probe']`.
 * @returns the exit code: 0 success, 1 failure or usage error, 2 a command's set-up error
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr.write(`nestjs-payments: missing command\n\n${CLI_USAGE}`);
    return 1;
  }
  if (name === 'help' || name === '--help' || name === '-h') {
    const topic = rest[0] === undefined ? undefined : COMMANDS[rest[0]];
    io.stdout.write(topic ? topic.usage : CLI_USAGE);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr.write(`nestjs-payments: unknown command: ${printable(name)}\n\n${CLI_USAGE}`);
    return 1;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(`nestjs-payments: ${printable(error.message)}\n\n${command.usage}`);
    return 1;
  }
}
