/** `nestjs-payments outcomes [--failed]`: the outcome records of the app's store, for on-call use. */
import { parseArgs } from 'node:util';
import type { OutcomeQuery, OutcomeRecord } from '../core/index.js';
import { CLI_STORE_ENV, QUIET_LOGGER, storeClientMissing, storeSources } from './cli.config.js';
import { CliUsageError, printable, type CliIo } from './cli.io.js';

/** Usage of `outcomes`. */
export const OUTCOMES_USAGE = `Usage: nestjs-payments outcomes [--failed] [--duplicates] [--limit <n>] [--json]

Lists the outcome records of the app's store (${CLI_STORE_ENV.redisUrl} or
${CLI_STORE_ENV.databaseUrl}), newest update first: payment, outcome, service
status, handlers, attempts, last error; for a duplicate (a second charge of a
paid order), the payment that settled the order and the refund (its state
when not refunded: retry, refused, unknown, failed). Reads only.

Options:
  --failed     only payments whose handlers failed (to retry or reconcile by hand)
  --duplicates only duplicates: second charges of orders another payment paid
  --limit <n>  at most n records, 1 to 10000 (default 200)
  --json       print the records as a JSON array
  -h, --help   print this help
`;

const PAGE = 100;

function line(record: OutcomeRecord): string {
  const parts = [
    record.updatedAt,
    record.paymentId,
    record.outcome,
    `status=${record.status}`,
    `handlers=${record.handlers}`,
    `attempts=${record.attempts}`,
    ...(record.amount !== undefined ? [`amount=${record.amount}`] : []),
    ...(record.developerTrackingId !== undefined ? [`tracking=${record.developerTrackingId}`] : []),
    ...(record.settledBy !== undefined ? [`settled-by=${record.settledBy}`] : []),
    ...(record.refund !== undefined ? [`refund=${record.refund.refundId}`] : []),
    ...(record.refundState !== undefined && record.refundState !== 'refunded'
      ? [`refund-state=${record.refundState}`]
      : []),
    ...(record.lastError !== undefined ? [`error=${JSON.stringify(record.lastError)}`] : []),
  ];
  return printable(parts.join('  '));
}

/**
 * Runs `outcomes` with its arguments (after the command name).
 * @returns 0 once listed, 1 when the store failed, 2 when no store is configured
 */
export async function outcomesCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: {
        failed: { type: 'boolean' },
        duplicates: { type: 'boolean' },
        limit: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(OUTCOMES_USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new CliUsageError(`unexpected argument: ${positionals[0]}`);
  const limit = values.limit === undefined ? 200 : /^[0-9]{1,5}$/.test(values.limit) ? Number(values.limit) : NaN;
  if (!(limit >= 1 && limit <= 10_000))
    throw new CliUsageError(`--limit must be an integer from 1 to 10000, got ${JSON.stringify(values.limit)}`);

  const sources = storeSources(io.env, QUIET_LOGGER);
  if (sources.length !== 1) {
    io.stderr.write(
      `nestjs-payments: outcomes reads the app's store: set ${sources.length === 0 ? 'one of' : 'only one of'} ${CLI_STORE_ENV.redisUrl} or ${CLI_STORE_ENV.databaseUrl} (the memory store lives inside the app's process)\n`,
    );
    return 2;
  }
  const [source] = sources;
  let store;
  try {
    store = await source.open();
    const records: OutcomeRecord[] = [];
    let cursor: string | undefined;
    do {
      const query: OutcomeQuery = {
        limit: Math.min(PAGE, limit - records.length),
        ...(values.failed ? { handlers: 'failed' as const } : {}),
        ...(values.duplicates ? { outcome: 'duplicate' as const } : {}),
        ...(cursor ? { cursor } : {}),
      };
      const page = await store.listOutcomes(query);
      records.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== undefined && records.length < limit);
    if (values.json) io.stdout.write(`${JSON.stringify(records, null, 2)}\n`);
    else if (records.length === 0)
      io.stdout.write(
        `No ${values.failed ? 'failed ' : ''}${values.duplicates ? 'duplicate ' : ''}outcome records in ${source.kind} at ${source.where}.\n`,
      );
    else
      io.stdout.write(
        `${records.map(line).join('\n')}\n${records.length} record(s)${cursor !== undefined ? ` (more: raise --limit)` : ''}.\n`,
      );
    return 0;
  } catch (error) {
    const missing = storeClientMissing(source, error);
    if (missing) {
      io.stderr.write(`nestjs-payments: ${printable(missing.message)}\n`);
      return 1;
    }
    io.stderr.write(
      `nestjs-payments: ${source.kind} at ${source.where}: ${printable(error instanceof Error ? error.message : error)}\n`,
    );
    return 1;
  } finally {
    await store?.close?.().catch(() => undefined);
  }
}
